import { describe, expect, it } from "vitest";
import {
	addDiscovered,
	addLanding,
	claimTargets,
	completeTarget,
	type Fleet,
	type FleetLease,
	type FleetTargetInput,
	type FleetWorker,
	finishFleetRun,
	insertWithinMaxPages,
	isComplete,
	openFleetRun,
} from "../../src/fleet/index.js";
import { fleetFor, runWithWorkers } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();
// Keyed by their URL, as a crawl's pages are (a redirect's landing is found by its address).
const on = (host: string, path: string): FleetTargetInput => ({ url: `https://${host}.test/${path}` });

/**
 * A page's links into the frontier within `maxPages`, one level below it, as a crawl worker adds them
 * before its page settles.
 */
function addLinks(fleet: Fleet, lease: FleetLease, links: readonly FleetTargetInput[], maxPages: number) {
	const below = links.map((link) => ({ ...link, depth: lease.depth + 1 }));
	return fleet.transaction((query) =>
		insertWithinMaxPages(query, lease.runId, below, { maxPages, fresh: null }, (within) =>
			addDiscovered({ query }, lease, within),
		),
	);
}

/**
 * Claim one page at a time until the run is complete, each settled with a record at once (no links):
 * the pages fetched, in claim order.
 */
async function fetchTheRest(fleet: Fleet, worker: FleetWorker, maxPages: number): Promise<string[]> {
	const fetched: string[] = [];
	for (;;) {
		const [lease] = await claimTargets(fleet, worker, 1, 60_000, { maxPages });
		if (!lease) {
			if (await isComplete(fleet, worker.runId)) return fetched;
			// A claim comes back empty only when the run is complete here: one worker, every page settled.
			throw new Error(`nothing claimed, the run not complete, after ${fetched.join(", ")}`);
		}
		fetched.push(lease.urlKey);
		expect(await completeTarget(fleet, lease, { url: lease.url }, 1)).toBe(true);
	}
}

describe("a fleet crawl's max_pages", () => {
	it("a queued page taken out as a redirect's landing after the full frontier turned a link away: the link takes its room, max_pages pages are fetched as locally", async () => {
		const maxPages = 4;
		const { workers, runId } = await runWithWorkers(await cluster(), [on("site", "s")], 2);
		const [a, b] = workers as [(typeof workers)[0], (typeof workers)[0]];
		const [seed] = await claimTargets(a.fleet, a.worker, 1, 60_000);
		// The seed links three pages: the frontier is full (4 of 4).
		expect(await addLinks(a.fleet, seed!, [on("site", "a"), on("site", "b"), on("site", "z")], maxPages)).toBe(3);
		expect(await completeTarget(a.fleet, seed!, {}, 1)).toBe(true);
		const [redirecting] = await claimTargets(a.fleet, a.worker, 1, 60_000);
		const [linking] = await claimTargets(b.fleet, b.worker, 1, 60_000);
		expect([redirecting!.urlKey, linking!.urlKey]).toEqual(["https://site.test/a", "https://site.test/b"]);
		// b links a new page while the frontier is full: no room for it now.
		await addLinks(b.fleet, linking!, [on("site", "c")], maxPages);
		expect(await completeTarget(b.fleet, linking!, {}, 1)).toBe(true);
		// a's redirects end at z, still queued and never claimed: fetched with a, z leaves the queue.
		expect(
			await addLanding(a.fleet, redirecting!, { url: "https://site.test/z", targetId: "https://site.test/z" }),
		).toBe(true);
		expect(await completeTarget(a.fleet, redirecting!, {}, 1)).toBe(true);
		// Nothing queued or leased, but room for the link turned away: a worker that looks before it claims
		// again does not end the run.
		expect(await isComplete(b.fleet, runId)).toBe(false);
		expect(await finishFleetRun(b.fleet, runId)).toBe(false);

		// A local crawl fetches s, a, b, then c (z counts as fetched with a): max_pages pages.
		expect(await fetchTheRest(a.fleet, a.worker, maxPages)).toEqual(["https://site.test/c"]);
		const [counts] = await a.fleet.query<{ records: number; pages: number }>(
			"SELECT (SELECT count(*)::int FROM records WHERE run_id = $1) AS records, pages::int FROM runs WHERE id = $1",
			[runId],
		);
		expect(counts).toEqual({ records: maxPages, pages: maxPages });
	});

	it("a page leaving the count as the last link is turned away: never a page past max_pages, and the one left waiting takes the room freed", async () => {
		const maxPages = 3;
		const { workers, runId } = await runWithWorkers(await cluster(), [on("site", "s")], 1);
		const { fleet, worker } = workers[0]!;
		const [seed] = await claimTargets(fleet, worker, 1, 60_000);
		expect(await addLinks(fleet, seed!, [on("site", "a"), on("site", "z")], maxPages)).toBe(2);
		// Two more links than room: both wait; only one may ever be fetched.
		await addLinks(fleet, seed!, [on("site", "d"), on("site", "e")], maxPages);
		expect(await completeTarget(fleet, seed!, {}, 1)).toBe(true);
		const [redirecting] = await claimTargets(fleet, worker, 1, 60_000);
		expect(await addLanding(fleet, redirecting!, { url: "https://site.test/z", targetId: "https://site.test/z" })).toBe(
			true,
		);
		expect(await completeTarget(fleet, redirecting!, {}, 1)).toBe(true);
		expect(await fetchTheRest(fleet, worker, maxPages)).toEqual(["https://site.test/d"]);
		const [run] = await fleet.query("SELECT pages::int FROM runs WHERE id = $1", [runId]);
		expect(run).toEqual({ pages: maxPages });
	});
});

