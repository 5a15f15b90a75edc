import pino from "pino";
import { describe, expect, it } from "vitest";
import { createTaskQueue } from "../../src/common/index.js";
import { type Fleet, FleetDatabaseError, loadingTakeOver } from "../../src/fleet/index.js";
import type { Job } from "../../src/job/index.js";
import type { ResultRecord } from "../../src/output/index.js";
import type { FleetFeedParts } from "../../src/run/fleet/fleet-feed.js";
import { createFleetCoordination } from "../../src/run/fleet/fleet-worker.js";
import { runWithWorkers, streamOf, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";

const cluster = useCluster();

describe("a claim the database fails", () => {
	it("keeps the slots it had taken: they go back when the worker ends, none stays held against the limit", async () => {
		const { url, workers } = await runWithWorkers(await cluster(), targetsOn(2, 1), 1, { concurrencyLimit: 3 });
		const { fleet, run, worker } = workers[0]!;
		// The first claim statement fails after the slots were taken (a dropped connection, a restart).
		let failures = 1;
		const failing: Fleet = Object.assign(Object.create(fleet) as Fleet, {
			query: ((text: string, values?: unknown[], name?: string) => {
				if (name === "fleet_claim" && failures-- > 0) return Promise.reject(new Error("connection lost"));
				return fleet.query(text, values, name);
			}) as Fleet["query"],
		});
		const job = { name: "job", targets: [], sources: [] } as unknown as Job;
		const coordination = createFleetCoordination(
			{ fleet: failing, run, worker, maxCredits: null, leaseMs: 30_000 },
			{
				job,
				clock: Date.now,
				sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
				log: pino({ level: "silent" }),
			},
		);
		let stopping = false;
		const listeners: Array<() => void> = [];
		const fetched: string[] = [];
		const parts = {
			queue: createTaskQueue({ concurrency: 3 }),
			concurrency: 3,
			// The second claim's targets reach the runner: the worker stops then.
			runner: {
				run: async (target: { id: string }) => {
					fetched.push(target.id);
					if (!stopping) {
						stopping = true;
						for (const listener of listeners) listener();
					}
				},
			},
			stops: {
				get stopping() {
					return stopping;
				},
				onStop: (listener: () => void) => listeners.push(listener),
				stop: () => undefined,
			},
		} as unknown as FleetFeedParts;
		try {
			await coordination.feed(parts);
		} finally {
			await coordination.close();
		}
		expect(failures).toBeLessThan(0);
		expect(fetched.length).toBeGreaterThan(0);
		const held = await queryDatabase<{ slot: number }>(
			url,
			"SELECT slot FROM scrapejob.slots WHERE holder IS NOT NULL AND held_until >= now()",
		);
		expect(held).toEqual([]);
		// (Slots lost by the failed claim stay held and renewed: with all three gone no claim gets one
		// again, and the feed never returns — this test then fails on its time limit.)
	}, 15_000);

	// After a claim that found nothing the worker reads the run's state: whether its loader died (while a
	// target is in flight), whether it is complete, and marks it so. The database can go down under any of
	// these as under the claim itself (a restart a moment after the claim).
	it.each([
		{
			check: "whether the loader died, a target in flight",
			refused: (_text: string, name?: string) => name === "fleet_take_over_loading",
			inFlight: true,
		},
		{ check: "whether the run is complete", refused: (text: string) => text.includes("AS complete"), inFlight: false },
		{
			check: "the run marked complete",
			refused: (text: string) => text.includes("SET state = 'complete'"),
			inFlight: false,
		},
	])(
		"the database going down under the check of $check after an empty claim: the worker claims again, the run completes (it ended on the error)",
		async ({ refused, inFlight }) => {
			const { url, workers } = await runWithWorkers(await cluster(), targetsOn(1), 1, { concurrencyLimit: 3 });
			const { fleet, run, worker } = workers[0]!;
			let refusals = 0;
			let outage: () => void = () => undefined;
			const refusedOnce = new Promise<void>((resolve) => {
				outage = resolve;
			});
			const failing: Fleet = Object.assign(Object.create(fleet) as Fleet, {
				query: ((text: string, values?: unknown[], name?: string) => {
					if (refusals === 0 && refused(text, name)) {
						refusals += 1;
						outage();
						const message = "PostgreSQL: terminating connection due to administrator command";
						return Promise.reject(new FleetDatabaseError(message, "57P01"));
					}
					return fleet.query(text, values, name);
				}) as Fleet["query"],
			});
			const job = { name: "job", targets: [], sources: [] } as unknown as Job;
			const coordination = createFleetCoordination(
				{
					fleet: failing,
					run,
					worker,
					maxCredits: null,
					leaseMs: 30_000,
					// As the CLI's worker has it (fleet-open.ts): a statement on the same database.
					takeOverLoading: loadingTakeOver(failing, worker, () => streamOf(targetsOn(1))),
				},
				{
					job,
					clock: Date.now,
					sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
					log: pino({ level: "silent" }),
				},
			);
			const fetched: string[] = [];
			const parts = {
				queue: createTaskQueue({ concurrency: 3 }),
				concurrency: 3,
				runner: {
					run: async (target: { id: string; url: string }) => {
						fetched.push(target.id);
						// The loader is asked about only while a target is held: this fetch lasts until it was refused.
						if (inFlight) await refusedOnce;
						// Its record, so that the target settles done.
						coordination.written({ id: target.id, url: target.url } as ResultRecord);
					},
				},
				stops: { stopping: false, onStop: () => undefined, stop: () => undefined },
			} as unknown as FleetFeedParts;
			try {
				await coordination.feed(parts);
			} finally {
				await coordination.close();
			}
			expect(refusals).toBe(1);
			expect(coordination.complete).toBe(true);
			expect(fetched).toHaveLength(1);
			const runs = await queryDatabase<{ state: string }>(url, "SELECT state FROM scrapejob.runs");
			expect(runs).toEqual([{ state: "complete" }]);
		},
		15_000,
	);
});
