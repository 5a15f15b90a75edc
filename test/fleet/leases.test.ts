import { describe, expect, it } from "vitest";
import {
	addDiscovered,
	claimTargets,
	completeTarget,
	releaseTarget,
	renewLeases,
	reserveCredits,
	storeTaskId,
} from "../../src/fleet/index.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("leases and epoch fencing", () => {
	it("a worker whose lease lapsed writes nothing; the worker that took the target over completes it", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 2, { maxCredits: 100 });
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const [stale] = await claimTargets(a.fleet, a.worker, 1, 1000);
		expect(stale?.epoch).toBe(1);
		expect(await reserveCredits(a.fleet, stale!, 10)).toBe(true);
		// Leased: nobody else gets it while the lease runs.
		expect(await claimTargets(b.fleet, b.worker, 1, 60_000)).toEqual([]);
		await sleep(1100);
		// A stalled past its lease: B's claim returns the target to the queue and takes it, epoch 2.
		const [fresh] = await claimTargets(b.fleet, b.worker, 1, 60_000);
		expect(fresh).toMatchObject({ targetId: stale!.targetId, epoch: 2, attempts: 2 });
		// Every write A makes now is refused.
		expect(await storeTaskId(a.fleet, stale!, "task-of-a")).toBe(false);
		expect(await reserveCredits(a.fleet, stale!, 10)).toBe(false);
		expect(await addDiscovered(a.fleet, stale!, [{ url: "https://host0.test/from-a" }])).toBe(0);
		expect(await completeTarget(a.fleet, stale!, { by: "a" }, 5)).toBe(false);
		expect(await releaseTarget(a.fleet, stale!, { retry: false, error: "late" })).toBe(false);
		expect(await storeTaskId(b.fleet, fresh!, "task-of-b")).toBe(true);
		expect(await completeTarget(b.fleet, fresh!, { by: "b" }, 5)).toBe(true);
		// Once only, even for the holder.
		expect(await completeTarget(b.fleet, fresh!, { by: "b again" }, 5)).toBe(false);
		const records = await a.fleet.query("SELECT epoch::int, record FROM records WHERE run_id = $1", [runId]);
		expect(records).toEqual([{ epoch: 2, record: { by: "b" } }]);
		const [target] = await a.fleet.query("SELECT state, task_id, credits::int FROM targets WHERE run_id = $1", [runId]);
		expect(target).toEqual({ state: "done", task_id: "task-of-b", credits: 5 });
		// A's reservation went back when its lease lapsed; only B's 5 credits are spent.
		const [run] = await a.fleet.query("SELECT spent::int, reserved::int FROM runs WHERE id = $1", [runId]);
		expect(run).toEqual({ spent: 5, reserved: 0 });
	});

	it("a task id stored by a worker that died is handed to the one that takes the target over", async () => {
		const { workers } = await runWithWorkers(await cluster(), targetsOn(1), 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const [first] = await claimTargets(a.fleet, a.worker, 1, 100);
		expect(first?.taskId).toBeNull();
		expect(await storeTaskId(a.fleet, first!, "task-1")).toBe(true);
		await sleep(200);
		const [second] = await claimTargets(b.fleet, b.worker, 1, 60_000);
		expect(second).toMatchObject({ epoch: 2, taskId: "task-1" });
	});

	it("renewing keeps a lease past its first term; a worker that stops renewing loses it", async () => {
		const { workers } = await runWithWorkers(await cluster(), targetsOn(1), 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const [lease] = await claimTargets(a.fleet, a.worker, 1, 1000);
		for (let i = 0; i < 5; i++) {
			await sleep(300);
			expect(await renewLeases(a.fleet, a.worker, 1000)).toHaveLength(1);
			expect(await claimTargets(b.fleet, b.worker, 1, 60_000)).toEqual([]);
		}
		await sleep(1100);
		const [taken] = await claimTargets(b.fleet, b.worker, 1, 60_000);
		expect(taken).toMatchObject({ targetId: lease!.targetId, epoch: 2 });
		// A's renewal no longer reaches it.
		expect(await renewLeases(a.fleet, a.worker, 300)).toHaveLength(0);
	});

	it("a renewal of the targets a worker keeps track of lets its other leases lapse (a settlement it gave up on)", async () => {
		const { workers } = await runWithWorkers(await cluster(), targetsOn(2), 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const [kept, forgotten] = await claimTargets(a.fleet, a.worker, 2, 1000);
		for (let i = 0; i < 4; i++) {
			await sleep(300);
			expect(await renewLeases(a.fleet, a.worker, 1000, [kept!.targetId])).toEqual([kept!.targetId]);
		}
		// A's renewals went on (it is alive), but not for the target it no longer holds: B takes that one.
		const taken = await claimTargets(b.fleet, b.worker, 2, 60_000);
		expect(taken).toEqual([expect.objectContaining({ targetId: forgotten!.targetId, epoch: 2 })]);
	});

	it("a target released for retry goes back to the queue; one failed for good does not", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(2), 1);
		const { fleet, worker } = workers[0]!;
		const [one, two] = await claimTargets(fleet, worker, 2, 60_000);
		expect(await releaseTarget(fleet, one!, { retry: true, error: "503", credits: 1 })).toBe(true);
		expect(await releaseTarget(fleet, two!, { retry: false, error: "404", credits: 1 })).toBe(true);
		const again = await claimTargets(fleet, worker, 2, 60_000);
		expect(again.map((lease) => [lease.targetId, lease.epoch, lease.attempts])).toEqual([[one!.targetId, 2, 2]]);
		const states = await fleet.query("SELECT state, error FROM targets WHERE run_id = $1 ORDER BY seq", [runId]);
		expect(states).toEqual([
			{ state: "leased", error: "503" },
			{ state: "failed", error: "404" },
		]);
	});
});
