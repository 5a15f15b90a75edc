import pino from "pino";
import { describe, expect, it } from "vitest";
import { endWorker, fleetStatus, renewLeases } from "../../src/fleet/index.js";
import { FleetLimitWatch } from "../../src/run/fleet/fleet-limit.js";
import { expectFleetRunDone, runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();
/** A worker's lease unless told otherwise (the CLI's default). */
const LEASE_MS = 30_000;

/** `FleetLimitWatch` of one worker, stopped when the test ends. */
function watchOf(fleet: Parameters<typeof renewLeases>[0], runId: number, leaseMs: number): FleetLimitWatch {
	return new FleetLimitWatch({
		fleet,
		runId,
		jobConcurrency: "auto",
		leaseMs,
		clock: Date.now,
		log: pino({ level: "silent" }),
	});
}

describe("a worker that ends leaves the fleet's live workers", () => {
	it("at once when it ends cleanly, and a beat after its end does not bring it back", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(2), 3, { concurrencyLimit: 6 });
		const [a, b, c] = workers as [(typeof workers)[0], (typeof workers)[0], (typeof workers)[0]];
		await endWorker(b.fleet, b.worker);
		// A renewal that was on its way when B stopped.
		await renewLeases(b.fleet, b.worker, LEASE_MS);
		const watch = watchOf(a.fleet, runId, LEASE_MS);
		try {
			await until(() => watch.limit !== null, "the watch's first poll");
			// A and C live, B ended: 6 over 2 (B counted again would make it 2).
			expect(watch.share(6)).toBe(3);
			const status = await fleetStatus(a.fleet, runId);
			const ended = status!.workers.find((worker) => worker.id === b.worker.id)!;
			expect(ended.endedAt).not.toBeNull();
			expect(ended.lastBeat.getTime()).toBeLessThanOrEqual(ended.endedAt!.getTime());
			expect(status!.workers.find((worker) => worker.id === a.worker.id)!.endedAt).toBeNull();
			await endWorker(c.fleet, c.worker);
			await until(() => watch.share(6) === 6, "A's share after C ended", LEASE_MS / 3);
		} finally {
			watch.stop();
		}
	});

	it("a worker that never says it ended (killed) still counts until its last beat is a lease old", async () => {
		const leaseMs = 1500;
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(2), 2, { concurrencyLimit: 2 });
		const [a] = workers as [(typeof workers)[0]];
		const watch = watchOf(a.fleet, runId, leaseMs);
		try {
			await until(() => watch.limit !== null, "the watch's first poll");
			const firstSeen = Date.now();
			expect(watch.share(2)).toBe(1);
			// A beats, B does not: B leaves the live workers a lease after its registration.
			await until(async () => {
				await renewLeases(a.fleet, a.worker, leaseMs);
				return watch.share(2) === 2;
			}, "B aged out");
			expect(Date.now() - firstSeen).toBeGreaterThan(leaseMs / 3);
		} finally {
			watch.stop();
		}
	});

	it("run --fleet: after one of two workers stops on SIGTERM, the other holds the whole limit well before a lease passes", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((_req, res) => setTimeout(() => html(res, "<p>page</p>"), 100));
		const dir = tempDir("scrapejob-fleet-end-");
		const lines = Array.from({ length: 200 }, (_, i) => `  - ${site.origin}/p/${i}`).join("\n");
		const file = writeJob(dir, "endjob", `name: endjob\ndefaults:\n  mode: request\ntargets:\n${lines}\n`);
		const start = () =>
			spawnCli(["run", file, "--quiet", "--json", "--fleet", url, "--fleet-run", "end"], service.env, dir);
		const workerIds = async () =>
			(await queryDatabase<{ id: string }>(url, "SELECT id FROM scrapejob.workers ORDER BY started_at, id")).map(
				(row) => row.id,
			);
		const slotsHeld = async (id: string) =>
			(
				await queryDatabase<{ n: number }>(
					url,
					`SELECT count(*)::int AS n FROM scrapejob.slots WHERE holder = '${id}' AND held_until > now()`,
				)
			)[0]!.n;
		const first = start();
		await until(async () => (await workerIds()).length === 1, "the first worker's row");
		const [a] = await workerIds();
		const second = start();
		await until(async () => (await workerIds()).length === 2, "the second worker's row");
		const b = (await workerIds()).find((id) => id !== a)!;
		// Two live workers: two slots each.
		await until(async () => (await slotsHeld(a!)) === 2 && (await slotsHeld(b)) === 2, "the limit shared in two");
		second.child.kill("SIGTERM");
		const stoppedAt = Date.now();
		// A third of a lease: without B's end, A's share stays 2 until B's last beat is a whole lease old.
		await until(async () => (await slotsHeld(a!)) === 4, "the first worker holding the whole limit", LEASE_MS / 3);
		expect(Date.now() - stoppedAt).toBeLessThan(LEASE_MS / 3);
		const [stopped, finished] = await Promise.all([second.done, first.done]);
		expect(stopped.code, stopped.stderr).toBe(130);
		expect(finished.code, finished.stderr).toBe(0);
		expectFleetRunDone(finished.stdout);
		const rows = await queryDatabase<{ id: string; ended: boolean }>(
			url,
			"SELECT id, ended_at IS NOT NULL AS ended FROM scrapejob.workers ORDER BY started_at, id",
		);
		expect(rows).toEqual([
			{ id: a, ended: true },
			{ id: b, ended: true },
		]);
		expect(service.emulator.ledger.maxInFlight()).toBeLessThanOrEqual(4);
		// `fleet status` says when each ended.
		const status = await spawnCli(["fleet", "status", file, "--fleet", url, "--json"], {}, dir).done;
		expect(status.code, status.stderr).toBe(0);
		const [run] = JSON.parse(status.stdout);
		for (const worker of run.workers) expect(worker.ended_at).toMatch(/^\d{4}-\d\d-\d\dT/);
		const text = await spawnCli(["fleet", "status", file, "--fleet", url], {}, dir).done;
		expect(text.stdout).toMatch(/ended \d+ s ago/);
	}, 60_000);
});
