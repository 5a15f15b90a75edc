import { setImmediate as tick } from "node:timers/promises";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { acquireSlot, claimTargets } from "../../src/fleet/index.js";
import { FleetLeases } from "../../src/run/fleet/fleet-leases.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";

const cluster = useCluster();

describe("a target settled outside the run's queue", () => {
	it("frees its slot at once, and a stop waits until its settlement is in the database", async () => {
		const { url, workers } = await runWithWorkers(await cluster(), targetsOn(1), 1);
		const { fleet, worker } = workers[0]!;
		let linksAdded: () => void = () => undefined;
		const addingLinks = new Promise<void>((resolve) => {
			linksAdded = resolve;
		});
		let freed = 0;
		const leases = new FleetLeases({
			fleet,
			worker,
			leaseMs: 60_000,
			clock: Date.now,
			sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
			log: pino({ level: "silent" }),
			// The settlement's first write (a crawled page's links) is held until the test lets it go.
			addLinks: () => addingLinks.then(() => null),
			forget: () => undefined,
			slotFreed: () => {
				freed += 1;
			},
			ceiling: () => null,
		});
		try {
			const slot = await acquireSlot(fleet, worker, 60_000);
			const [lease] = await claimTargets(fleet, worker, 1, 60_000);
			leases.hold(lease!, slot!, Date.now());
			leases.settleLater(lease!.targetId);
			// The slot is the next claim's now, before anything reached the database.
			expect(freed).toBe(1);
			expect(leases.size).toBe(0);
			let stopped = false;
			const stopping = leases.settleAll().then(() => {
				stopped = true;
			});
			for (let i = 0; i < 20; i++) await tick();
			expect(stopped).toBe(false);
			linksAdded();
			await stopping;
			// Released back to the queue (it had no record), in the database when the stop returned.
			const [row] = await queryDatabase<{ state: string; lease_owner: string | null }>(
				url,
				"SELECT state, lease_owner FROM scrapejob.targets",
			);
			expect(row).toEqual({ state: "queued", lease_owner: null });
		} finally {
			leases.stop();
		}
	});
});
