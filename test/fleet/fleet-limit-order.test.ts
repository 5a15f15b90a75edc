import pino from "pino";
import { describe, expect, it } from "vitest";
import { readConcurrencyLimit, setConcurrencyLimit } from "../../src/fleet/index.js";
import type { Job } from "../../src/job/index.js";
import { createFleetCoordination } from "../../src/run/fleet/fleet-worker.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();

describe("the fleet's limit follows the newest answer, not the latest to arrive", () => {
	it("an answer to a fetch sent before another worker changed the limit does not undo the change", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(2, 1), 2, { concurrencyLimit: 5 });
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const job = { name: "job", targets: [], sources: [] } as unknown as Job;
		const coordination = createFleetCoordination(
			{ fleet: a.fleet, run: a.run, worker: a.worker, maxCredits: null, leaseMs: 30_000 },
			{
				job,
				clock: Date.now,
				sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
				log: pino({ level: "silent" }),
			},
		);
		try {
			await until(() => coordination.limit !== null);
			// A fetch of this worker leaves while the limit is 5...
			const sentEarly = Date.now();
			// ...the service lowers its limit, and another worker's answer brings the fleet's down to 2...
			expect(await setConcurrencyLimit(b.fleet, runId, 2, 0)).toEqual({ limit: 2, epoch: 1 });
			await until(() => coordination.limit?.epoch === 1);
			// ...and then this worker's answer arrives, written by the service before the change: it says 5.
			coordination.rateLimitSeen(5, sentEarly);
			// A fetch sent now is answered with the service's new limit, 3: that one counts.
			coordination.rateLimitSeen(3, Date.now());
		} finally {
			await coordination.close();
		}
		expect(await readConcurrencyLimit(b.fleet, runId)).toEqual({ limit: 3, epoch: 2 });
	});
});
