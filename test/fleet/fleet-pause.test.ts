import pino from "pino";
import { describe, expect, it } from "vitest";
import { pauseFleet } from "../../src/fleet/index.js";
import type { Job } from "../../src/job/index.js";
import { createFleetCoordination } from "../../src/run/fleet/fleet-worker.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

describe("a 429 is the key's, not one worker's", () => {
	it("another worker's pause reaches this worker's gate within a quarter second, with what is left of it", async () => {
		const { workers } = await runWithWorkers(await cluster(), targetsOn(4, 1), 2);
		const [a, b] = workers;
		const job = { name: "job", targets: [], sources: [] } as unknown as Job;
		const coordination = createFleetCoordination(
			{ fleet: a!.fleet, run: a!.run, worker: a!.worker, maxCredits: null, leaseMs: 30_000 },
			{
				job,
				clock: Date.now,
				sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
				log: pino({ level: "silent" }),
			},
		);
		try {
			const paused = new Promise<number>((resolve) => coordination.watchPause(resolve));
			const asked = Date.now();
			// Worker B got a 429 with a 3 s reset.
			await pauseFleet(b!.fleet, b!.run.id, new Date(Date.now() + 3000));
			const ms = await paused;
			expect(Date.now() - asked).toBeLessThan(1000);
			expect(ms).toBeGreaterThan(1500);
			expect(ms).toBeLessThanOrEqual(3000);
		} finally {
			await coordination.close();
		}
	});
});
