import pino from "pino";
import { describe, expect, it } from "vitest";
import {
	acquireSlot,
	claimTargets,
	commitCredits,
	completeTarget,
	type Fleet,
	type FleetWorker,
	releaseCredits,
	releaseTarget,
	reserveCredits,
} from "../../src/fleet/index.js";
import { FleetBudget } from "../../src/run/fleet/fleet-budget.js";
import { FleetLeases } from "../../src/run/fleet/fleet-leases.js";
import { fleetFor, runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { startAnswerLosingProxy } from "../helpers/pg-proxy.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

/** One worker's leases, renewed for a minute, with nothing else of a worker around them. */
function leasesOf(fleet: Fleet, worker: FleetWorker): FleetLeases {
	return new FleetLeases({
		fleet,
		worker,
		leaseMs: 60_000,
		clock: Date.now,
		sleep: async () => undefined,
		log: pino({ level: "silent" }),
		ceiling: () => null,
		addLinks: async () => null,
		forget: () => undefined,
		slotFreed: () => undefined,
	});
}

describe("one budget for the fleet", () => {
	it("8 workers reserving at once never book or spend past max_credits", async () => {
		const MAX = 500;
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(400, 4), 8, { maxCredits: MAX });
		const monitor = workers[0]!.fleet;
		let highest = 0;
		let running = true;
		// Read the run's books while the workers reserve: spent + reserved must stay within the budget.
		const watching = (async () => {
			while (running) {
				const [row] = await monitor.query<{ booked: number }>(
					"SELECT (spent + reserved)::int AS booked FROM runs WHERE id = $1",
					[runId],
				);
				highest = Math.max(highest, row!.booked);
			}
		})();
		let refused = 0;
		await Promise.all(
			workers.map(async ({ fleet, worker }) => {
				for (;;) {
					const [lease] = await claimTargets(fleet, worker, 1, 60_000);
					if (!lease) return;
					// Worst case 7; the fetch costs 1 to 7.
					if (!(await reserveCredits(fleet, lease, 7))) {
						refused++;
						await releaseTarget(fleet, lease, { retry: false, error: "budget" });
						continue;
					}
					const cost = 1 + (Number(lease.targetId.split("/").pop()) % 7);
					expect(await completeTarget(fleet, lease, { cost }, cost)).toBe(true);
				}
			}),
		);
		running = false;
		await watching;
		const [run] = await monitor.query<{ spent: number; reserved: number }>(
			"SELECT spent::int, reserved::int FROM runs WHERE id = $1",
			[runId],
		);
		const [paid] = await monitor.query<{ sum: number }>(
			"SELECT coalesce(sum(credits), 0)::int AS sum FROM targets WHERE run_id = $1",
			[runId],
		);
		expect(refused).toBeGreaterThan(0);
		expect(highest).toBeLessThanOrEqual(MAX);
		expect(run!.reserved).toBe(0);
		expect(run!.spent).toBeLessThanOrEqual(MAX);
		// Close to the budget: a reservation was refused only when 7 more did not fit.
		expect(run!.spent).toBeGreaterThan(MAX - 7 * 8);
		expect(paid!.sum).toBe(run!.spent);
	});

	it("commit replaces a reservation with the real cost; release drops it", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 1, { maxCredits: 20 });
		const { fleet, worker } = workers[0]!;
		const [lease] = await claimTargets(fleet, worker, 1, 60_000);
		const books = async () =>
			(await fleet.query("SELECT spent::int, reserved::int FROM runs WHERE id = $1", [runId]))[0];
		expect(await reserveCredits(fleet, lease!, 15)).toBe(true);
		expect(await reserveCredits(fleet, lease!, 6)).toBe(false);
		expect(await books()).toEqual({ spent: 0, reserved: 15 });
		expect(await commitCredits(fleet, lease!, 4)).toBe(true);
		expect(await books()).toEqual({ spent: 4, reserved: 0 });
		expect(await reserveCredits(fleet, lease!, 16)).toBe(true);
		expect(await releaseCredits(fleet, lease!)).toBe(true);
		expect(await books()).toEqual({ spent: 4, reserved: 0 });
		expect(await reserveCredits(fleet, lease!, 10)).toBe(true);
		expect(await completeTarget(fleet, lease!, {}, 3)).toBe(true);
		expect(await books()).toEqual({ spent: 7, reserved: 0 });
	});
});

