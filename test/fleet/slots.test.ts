import { describe, expect, it } from "vitest";
import {
	acquireSlot,
	claimTargets,
	fleetStatus,
	pauseFleet,
	releaseSlot,
	renewLeases,
	setConcurrencyLimit,
} from "../../src/fleet/index.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("one concurrency limit for the fleet", () => {
	it("10 workers taking slots at once never hold more than the limit", async () => {
		const LIMIT = 4;
		const { workers } = await runWithWorkers(await cluster(), targetsOn(1), 10, { concurrencyLimit: LIMIT });
		let held = 0;
		let most = 0;
		let fetches = 0;
		await Promise.all(
			workers.map(async ({ fleet, worker }) => {
				for (let i = 0; i < 15; i++) {
					const slot = await acquireSlot(fleet, worker, 60_000);
					if (!slot) {
						await sleep(2);
						continue;
					}
					// Counted after the slot is ours and before it is given back: the count can only be high.
					held++;
					most = Math.max(most, held);
					fetches++;
					await sleep(5 + (i % 4) * 5);
					held--;
					expect(await releaseSlot(fleet, slot)).toBe(true);
				}
			}),
		);
		expect(fetches).toBeGreaterThan(LIMIT);
		expect(most).toBe(LIMIT);
	});

	it("a worker that stops renewing loses its slots once they lapse; its late release frees nothing", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 2, { concurrencyLimit: 2 });
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const first = await acquireSlot(a.fleet, a.worker, 1000);
		const second = await acquireSlot(a.fleet, a.worker, 1000);
		expect(first && second).toBeTruthy();
		expect(await acquireSlot(b.fleet, b.worker, 60_000)).toBeNull();
		expect((await fleetStatus(b.fleet, runId))?.inFlight).toBe(2);
		await sleep(1100);
		const taken = await acquireSlot(b.fleet, b.worker, 60_000);
		expect(taken?.slot).toBe(first!.slot);
		expect(await releaseSlot(a.fleet, first!)).toBe(false);
		expect(await acquireSlot(b.fleet, b.worker, 60_000)).not.toBeNull();
		expect(await acquireSlot(b.fleet, b.worker, 60_000)).toBeNull();
		// B's renewals keep its slots.
		expect(await renewLeases(b.fleet, b.worker, 60_000)).toHaveLength(0);
		expect((await fleetStatus(b.fleet, runId))?.inFlight).toBe(2);
	});

	it("a lowered limit hands out no slot above it; a raised one adds slots", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 1, { concurrencyLimit: 3 });
		const { fleet, worker } = workers[0]!;
		await setConcurrencyLimit(fleet, runId, 1);
		expect(await acquireSlot(fleet, worker, 60_000)).not.toBeNull();
		expect(await acquireSlot(fleet, worker, 60_000)).toBeNull();
		await setConcurrencyLimit(fleet, runId, 5);
		for (let i = 0; i < 4; i++) expect(await acquireSlot(fleet, worker, 60_000)).not.toBeNull();
		expect(await acquireSlot(fleet, worker, 60_000)).toBeNull();
	});

	it("a pause (a 429) stops every worker's claims and slots until it ends, and is never shortened", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(3), 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const [now] = await a.fleet.query<{ now: Date }>("SELECT now()");
		const until = new Date(now!.now.getTime() + 1500);
		await pauseFleet(a.fleet, runId, until);
		await pauseFleet(a.fleet, runId, new Date(now!.now.getTime() + 100));
		expect((await fleetStatus(b.fleet, runId))?.pausedUntil?.getTime()).toBe(until.getTime());
		expect(await claimTargets(b.fleet, b.worker, 1, 60_000)).toEqual([]);
		expect(await acquireSlot(b.fleet, b.worker, 60_000)).toBeNull();
		await sleep(1600);
		expect(await claimTargets(b.fleet, b.worker, 1, 60_000)).toHaveLength(1);
		expect(await acquireSlot(b.fleet, b.worker, 60_000)).not.toBeNull();
		expect((await fleetStatus(b.fleet, runId))?.pausedUntil).toBeNull();
	});
});
