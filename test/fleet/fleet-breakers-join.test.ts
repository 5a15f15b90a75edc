import { describe, expect, it } from "vitest";
import { claimTargets, parkTarget, recordBreakerOutcome, releaseDueProbe } from "../../src/fleet/index.js";
import { createFleetBreakers } from "../../src/run/fleet/fleet-breakers.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();
const SPEC = { window: 4, trip: 3, coolDownMs: 0, by: "host" } as const;

describe("a worker's view of the fleet's breakers", () => {
	it("a worker that starts while a probe is out admits that target as the probe, not as a plain fetch", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(3, 1), 1);
		const [a] = workers as [(typeof workers)[0]];
		for (let i = 0; i < 3; i++)
			await recordBreakerOutcome(a.fleet, runId, "host0.test", { bad: true, why: "captcha" }, SPEC);
		for (const lease of await claimTargets(a.fleet, a.worker, 3, 60_000))
			await parkTarget(a.fleet, lease, "host0.test", 1);
		// The cool-down passed: one parked target goes back to the queue as the probe.
		expect(await releaseDueProbe(a.fleet, runId, 0)).toBe(1);
		const [probe] = await claimTargets(a.fleet, a.worker, 3, 60_000);
		// A worker's breakers start and its first claim is admitted at once, before their rows were read:
		// taken for a plain fetch, the probe's answer would leave the row probing and a second probe would go.
		const breakers = createFleetBreakers(SPEC, {
			fleet: a.fleet,
			runId,
			track: () => undefined,
			park: () => undefined,
		});
		breakers.start();
		try {
			expect(await breakers.admit("host0.test", 1, probe!.targetId)).toBe("probe");
		} finally {
			await breakers.stop();
		}
	});
});