describe("a reservation whose answer is lost", () => {
	it("sent again through the outage is booked once: the statement committed, the connection dropped before its answer", async () => {
		const { url, workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 1, { maxCredits: 100 });
		const { fleet: direct, worker } = workers[0]!;
		// The worker's statements go through a relay that cuts the connection right after the server commits
		// the reservation: its answer never arrives, and the budget sends it again.
		const proxy = await startAnswerLosingProxy(url);
		const fleet = await fleetFor(proxy.url, { maxConnections: 1 });
		const [lease] = await claimTargets(fleet, worker, 1, 60_000);
		const slot = await acquireSlot(fleet, worker, 60_000);
		const leases = leasesOf(fleet, worker);
		try {
			leases.hold(lease!, slot!, Date.now());
			const budget = new FleetBudget({
				fleet,
				runId,
				maxCredits: 100,
				leaseMs: 60_000,
				clock: Date.now,
				sleep: async () => undefined,
				leases,
			});
			proxy.loseNextAnswer("fleet_reserve");
			// A re-fetch's reservation on the target's lease (its first fetch's is spent).
			expect(await budget.reserve(7, () => false, lease!.targetId)).toBe(true);
			await proxy.lost;
		} finally {
			leases.stop();
		}
		const [run] = await direct.query("SELECT spent::int, reserved::int FROM runs WHERE id = $1", [runId]);
		const [target] = await direct.query("SELECT reserved::int FROM targets WHERE run_id = $1", [runId]);
		expect({ run, target }).toEqual({ run: { spent: 0, reserved: 7 }, target: { reserved: 7 } });
		// Settled, the target gives back what it booked: the run's reservations come to nothing.
		expect(await completeTarget(direct, lease!, {}, 5)).toBe(true);
		const [after] = await direct.query("SELECT spent::int, reserved::int FROM runs WHERE id = $1", [runId]);
		expect(after).toEqual({ spent: 5, reserved: 0 });
	});

	it("a reservation that did not fit while another fetch held credits books once that fetch settles, even when it settles between the two looks", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(2), 1, { maxCredits: 10 });
		const { fleet: direct, worker } = workers[0]!;
		const [first, second] = await claimTargets(direct, worker, 2, 60_000);
		const slot = await acquireSlot(direct, worker, 60_000);
		// The first target's fetch holds 8 of the 10: the second's 6 does not fit until it settles.
		expect(await reserveCredits(direct, first!, 8)).toBe(true);
		// It settles (2 credits) right after the second's reservation was refused, before the budget reads
		// why: no reservation is left by then, yet 2 + 6 fits.
		let settled = false;
		const fleet: typeof direct = {
			...direct,
			query: async (text, values, name) => {
				const rows = await direct.query(text, values, name);
				if (name === "fleet_reserve" && rows.length === 0 && !settled) {
					settled = true;
					expect(await completeTarget(direct, first!, { status: "ok" }, 2)).toBe(true);
				}
				return rows as never;
			},
			transaction: (work) => direct.transaction(work),
			close: () => direct.close(),
		};
		const leases = leasesOf(fleet, worker);
		try {
			leases.hold(second!, slot!, Date.now());
			const budget = new FleetBudget({
				fleet,
				runId,
				maxCredits: 10,
				leaseMs: 60_000,
				clock: Date.now,
				sleep: async () => undefined,
				leases,
			});
			expect(await budget.reserve(6, () => false, second!.targetId)).toBe(true);
		} finally {
			leases.stop();
		}
		expect(settled).toBe(true);
		const [run] = await direct.query("SELECT spent::int, reserved::int FROM runs WHERE id = $1", [runId]);
		expect(run).toEqual({ spent: 2, reserved: 6 });
	});

	it("a token sent twice books once; another token books again", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(1), 1, { maxCredits: 20 });
		const { fleet, worker } = workers[0]!;
		const [lease] = await claimTargets(fleet, worker, 1, 60_000);
		const reserved = async () =>
			(await fleet.query<{ reserved: number }>("SELECT reserved::int FROM runs WHERE id = $1", [runId]))[0]!.reserved;
		expect(await reserveCredits(fleet, lease!, 6, "first")).toBe(true);
		expect(await reserveCredits(fleet, lease!, 6, "first")).toBe(true);
		expect(await reserved()).toBe(6);
		expect(await reserveCredits(fleet, lease!, 6, "second")).toBe(true);
		expect(await reserved()).toBe(12);
	});
});
