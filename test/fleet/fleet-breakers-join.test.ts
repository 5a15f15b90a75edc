import pino from "pino";
import { describe, expect, it } from "vitest";
import { claimTargets, type Fleet, parkTarget, recordBreakerOutcome, releaseDueProbe } from "../../src/fleet/index.js";
import type { Job } from "../../src/job/index.js";
import { createFleetBreakers, type FleetBreakers } from "../../src/run/fleet/fleet-breakers.js";
import { createFleetCoordination } from "../../src/run/fleet/fleet-worker.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();
const SPEC = { window: 4, trip: 3, coolDownMs: 0, by: "host" } as const;

/** `fleet` whose transactions (the breakers' outcome writes) wait until `openGate()`: writes still on their way. */
function gateTransactions(fleet: Fleet): { gated: Fleet; openGate: () => void } {
	let openGate = () => {};
	const gate = new Promise<void>((resolve) => {
		openGate = resolve;
	});
	return { gated: { ...fleet, transaction: async (work) => gate.then(() => fleet.transaction(work)) }, openGate };
}

/**
 * host0's next target waits while the outcome is held at the gate (a round trip of the database later it
 * is still not admitted), and is parked once the outcome lands.
 */
async function expectParkedOnceLanded(breakers: FleetBreakers, fleet: Fleet, openGate: () => void): Promise<void> {
	let admitted: string | null = null;
	const next = Promise.resolve(breakers.admit("host0.test", 1, "t2")).then((admission) => {
		admitted = admission;
	});
	await fleet.query("SELECT 1");
	expect(admitted).toBeNull();
	openGate();
	await next;
	expect(admitted).toBe("park");
}

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

	it("a breaker opened on another worker reaches this one through its poll of the fleet's limit: one statement a poll", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(3, 1), 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		/** The names of the statements worker A sends (its queries outside transactions). */
		const sent: string[] = [];
		const counted: Fleet = {
			...a.fleet,
			query: (text, values, name) => {
				sent.push(name ?? text);
				return a.fleet.query(text, values, name);
			},
		};
		const coordination = createFleetCoordination(
			{ fleet: counted, run: a.run, worker: a.worker, maxCredits: null, leaseMs: 30_000 },
			{
				job: { name: "job", targets: [], sources: [] } as unknown as Job,
				clock: Date.now,
				sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
				log: pino({ level: "silent" }),
			},
		);
		try {
			const spec = { ...SPEC, coolDownMs: 60_000 };
			const breakers = coordination.useBreakers(spec, {});
			expect(await breakers.admit("host0.test", 1, "t")).toBe("fetch");
			// The breaker opens on worker B.
			for (let i = 0; i < 3; i++)
				await recordBreakerOutcome(b.fleet, runId, "host0.test", { bad: true, why: "captcha" }, spec);
			await until(async () => (await breakers.admit("host0.test", 1, "t")) === "park", "A parking host0's targets");
			const polls = () => sent.filter((name) => name === "fleet_watch_run").length;
			const seenAt = polls();
			await until(() => polls() >= seenAt + 2, "two more polls");
			// The watch list was read on its own once, when the breakers started; every poll since read it.
			expect(sent.filter((name) => name === "fleet_breakers_watch")).toHaveLength(1);
		} finally {
			await coordination.close();
		}
	});

	it("this worker's own outcome that trips the breaker is in its row before its next target of the domain is admitted", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(3, 1), 1);
		const [a] = workers as [(typeof workers)[0]];
		const spec = { ...SPEC, coolDownMs: 60_000 };
		for (let i = 0; i < 2; i++)
			await recordBreakerOutcome(a.fleet, runId, "host0.test", { bad: true, why: "captcha" }, spec);
		// The outcome writes (transactions) wait at a gate: a settlement still on its way when the slot is reused.
		const { gated, openGate } = gateTransactions(a.fleet);
		const breakers = createFleetBreakers(spec, { fleet: gated, runId, track: () => undefined, park: () => undefined });
		breakers.start();
		try {
			expect(await breakers.admit("host0.test", 1, "t1")).toBe("fetch");
			// The third wrong outcome of host0 (the trip) is settled; its write has not landed yet.
			breakers.settle("host0.test", { id: "t1", credits_used: 1, useful: false, useless_reason: "captcha" }, false);
			await expectParkedOnceLanded(breakers, a.fleet, openGate);
		} finally {
			await breakers.stop();
		}
	});

	it("a poll that read the rows before this worker's first wrong outcome of a domain landed does not let its next target through", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(3, 1), 1);
		const [a] = workers as [(typeof workers)[0]];
		// One wrong outcome trips it; the domain has no row yet, so no poll lists it.
		const spec = { window: 4, trip: 1, coolDownMs: 60_000, by: "host" } as const;
		const { gated, openGate } = gateTransactions(a.fleet);
		const breakers = createFleetBreakers(spec, { fleet: gated, runId, track: () => undefined, park: () => undefined });
		breakers.start();
		try {
			expect(await breakers.admit("host0.test", 1, "t1")).toBe("fetch");
			breakers.settle("host0.test", { id: "t1", credits_used: 1, useful: false, useless_reason: "captcha" }, false);
			// The worker's poll brings the rows as they were before the outcome landed: none.
			breakers.seen([]);
			await expectParkedOnceLanded(breakers, a.fleet, openGate);
		} finally {
			await breakers.stop();
		}
	});
});
