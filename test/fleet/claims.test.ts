import { describe, expect, it } from "vitest";
import { claimTargets, completeTarget, type FleetLease, isComplete } from "../../src/fleet/index.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

describe("claiming the frontier", () => {
	it("8 concurrent claimers never claim one target twice and finish all 5,000", async () => {
		const server = await cluster();
		const { workers, runId } = await runWithWorkers(server, targetsOn(5000, 3), 8, { concurrencyLimit: 50 });
		const claims: FleetLease[][] = workers.map(() => []);
		const started = performance.now();
		await Promise.all(
			workers.map(async ({ fleet, worker }, index) => {
				let idle = 0;
				while (idle < 20) {
					const batch = await claimTargets(fleet, worker, 10, 60_000);
					if (batch.length === 0) {
						if (await isComplete(fleet, runId)) return;
						idle++;
						await new Promise((resolve) => setTimeout(resolve, 5));
						continue;
					}
					idle = 0;
					claims[index]!.push(...batch);
					for (const lease of batch) {
						expect(await completeTarget(fleet, lease, { url: lease.url, by: index }, 1)).toBe(true);
					}
				}
			}),
		);
		const seconds = (performance.now() - started) / 1000;
		const all = claims.flat();
		console.info(
			`claimed and completed 5,000 targets with 8 workers in ${seconds.toFixed(2)} s (${Math.round(5000 / seconds)}/s)`,
		);
		expect(all.length).toBe(5000);
		expect(new Set(all.map((lease) => lease.targetId)).size).toBe(5000);
		// Every worker took part: the claim does not serialize them behind one another.
		expect(claims.every((mine) => mine.length > 0)).toBe(true);
		const fleet = workers[0]!.fleet;
		expect(await isComplete(fleet, runId)).toBe(true);
		const [counts] = await fleet.query<{ records: number; done: number; epochs: number }>(
			`SELECT (SELECT count(*)::int FROM records WHERE run_id = $1) AS records,
				(SELECT count(*)::int FROM targets WHERE run_id = $1 AND state = 'done') AS done,
				(SELECT max(lease_epoch)::int FROM targets WHERE run_id = $1) AS epochs`,
			[runId],
		);
		expect(counts).toEqual({ records: 5000, done: 5000, epochs: 1 });
		const [run] = await fleet.query<{ spent: string; reserved: string }>(
			"SELECT spent, reserved FROM runs WHERE id = $1",
			[runId],
		);
		expect(run).toEqual({ spent: "5000", reserved: "0" });
	});
});
