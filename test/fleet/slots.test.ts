import { describe, expect, it } from "vitest";
import {
	acquireSlot,
	acquireSlots,
	claimTargets,
	exchangeSlot,
	fleetStatus,
	pauseFleet,
	readConcurrencyLimit,
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
		expect(await setConcurrencyLimit(fleet, runId, 1, 0)).toEqual({ limit: 1, epoch: 1 });
		expect(await acquireSlot(fleet, worker, 60_000)).not.toBeNull();
		expect(await acquireSlot(fleet, worker, 60_000)).toBeNull();
		await setConcurrencyLimit(fleet, runId, 5, 1);
		for (let i = 0; i < 4; i++) expect(await acquireSlot(fleet, worker, 60_000)).not.toBeNull();
		expect(await acquireSlot(fleet, worker, 60_000)).toBeNull();
	});

	it("after the limit is lowered, the slots still held above it count: no slot is handed out until fewer than the limit are held", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 2, { concurrencyLimit: 4 });
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const held = (await acquireSlots(a.fleet, a.worker, 4, 60_000)).sort((x, y) => x.slot - y.slot);
		expect(held.map((slot) => slot.slot)).toEqual([0, 1, 2, 3]);
		await setConcurrencyLimit(a.fleet, runId, 2, 0);
		// Slot 0 comes free, but 1, 2 and 3 are in flight: three against a limit of two.
		await releaseSlot(a.fleet, held[0]!);
		expect(await acquireSlot(b.fleet, b.worker, 60_000)).toBeNull();
		await releaseSlot(a.fleet, held[3]!);
		expect(await acquireSlot(b.fleet, b.worker, 60_000)).toBeNull();
		// One in flight (slot 1; slot 2 done): one more may go.
		await releaseSlot(a.fleet, held[2]!);
		expect((await acquireSlots(b.fleet, b.worker, 3, 60_000)).map((slot) => slot.slot)).toEqual([0]);
		expect((await fleetStatus(b.fleet, runId))?.inFlight).toBe(2);
	});

	it("two targets on slots above a lowered limit exchange them for the two below it, neither waiting on the other", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 1, { concurrencyLimit: 4 });
		const { fleet, worker } = workers[0]!;
		const held = (await acquireSlots(fleet, worker, 4, 60_000)).sort((x, y) => x.slot - y.slot);
		await releaseSlot(fleet, held[0]!);
		await releaseSlot(fleet, held[1]!);
		await setConcurrencyLimit(fleet, runId, 2, 0);
		const first = await exchangeSlot(fleet, worker, held[2]!, 60_000);
		const second = await exchangeSlot(fleet, worker, held[3]!, 60_000);
		expect([first?.slot, second?.slot]).toEqual([0, 1]);
		// The ones given up are free, the limit held: nothing more for anyone.
		expect(await acquireSlot(fleet, worker, 60_000)).toBeNull();
		expect((await fleetStatus(fleet, runId))?.inFlight).toBe(2);
		// An exchange that finds no room changes nothing.
		expect(await exchangeSlot(fleet, worker, first!, 60_000)).toBeNull();
		expect(await releaseSlot(fleet, first!)).toBe(true);
	});

	it("a change asked from an older change of the limit is refused: a late answer never undoes a newer limit", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 2, { concurrencyLimit: 5 });
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		expect(await readConcurrencyLimit(a.fleet, runId)).toEqual({ limit: 5, epoch: 0 });
		// A's answer, sent under change 0, lowers the limit to 2.
		expect(await setConcurrencyLimit(a.fleet, runId, 2, 0)).toEqual({ limit: 2, epoch: 1 });
		// B's answer was also sent under change 0, and still says 5: it left the service before the change.
		expect(await setConcurrencyLimit(b.fleet, runId, 5, 0)).toBeNull();
		// Asking for the limit it already has changes nothing.
		expect(await setConcurrencyLimit(b.fleet, runId, 2, 1)).toBeNull();
		expect(await readConcurrencyLimit(b.fleet, runId)).toEqual({ limit: 2, epoch: 1 });
		// An answer sent under change 1 raises it again.
		expect(await setConcurrencyLimit(b.fleet, runId, 4, 1)).toEqual({ limit: 4, epoch: 2 });
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
