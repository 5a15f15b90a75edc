import pino from "pino";
import { describe, expect, it } from "vitest";
import { acquireSlot, acquireSlots, claimTargets, releaseSlot, setConcurrencyLimit } from "../../src/fleet/index.js";
import { FleetLeases } from "../../src/run/fleet/fleet-leases.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";

const cluster = useCluster();

describe("a held target's slot under a lowered limit", () => {
	it("is exchanged before its next fetch for one below the limit, once one comes free; the one above goes back", async () => {
		const { url, workers, runId } = await runWithWorkers(await cluster(), targetsOn(2, 1), 2, { concurrencyLimit: 3 });
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		let ceiling: number | null = null;
		const leases = new FleetLeases({
			fleet: a.fleet,
			worker: a.worker,
			leaseMs: 60_000,
			clock: Date.now,
			sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
			log: pino({ level: "silent" }),
			addLinks: async () => null,
			forget: () => undefined,
			slotFreed: () => undefined,
			ceiling: () => ceiling,
		});
		try {
			// A holds slot 2 for its target; B holds slot 0 (its own fetch).
			const [slot0, slot1, slot2] = await acquireSlots(a.fleet, a.worker, 3, 60_000);
			expect([slot0?.slot, slot1?.slot, slot2?.slot]).toEqual([0, 1, 2]);
			await releaseSlot(a.fleet, slot0!);
			await releaseSlot(a.fleet, slot1!);
			const held = await acquireSlot(b.fleet, b.worker, 60_000);
			expect(held?.slot).toBe(0);
			const [lease] = await claimTargets(a.fleet, a.worker, 1, 60_000);
			leases.hold(lease!, slot2!, Date.now());
			// The service lowered its limit to 2: slot 2 is above it; slot 1 is free, so the exchange is at once.
			await setConcurrencyLimit(a.fleet, runId, 2, 0);
			ceiling = 2;
			const stopping = () => false;
			await leases.slotBelow(lease!.targetId, stopping);
			expect(leases.get(lease!.targetId)?.slot.slot).toBe(1);
			// Lowered to 1 while B holds slot 0: the next fetch waits for it.
			await setConcurrencyLimit(a.fleet, runId, 1, 1);
			ceiling = 1;
			const exchanged = leases.slotBelow(lease!.targetId, stopping);
			expect(exchanged).toBeDefined();
			let done = false;
			void exchanged!.then(() => {
				done = true;
			});
			await new Promise((resolve) => setTimeout(resolve, 300));
			expect(done).toBe(false);
			await releaseSlot(b.fleet, held!);
			await exchanged;
			expect(leases.get(lease!.targetId)?.slot.slot).toBe(0);
			// A slot below the limit needs nothing: no promise, no statement.
			expect(leases.slotBelow(lease!.targetId, stopping)).toBeUndefined();
			const holders = await queryDatabase<{ slot: number; holder: string | null }>(
				url,
				"SELECT slot, holder FROM scrapejob.slots ORDER BY slot",
			);
			expect(holders.filter((row) => row.holder !== null)).toEqual([{ slot: 0, holder: a.worker.id }]);
		} finally {
			leases.stop();
		}
	});

	it("a claim with spare slots takes targets only for those still below the limit, whatever limit the worker last read", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(6), 1, { concurrencyLimit: 4 });
		const [a] = workers as [(typeof workers)[0]];
		// Four slots taken under a limit of 4, kept spare by the worker; another worker's answer lowers it to 2.
		const slots = await acquireSlots(a.fleet, a.worker, 4, 60_000);
		expect(slots.map((slot) => slot.slot).sort()).toEqual([0, 1, 2, 3]);
		await setConcurrencyLimit(a.fleet, runId, 2, 0);
		// Slots 2 and 3 are above it now: two targets, not four.
		const claimed = await claimTargets(a.fleet, a.worker, 4, 60_000, { slots: [0, 1, 2, 3] });
		expect(claimed).toHaveLength(2);
		// Only slots above the limit: nothing claimed, and the targets stay queued for slots below it.
		expect(await claimTargets(a.fleet, a.worker, 2, 60_000, { slots: [2, 3] })).toHaveLength(0);
		// Without slots named (a claim for slots just taken below the limit) the count is the claim's own.
		expect(await claimTargets(a.fleet, a.worker, 3, 60_000)).toHaveLength(3);
	});
});
