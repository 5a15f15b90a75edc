import {
	createSitemapReader,
	type FrontierEntry,
	isFrontierEntry,
	type SitemapBounds,
	type SitemapFetch,
} from "../../crawl/index.js";
import type { ExtractPlan } from "../../extract/index.js";
import type { FleetTargetInput } from "../../fleet/index.js";
import type { Target } from "../../job/index.js";
import type { FleetCrawl } from "./fleet-crawl.js";

/** Where a sitemap task's work goes: the fleet's database, under the task's lease. */
export interface SitemapTaskStore {
	/** What earlier holders of the task noted (its journal lines: files queued, read, read in part). */
	progress(): Promise<unknown[]>;
	/** Note journal lines for a holder taking over; false when the lease is no longer this worker's. */
	note(steps: readonly FrontierEntry[]): Promise<boolean>;
	/** Listed pages into the frontier; how many more `max_pages` leaves room for, null when the lease is lost. */
	addPages(pages: readonly FleetTargetInput[]): Promise<number | null>;
}

/** Reads a seed origin's sitemaps for the fleet (`readSitemapTask`, set up by fleet-crawl.ts); true when the task is done. */
export type SitemapTaskReader = (
	seed: Target,
	origin: string,
	plans: readonly ExtractPlan[],
	store: SitemapTaskStore,
) => Promise<boolean>;

export interface SitemapTaskOptions {
	readonly crawl: FleetCrawl;
	/** The seed whose options fetch the origin's robots.txt and sitemaps, and its pages'. */
	readonly seed: Target;
	readonly origin: string;
	readonly plans: readonly ExtractPlan[];
	readonly store: SitemapTaskStore;
	/** This worker's run folder: fetched bodies wait there until read. */
	readonly runDir: string;
	/** Through the service, paid (not the fleet's robots.txt table: a sitemap may be 50 MB). */
	readonly fetch: SitemapFetch;
	readonly warn: (message: string) => void;
	readonly isStopping: () => boolean;
	readonly bounds?: SitemapBounds;
}

/**
 * One seed origin's sitemaps, read for the whole fleet run by the worker holding its task: the local
 * crawl's reader (robots.txt `Sitemap:` lines, indexes, 50 files, each file's bounds), its journal lines
 * kept on the task's row instead of `frontier.jsonl`, its pages through the crawl's scope and robots.txt
 * into the frontier at depth 0. A worker taking the task over replays the lines: files read are not
 * fetched again, only one whose reading was cut short. True when the task is done.
 */
export async function readSitemapTask(options: SitemapTaskOptions): Promise<boolean> {
	const { crawl, seed, store, plans } = options;
	let room = true;
	let lost = false;
	/** Writes in journal order: a file is noted read only after the pages it lists are in. */
	let writes: Promise<void> = Promise.resolve();
	const later = (write: () => Promise<void>) => {
		writes = writes.then(() => (lost ? undefined : write()));
	};
	const reader = createSitemapReader({
		runDir: options.runDir,
		// One file's pages at most wait in memory: the next file is fetched once they are in.
		fetch: async (url, from, path) => {
			await writes;
			return options.fetch(url, from, path);
		},
		...(crawl.robotsFile ? { robotsFile: crawl.robotsFile } : {}),
		append(entries) {
			const pages = entries.filter((entry) => entry.d >= 0).map((entry) => entry.u);
			if (pages.length > 0)
				later(async () => {
					const left = await store.addPages(await crawl.follow(pages, seed, 0, plans));
					if (left === null) lost = true;
					else room = left > 0;
				});
			// Paid lines (-3) stay out: their bodies are on this worker's disk, a successor fetches again.
			const steps = entries.filter((entry) => entry.d === -1 || entry.d === -2 || entry.d === -4);
			if (steps.length > 0)
				later(async () => {
					if (!(await store.note(steps))) lost = true;
				});
		},
		// Scope, robots.txt and each URL once: the crawl's `follow` and the frontier's keys decide.
		pageFound: (href, profile) => ({ u: href, d: 0, p: null, k: profile }),
		isStopping: () => lost || options.isStopping(),
		hasRoom: () => room,
		// The room is known once the last file's pages are in: a file past max_pages is not fetched.
		appended: () => writes,
		warn: options.warn,
		...(options.bounds ? { bounds: options.bounds } : {}),
	});
	for (const step of await store.progress()) if (isFrontierEntry(step)) reader.remember(step);
	let read: Awaited<ReturnType<typeof reader.read>>;
	try {
		read = await reader.read(options.origin, seed, seed.crawl?.profile ?? "");
	} finally {
		crawl.addSitemapCredits(reader.credits);
		await writes;
	}
	return !lost && read !== "stopped";
}
