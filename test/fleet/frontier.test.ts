import { describe, expect, it } from "vitest";
import {
	addDiscovered,
	addLanding,
	claimTargets,
	completeTarget,
	type FleetLease,
	type FleetTargetInput,
	finishFleetRun,
	isComplete,
	openFleetRun,
	reapExpiredLeases,
	storeTaskId,
} from "../../src/fleet/index.js";
import { fleetFor, runWithWorkers, streamOf } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const page = (n: number): FleetTargetInput => ({ url: `https://site.test/${n}`, urlKey: `site.test/${n}` });

describe("the crawl's frontier", () => {
	it("4 workers crawling overlapping links add each URL once, depth by depth, and finish", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), [page(0)], 4);
		let added = 0;
		const claims: FleetLease[] = [];
		await Promise.all(
			workers.map(async ({ fleet, worker }) => {
				for (;;) {
					const [lease] = await claimTargets(fleet, worker, 1, 60_000);
					if (!lease) {
						if (await isComplete(fleet, runId)) return;
						await sleep(5);
						continue;
					}
					claims.push(lease);
					const n = Number(lease.url.split("/").pop());
					// Page n links to 8 pages around 3n: neighbours share most of their links.
					if (lease.depth < 3) {
						// In an order of their own for each page, so that workers insert overlapping keys in different orders.
						const links = Array.from({ length: 8 }, (_, k) => page((3 * n + ((k * 5 + n) % 8)) % 60));
						const fresh = await addDiscovered(fleet, lease, links);
						added += fresh;
					}
					expect(await completeTarget(fleet, lease, { n }, 1)).toBe(true);
				}
			}),
		);
		const fleet = workers[0]!.fleet;
		const targets = await fleet.query<{ url_key: string; depth: number; parent: string | null }>(
			"SELECT url_key, depth, parent FROM targets WHERE run_id = $1",
			[runId],
		);
		expect(new Set(targets.map((target) => target.url_key)).size).toBe(targets.length);
		expect(added).toBe(targets.length - 1);
		expect(claims).toHaveLength(targets.length);
		expect(new Set(claims.map((lease) => lease.targetId)).size).toBe(targets.length);
		// Depth-exact: each page one deeper than the page that first found it.
		const byKey = new Map(targets.map((target) => [target.url_key, target]));
		for (const target of targets) {
			if (target.parent === null) expect(target.depth).toBe(0);
			else expect(target.depth).toBe(byKey.get(target.parent)!.depth + 1);
		}
		expect(Math.max(...targets.map((target) => target.depth))).toBe(3);
		expect(await finishFleetRun(fleet, runId)).toBe(true);
	});

	it("8 workers adding the same links at once, each in its own order: each link enters once, no statement fails", async () => {
		const seeds = Array.from({ length: 8 }, (_, i) => page(50_000 + i));
		const { workers } = await runWithWorkers(await cluster(), seeds, 8);
		// One page each (a claim that finds the host's row taken by another claimer comes back empty: retry).
		const pages: FleetLease[][] = [];
		for (const { fleet, worker } of workers) pages.push(await claimTargets(fleet, worker, 1, 60_000));
		let total = 0;
		for (let round = 0; round < 4; round++) {
			const pool = Array.from({ length: 1000 }, (_, i) => page(round * 1000 + i));
			const added = await Promise.all(
				workers.map(({ fleet }, w) => {
					// Each worker its own order of the same 1,000 links.
					const mine = pool
						.map((link, i) => ({ link, rank: (i * (2 * w + 7)) % 1009 }))
						.sort((a, b) => a.rank - b.rank);
					return addDiscovered(
						fleet,
						pages[w]![0]!,
						mine.map(({ link }) => link),
					);
				}),
			);
			total += added.reduce((sum, n) => sum + n, 0);
		}
		expect(total).toBe(4000);
	});

	it("a queued page found again shallower takes the shallower depth and finder; a deeper find changes nothing; claims go level by level", async () => {
		const { workers } = await runWithWorkers(await cluster(), [page(0)], 1);
		const { fleet, worker } = workers[0]!;
		const [seed] = await claimTargets(fleet, worker, 1, 60_000);
		// First found three levels down (a slow path), then from the seed itself.
		expect(
			await addDiscovered(fleet, seed!, [
				{ ...page(7), depth: 3 },
				{ ...page(8), depth: 2 },
			]),
		).toBe(2);
		expect(await addDiscovered(fleet, seed!, [page(7)])).toBe(0);
		expect(await addDiscovered(fleet, seed!, [{ ...page(8), depth: 4 }])).toBe(0);
		const rows = await fleet.query<{ url_key: string; depth: number; parent: string | null }>(
			"SELECT url_key, depth, parent FROM targets WHERE url_key IN ('site.test/7', 'site.test/8') ORDER BY url_key",
		);
		expect(rows).toEqual([
			{ url_key: "site.test/7", depth: 1, parent: seed!.targetId },
			{ url_key: "site.test/8", depth: 2, parent: seed!.targetId },
		]);
		// The seed (depth 0) unsettled: depth 1 may be claimed, depth 2 not yet.
		const first = await claimTargets(fleet, worker, 5, 60_000);
		expect(first.map((lease) => lease.urlKey)).toEqual(["site.test/7"]);
	});

	it("links found while the loader streams the same keys in: no two writers wait on each other in a cycle, and the run's page count is exact", async () => {
		const url = await (await cluster()).createDatabase();
		const seeds = Array.from({ length: 4000 }, (_, i) => page(i));
		let firstBatch: () => void = () => undefined;
		const loaded = new Promise<void>((resolve) => {
			firstBatch = resolve;
		});
		async function* source(): AsyncIterable<FleetTargetInput> {
			for (const [i, seed] of seeds.entries()) {
				// Item 100 is asked for once the first batch is in: finders can claim from here on.
				if (i === 100) firstBatch();
				yield seed;
			}
		}
		const loader = await fleetFor(url, { maxConnections: 2 });
		const loading = openFleetRun(loader, { jobName: "job", concurrencyLimit: 10, loadBatchSize: 100, source });
		await loaded;
		const finders = [];
		for (let i = 0; i < 4; i++) {
			const fleet = await fleetFor(url, { maxConnections: 2 });
			const opened = await openFleetRun(fleet, { jobName: "job", concurrencyLimit: 10, source: () => streamOf([]) });
			if (opened.outcome === "complete" || opened.outcome === "changed") throw new Error("the run is not open");
			const [lease] = await claimTargets(fleet, opened.worker, 1, 60_000);
			finders.push({ fleet, lease: lease! });
		}
		let done = false;
		const finding = Promise.all(
			finders.map(async ({ fleet, lease }, f) => {
				// Each finder's links run ahead of the loader, over keys it is about to write.
				for (let round = 0; !done; round++) {
					const from = (round * 300 + f * 75) % 4000;
					await addDiscovered(
						fleet,
						lease,
						Array.from({ length: 300 }, (_, k) => page(from + k)),
					);
				}
			}),
		);
		const opened = await loading.finally(() => {
			done = true;
		});
		await finding;
		expect(opened.outcome).toBe("opened");
		const [counts] = await loader.query<{ counted: number; pages: number }>(
			"SELECT r.pages::int AS counted, (SELECT count(*)::int FROM targets t WHERE t.run_id = r.id AND t.depth >= 0) AS pages FROM runs r",
		);
		expect(counts!.pages).toBeGreaterThanOrEqual(4000);
		expect(counts!.counted).toBe(counts!.pages);
	}, 60_000);

	it("isComplete holds while a leased page may still add links, and is one query over the run", async () => {
		const { workers, runId } = await runWithWorkers(await cluster(), [page(0)], 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const [seed] = await claimTargets(a.fleet, a.worker, 1, 60_000);
		// Nothing queued, but the seed is leased: not complete.
		expect(await isComplete(b.fleet, runId)).toBe(false);
		expect(await finishFleetRun(b.fleet, runId)).toBe(false);
		expect(await addDiscovered(a.fleet, seed!, [page(1), page(0)])).toBe(1);
		expect(await completeTarget(a.fleet, seed!, {}, 1)).toBe(true);
		expect(await isComplete(b.fleet, runId)).toBe(false);
		const [child] = await claimTargets(b.fleet, b.worker, 1, 60_000);
		expect(child).toMatchObject({ url: "https://site.test/1", depth: 1, parent: "site.test/0" });
		expect(await isComplete(a.fleet, runId)).toBe(false);
		expect(await completeTarget(b.fleet, child!, {}, 1)).toBe(true);
		expect(await isComplete(a.fleet, runId)).toBe(true);
		expect(await finishFleetRun(a.fleet, runId)).toBe(true);
		const [run] = await a.fleet.query("SELECT state FROM runs WHERE id = $1", [runId]);
		expect(run).toEqual({ state: "complete" });
	});

	it("a redirect landing on a queued page whose earlier holder may have sent it leaves it queued and counted: its room is not given to another page, and its task is polled", async () => {
		// Keyed by their URL, as a crawl's pages are (a landing is found by its address).
		const pages = [0, 1].map((n) => ({ url: `https://site.test/${n}` }));
		const { workers, runId } = await runWithWorkers(await cluster(), pages, 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const [redirecting] = await claimTargets(a.fleet, a.worker, 1, 60_000);
		// page 1's holder sent it (its task id stored) and died: its lease lapses, it goes back to the queue.
		const [sent] = await claimTargets(b.fleet, b.worker, 1, 100);
		expect(await storeTaskId(b.fleet, sent!, "task-1")).toBe(true);
		await until(
			async () =>
				(await b.fleet.query("SELECT 1 FROM targets WHERE target_id = $1 AND lease_until < now()", [sent!.targetId]))
					.length === 1,
			"page 1's lease to lapse",
		);
		expect(await reapExpiredLeases(b.fleet, runId)).toBe(1);
		// Page 0's redirects end at page 1: its fetch was paid, and so may page 1's have been.
		expect(await addLanding(a.fleet, redirecting!, { url: sent!.url, targetId: sent!.targetId })).toBe(false);
		const rows = await a.fleet.query<{ state: string; depth: number; task_id: string | null; pages: number }>(
			"SELECT t.state, t.depth, t.task_id, r.pages::int AS pages FROM targets t JOIN runs r ON r.id = t.run_id WHERE t.target_id = $1",
			[sent!.targetId],
		);
		expect(rows).toEqual([{ state: "queued", depth: 0, task_id: "task-1", pages: 2 }]);
		// Whoever claims it next polls the task already paid for rather than fetching it again.
		const [again] = await claimTargets(b.fleet, b.worker, 1, 60_000);
		expect(again).toMatchObject({ targetId: sent!.targetId, taskId: "task-1" });
	}, 30_000);
});
