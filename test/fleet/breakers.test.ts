import { describe, expect, it } from "vitest";
import {
	admitTarget,
	claimTargets,
	completeTarget,
	isComplete,
	onlyParkedLeft,
	openBreakers,
	parkTarget,
	recordBreakerOutcome,
	releaseDueProbe,
	settleProbe,
} from "../../src/fleet/index.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();
const SPEC = { window: 4, trip: 3 };
const bad = { bad: true, why: "block_signature: captcha" };

/** The fleet's breaker rows (docs/behaviour.md, "Breakers"), statement by statement, with two workers. */
describe("fleet breakers", () => {
	it("trip of window open a domain's row once; parked targets hold the run open; a lost probe is taken over; a useful probe unparks", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(6, 1), 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		// Two wrong outcomes: closed; the third opens it, and only that write says so.
		expect(await recordBreakerOutcome(a.fleet, runId, "host0.test", bad, SPEC)).toBeNull();
		expect(await recordBreakerOutcome(b.fleet, runId, "host0.test", { bad: false, why: "" }, SPEC)).toBeNull();
		expect(await recordBreakerOutcome(b.fleet, runId, "host0.test", bad, SPEC)).toBeNull();
		const reason = await recordBreakerOutcome(a.fleet, runId, "host0.test", bad, SPEC);
		expect(reason).toBe("3 of the last 4 charged fetches were useless or failed (last: block_signature: captcha)");
		// An answer of a fetch sent before it opened changes nothing.
		expect(await recordBreakerOutcome(b.fleet, runId, "host0.test", bad, SPEC)).toBeNull();

		// Every claimed target of the domain is parked while it cools down (an hour).
		const leases = await claimTargets(a.fleet, a.worker, 6, 60_000);
		expect(leases).toHaveLength(6);
		for (const lease of leases) {
			expect(await admitTarget(a.fleet, lease, "host0.test", 3_600_000)).toBe("park");
			expect(await parkTarget(a.fleet, lease, "host0.test", 2)).toBe(true);
		}
		expect(await isComplete(b.fleet, runId)).toBe(false);
		expect(await onlyParkedLeft(b.fleet, runId)).toBe(true);
		expect(await releaseDueProbe(b.fleet, runId, 3_600_000)).toBe(0);
		expect(await openBreakers(b.fleet, runId)).toMatchObject([
			{ domain: "host0.test", state: "open", reason, parked: 6, creditsSaved: 12 },
		]);

		// The cool-down passed: one parked target goes back as the probe, and only one. It is fetched: its
		// worst case is no longer saved.
		expect(await releaseDueProbe(b.fleet, runId, 0)).toBe(1);
		expect(await releaseDueProbe(a.fleet, runId, 0)).toBe(0);
		expect(await openBreakers(b.fleet, runId)).toMatchObject([
			{ domain: "host0.test", state: "probing", parked: 5, creditsSaved: 10 },
		]);
		const [probe] = await claimTargets(b.fleet, b.worker, 6, 60_000);
		expect(probe).toBeDefined();
		expect(await admitTarget(b.fleet, probe!, "host0.test", 0)).toBe("probe");
		// Its worker dies: the lease lapses, another worker claims it again and it is still the probe.
		await b.fleet.query("UPDATE targets SET lease_until = now() - interval '1 second' WHERE target_id = $1", [
			probe!.targetId,
		]);
		const [again] = await claimTargets(a.fleet, a.worker, 6, 60_000);
		expect(again?.targetId).toBe(probe!.targetId);
		expect(await admitTarget(a.fleet, again!, "host0.test", 0)).toBe("probe");
		// The first holder's late answer settles nothing: the probe is the new lease's.
		expect(await completeTarget(b.fleet, probe!, { late: true }, 1)).toBe(false);
		// A useful answer closes the row and puts the five parked targets back in the queue.
		expect(await completeTarget(a.fleet, again!, { ok: true }, 1)).toBe(true);
		expect(await settleProbe(a.fleet, runId, "host0.test", again!.targetId, { useful: true })).toBe(true);
		expect(await openBreakers(a.fleet, runId)).toEqual([]);
		const rest = await claimTargets(b.fleet, b.worker, 6, 60_000);
		expect(rest).toHaveLength(5);
		for (const lease of rest) expect(await admitTarget(b.fleet, lease, "host0.test", 0)).toBe("fetch");
	});

	it("a probe whose target ended without settling the row (its worker died between the two) is replaced by another parked target", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(3, 1), 1);
		const [a] = workers as [(typeof workers)[0]];
		for (let i = 0; i < 3; i++) await recordBreakerOutcome(a.fleet, runId, "host0.test", bad, SPEC);
		for (const lease of await claimTargets(a.fleet, a.worker, 3, 60_000))
			await parkTarget(a.fleet, lease, "host0.test", 1);
		expect(await releaseDueProbe(a.fleet, runId, 0)).toBe(1);
		const [probe] = await claimTargets(a.fleet, a.worker, 3, 60_000);
		expect(await admitTarget(a.fleet, probe!, "host0.test", 0)).toBe("probe");
		// Done, but the row still says probing: with nothing queued or leased, the next parked target probes.
		await completeTarget(a.fleet, probe!, { ok: false }, 1);
		expect(await releaseDueProbe(a.fleet, runId, 3_600_000)).toBe(1);
		const [next] = await claimTargets(a.fleet, a.worker, 3, 60_000);
		expect(next?.targetId).not.toBe(probe!.targetId);
		expect(await admitTarget(a.fleet, next!, "host0.test", 3_600_000)).toBe("probe");
		expect(
			await settleProbe(a.fleet, runId, "host0.test", next!.targetId, { useful: false, reason: "still blocked" }),
		).toBe(true);
		// Two parked targets went as probes: only the one still parked is saved.
		expect(await openBreakers(a.fleet, runId)).toMatchObject([
			{ state: "open", reason: "still blocked", parked: 1, creditsSaved: 1 },
		]);
	});
});