describe("a fleet crawl's seeds across load batches", () => {
	it("links found while later batches of seeds still load take no room and wait: every seed is leased before any link, and max_pages holds the seeds as locally", async () => {
		const maxPages = 5;
		const url = await (await cluster()).createDatabase();
		const seeds = [on("a", "1"), on("a", "2"), on("b", "1"), on("b", "2")];
		let firstBatchIn: () => void = () => undefined;
		const firstBatch = new Promise<void>((resolve) => {
			firstBatchIn = resolve;
		});
		let nextBatch: () => void = () => undefined;
		const gate = new Promise<void>((resolve) => {
			nextBatch = resolve;
		});
		async function* source(): AsyncIterable<FleetTargetInput> {
			for (const [i, seed] of seeds.entries()) {
				// The third seed is asked for once the first batch (two) is in; it comes when the test says so.
				if (i === 2) {
					firstBatchIn();
					await gate;
				}
				yield seed;
			}
		}
		const loader = await fleetFor(url, { maxConnections: 2 });
		const loading = openFleetRun(loader, {
			jobName: "job",
			concurrencyLimit: 10,
			loadBatchSize: 2,
			source: () => Object.assign(source(), { room: { maxPages, fresh: null } }),
		});
		await firstBatch;
		const fleet = await fleetFor(url, { maxConnections: 2 });
		const joined = await openFleetRun(fleet, { jobName: "job", concurrencyLimit: 10, source: () => source() });
		if (joined.outcome === "complete" || joined.outcome === "changed") throw new Error("the run is not open");
		const { worker } = joined;
		// The first seed is fetched while the others load: its links (on a third host) are found now.
		const [first] = await claimTargets(fleet, worker, 1, 60_000, { maxPages });
		expect(first!.urlKey).toBe("https://a.test/1");
		await addLinks(fleet, first!, [on("c", "1"), on("c", "2")], maxPages);
		expect(await completeTarget(fleet, first!, {}, 1)).toBe(true);
		nextBatch();
		expect((await loading).outcome).toBe("opened");

		const fetched = ["https://a.test/1", ...(await fetchTheRest(fleet, worker, maxPages))];
		// A local crawl hands out its four seeds, then one link: the seeds first, max_pages pages in all.
		expect(new Set(fetched.slice(0, 4))).toEqual(new Set(seeds.map((seed) => seed.url)));
		expect(fetched).toHaveLength(maxPages);
		expect(fetched[4]).toMatch(/^https:\/\/c\.test\//);
	});
});
