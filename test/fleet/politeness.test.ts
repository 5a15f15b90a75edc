import { describe, expect, it } from "vitest";
import {
	claimTargets,
	completeTarget,
	type FleetLease,
	fetchStarting,
	isComplete,
	setHostPoliteness,
} from "../../src/fleet/index.js";
import { runWithWorkers, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase } from "../helpers/postgres-cluster.js";

const cluster = useCluster();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Each worker claims, holds each target `holdMs`, completes it, until the run is complete. */
async function drain(
	workers: Awaited<ReturnType<typeof runWithWorkers>>["workers"],
	runId: number,
	holdMs: number,
	onClaim: (lease: FleetLease) => void = () => undefined,
	onDone: (lease: FleetLease) => void = () => undefined,
): Promise<FleetLease[]> {
	const claims: FleetLease[] = [];
	await Promise.all(
		workers.map(async ({ fleet, worker }) => {
			for (;;) {
				const batch = await claimTargets(fleet, worker, 5, 60_000);
				if (batch.length === 0) {
					if (await isComplete(fleet, runId)) return;
					await sleep(10);
					continue;
				}
				for (const lease of batch) onClaim(lease);
				claims.push(...batch);
				await Promise.all(
					batch.map(async (lease) => {
						await sleep(holdMs);
						onDone(lease);
						expect(await completeTarget(fleet, lease, {}, 1)).toBe(true);
					}),
				);
			}
		}),
	);
	return claims;
}

function closestStarts(claims: readonly FleetLease[]): Map<string, number> {
	const byHost = new Map<string, number[]>();
	for (const lease of claims) byHost.set(lease.host, [...(byHost.get(lease.host) ?? []), lease.claimedAt.getTime()]);
	const closest = new Map<string, number>();
	for (const [host, times] of byHost) {
		times.sort((a, b) => a - b);
		let least = Number.POSITIVE_INFINITY;
		for (let i = 1; i < times.length; i++) least = Math.min(least, times[i]! - times[i - 1]!);
		closest.set(host, least);
	}
	return closest;
}

describe("politeness held fleet-wide", () => {
	it("a delay runs from a fetch's start: a host's next claim waits until the claimed fetch has started, then a delay", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(3, 1), 2, { hostDelayMs: 150 });
		const [a, b] = workers;
		const [first] = await claimTargets(a!.fleet, a!.worker, 1, 60_000);
		expect(first).toBeDefined();
		// Past the delay, but A has not started its fetch yet (a worker busy, a slot awaited): no claim.
		await sleep(250);
		expect(await claimTargets(b!.fleet, b!.worker, 1, 60_000)).toHaveLength(0);
		// A starts now: the next claim comes a delay later, not before. Both on the database's clock (the one
		// that spaces them): this process's clock adds the round trips, which a loaded machine stretches.
		const [before] = await a!.fleet.query<{ now: Date }>("SELECT now()");
		expect(await fetchStarting(a!.fleet, first!)).toBe(true);
		let next: FleetLease[] = [];
		while (next.length === 0) {
			next = await claimTargets(b!.fleet, b!.worker, 1, 60_000);
			if (next.length === 0) await sleep(10);
		}
		// The start came after `before`, the claim at least 150 ms after the start (1 ms: dates in whole ms).
		expect(next[0]!.claimedAt.getTime() - before!.now.getTime()).toBeGreaterThanOrEqual(149);
		expect(await completeTarget(a!.fleet, first!, {}, 1)).toBe(true);
		expect(runId).toBeGreaterThan(0);
	});

	it("the settle of an earlier fetch does not let a claim past a claimed fetch that has not started; that target's own settle does", async () => {
		const { workers } = await runWithWorkers(await cluster(), targetsOn(3, 1), 3, { hostDelayMs: 150 });
		const [a, b, c] = workers;
		const [first] = await claimTargets(a!.fleet, a!.worker, 1, 60_000);
		expect(await fetchStarting(a!.fleet, first!)).toBe(true);
		let second: FleetLease[] = [];
		while (second.length === 0) {
			second = await claimTargets(b!.fleet, b!.worker, 1, 60_000);
			if (second.length === 0) await sleep(10);
		}
		// The first fetch settles after the second was claimed, before the second started.
		expect(await completeTarget(a!.fleet, first!, {}, 1)).toBe(true);
		await sleep(250);
		expect(await claimTargets(c!.fleet, c!.worker, 1, 60_000), "a claim came past a fetch not started").toHaveLength(0);
		// The second is given back unfetched (parked, budget): the host waits on it no more.
		expect(await completeTarget(b!.fleet, second[0]!, {}, 0)).toBe(true);
		expect(await claimTargets(c!.fleet, c!.worker, 1, 60_000)).toHaveLength(1);
	});

	it("4 workers never claim a host closer than its delay, Crawl-delay raising one host's", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(24, 3), 4, { hostDelayMs: 120 });
		await setHostPoliteness(workers[0]!.fleet, runId, "host2.test", { delayMs: 250 });
		const claims = await drain(workers, runId, 0);
		expect(claims).toHaveLength(24);
		const closest = closestStarts(claims);
		expect(closest.get("host0.test")).toBeGreaterThanOrEqual(120);
		expect(closest.get("host1.test")).toBeGreaterThanOrEqual(120);
		expect(closest.get("host2.test")).toBeGreaterThanOrEqual(250);
		// Not needlessly slow either: the three hosts are fetched side by side.
		expect(Math.min(...closest.values())).toBeLessThan(1000);
	});

	it("a host's concurrency holds across workers", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), targetsOn(30, 1), 4, { hostConcurrency: 2 });
		let held = 0;
		let most = 0;
		const claims = await drain(
			workers,
			runId,
			15,
			() => {
				held++;
				most = Math.max(most, held);
			},
			() => held--,
		);
		expect(claims).toHaveLength(30);
		expect(most).toBe(2);
	});

	it("a concurrency set on a host mid-run counts the fetches already out: a host without one keeps no count", async () => {
		const { url, workers, runId } = await runWithWorkers(await cluster(), targetsOn(6, 1), 1);
		const { fleet, worker } = workers[0]!;
		const out = await claimTargets(fleet, worker, 3, 60_000);
		expect(out).toHaveLength(3);
		await completeTarget(fleet, out[0]!, {}, 1);
		const inFlight = async () =>
			(await queryDatabase<{ in_flight: number }>(url, "SELECT in_flight FROM scrapejob.hosts"))[0]!.in_flight;
		expect(await inFlight()).toBe(0);
		// Two still out when the host gets a concurrency of 2: nothing more of it until one settles.
		await setHostPoliteness(fleet, runId, "host0.test", { delayMs: 0, maxInFlight: 2 });
		expect(await inFlight()).toBe(2);
		expect(await claimTargets(fleet, worker, 3, 60_000)).toHaveLength(0);
		await completeTarget(fleet, out[1]!, {}, 1);
		expect(await claimTargets(fleet, worker, 3, 60_000)).toHaveLength(1);
	});
});
