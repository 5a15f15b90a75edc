import { describe, expect, it } from "vitest";
import {
	acquireSlot,
	claimTargets,
	completeTarget,
	fleetStatus,
	pauseFleet,
	releaseTarget,
	renewLeases,
	reserveCredits,
} from "../../src/fleet/index.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

describe("fleet status", () => {
	it("counts targets by state, lists workers with their last beat, in flight against the limit, credits, pause", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(6, 2), 2, {
			maxCredits: 50,
			concurrencyLimit: 3,
		});
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const leases = await claimTargets(a.fleet, a.worker, 3, 60_000);
		expect(leases).toHaveLength(3);
		await completeTarget(a.fleet, leases[0]!, {}, 4);
		await releaseTarget(a.fleet, leases[1]!, { retry: false, error: "404", credits: 1 });
		await reserveCredits(a.fleet, leases[2]!, 7);
		await acquireSlot(a.fleet, a.worker, 60_000);
		const before = await fleetStatus(b.fleet, runId);
		await renewLeases(b.fleet, b.worker, 60_000);
		const [now] = await b.fleet.query<{ now: Date }>("SELECT now()");
		await pauseFleet(b.fleet, runId, new Date(now!.now.getTime() + 60_000));
		const status = await fleetStatus(b.fleet, runId);
		expect(status).toMatchObject({
			run: { id: runId, jobName: "job", state: "running" },
			targets: { queued: 3, leased: 1, done: 1, failed: 1, parked: 0 },
			inFlight: 1,
			concurrencyLimit: 3,
			credits: { spent: 5, reserved: 7, max: 50 },
		});
		expect(status!.pausedUntil?.getTime()).toBe(now!.now.getTime() + 60_000);
		expect(status!.workers.map((worker) => worker.id)).toEqual([a.worker.id, b.worker.id]);
		expect(status!.workers[0]).toMatchObject({ pid: process.pid });
		// B's renewal is its heartbeat.
		expect(status!.workers[1]!.lastBeat.getTime()).toBeGreaterThan(before!.workers[1]!.lastBeat.getTime());
		expect(await fleetStatus(b.fleet, runId + 1000)).toBeNull();
	});
});
