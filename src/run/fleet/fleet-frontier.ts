import type { Logger } from "pino";
import { errorMessage } from "../../common/index.js";
import type { ExtractPlan } from "../../extract/index.js";
import {
	addDiscovered,
	addLanding,
	addListedPages,
	addProgress,
	type Fleet,
	type FleetLease,
	type FleetRun,
	type FleetTargetInput,
	type FreshPage,
	freshPages,
	insertWithinMaxPages,
	okTargetIds,
	type PagesRoom,
	readProgress,
} from "../../fleet/index.js";
import type { Target } from "../../job/index.js";
import type { FleetCrawl } from "./fleet-crawl.js";
import type { KeptPage } from "./fleet-leases.js";
import type { SitemapTaskReader, SitemapTaskStore } from "./fleet-sitemaps.js";
import { fromFleetLease } from "./fleet-targets.js";

export interface FleetFrontierDeps {
	readonly fleet: Fleet;
	readonly run: FleetRun;
	/** The crawl's `max_pages`: the fleet's, so the frontier never grows past it. */
	readonly maxPages: number | undefined;
	readonly plans: readonly ExtractPlan[];
	readonly log: Logger;
	/** `freshness` is on: a page's links are kept with its record, for a later run to follow while it is fresh. */
	readonly keepLinks?: boolean;
	/**
	 * `freshness` in a crawl: a link to a page fresh in the job's fleet runs, never to be fetched (its links
	 * kept, or none wanted at `max_depth`), takes no room under `max_pages`. @default null
	 */
	readonly freshness?: { readonly freshnessMs: number; readonly maxDepth: number } | null;
}

/**
 * A crawl job's side of a fleet worker: a settled page's links and a seed origin's sitemaps go to the
 * fleet's frontier (its targets table), within the crawl's `max_pages`. Does nothing until `use`.
 */
export class FleetFrontier {
	readonly #deps: FleetFrontierDeps;
	/** A crawl's links go to the fleet's frontier as their page settles. */
	#crawl: FleetCrawl | null = null;
	/** Where pages' redirects ended, noted and not yet kept with their records (`keepLinks`). */
	readonly #landings = new Map<string, string>();
	/** `sitemaps: true`: how this worker reads a seed origin's sitemaps when it claims that task. */
	#sitemapReader: SitemapTaskReader | null = null;

	constructor(deps: FleetFrontierDeps) {
		this.#deps = deps;
	}

	/** A crawl job: pages' links (and, with a reader, seed origins' sitemaps) go to the fleet's frontier. */
	use(crawl: FleetCrawl, sitemapReader: SitemapTaskReader | null): void {
		this.#crawl = crawl;
		this.#sitemapReader = sitemapReader;
	}

	/** Where a leased page's redirects ended, into the frontier under its lease; undefined for any other page. */
	noteLanding(lease: FleetLease): Promise<void> | undefined {
		const landing = this.#crawl?.takeLanding(lease.targetId);
		if (landing === undefined) return undefined;
		// Kept with the page's record: a later run that finds the page fresh notes it without fetching.
		if (this.#deps.keepLinks) this.#landings.set(lease.targetId, landing.url);
		return addLanding(this.#deps.fleet, lease, landing).then(
			() => undefined,
			// Not noted: the address may be fetched again under its own name, as if no redirect had led there.
			(error) =>
				this.#deps.log.warn(
					{ event: "fleet_landing_failed", url: landing.url, error: errorMessage(error) },
					"could not note where a page's redirects ended",
				),
		);
	}

	/**
	 * The links a leased page's crawl follows, into the frontier under its lease (before the page settles).
	 * Resolves to what to keep with its record (`keepLinks`: its links and where its redirects ended), else null.
	 */
	async addLinks(lease: FleetLease): Promise<KeptPage | null> {
		if (this.#crawl === null) return null;
		const { plans } = this.#deps;
		const page = fromFleetLease(lease, plans);
		const landing = this.#landings.get(lease.targetId) ?? null;
		this.#landings.delete(lease.targetId);
		const kept = this.#deps.keepLinks ? { links: this.#crawl.linksOf(lease.targetId), landing } : null;
		const links = await this.#crawl.take(page, plans);
		if (links.length > 0)
			await this.#withinMaxPages(await this.#notFetchedOk(links), (query, within) =>
				addDiscovered({ query }, lease, within),
			);
		return kept;
	}

	/**
	 * `freshness`: a fresh page's links as its last fetch kept them, followed as a fetched page's are, and
	 * where its redirects ended noted as fetched (as its fetch would).
	 */
	followFresh(target: Target, kept: FreshPage): void {
		this.#crawl?.pageFresh(target, kept.links, kept.landing);
	}

	/** `freshness`: a fresh page fetched again, no links of it kept. */
	refetchedForLinks(): void {
		this.#crawl?.refetchedForLinks();
	}

	/** Read the sitemaps a claimed task names; true when they are read (the task then settles done). */
	async readSitemaps(lease: FleetLease, seed: Target, origin: string): Promise<boolean> {
		if (this.#sitemapReader === null) return false;
		try {
			return await this.#sitemapReader(seed, origin, this.#deps.plans, this.#taskStore(lease));
		} catch (error) {
			// Back to the queue: the next holder goes on from the files noted read.
			this.#deps.log.warn(
				{ event: "fleet_sitemaps_failed", origin, error: errorMessage(error) },
				"could not read the sitemaps",
			);
			return false;
		}
	}

	/** A sitemap task's writes, each under its lease: journal lines on its row, listed pages into the frontier. */
	#taskStore(lease: FleetLease): SitemapTaskStore {
		const { fleet, maxPages } = this.#deps;
		return {
			progress: () => readProgress(fleet, lease),
			note: (steps) => addProgress(fleet, lease, steps),
			addPages: async (pages) => {
				const added = await this.#withinMaxPages(pages, (query, within) => addListedPages({ query }, lease, within));
				if (added === null) return null;
				return maxPages === undefined ? Number.POSITIVE_INFINITY : maxPages - (await this.#size(fleet.query));
			},
		};
	}

	/**
	 * A crawl's `max_pages` is the fleet's: the frontier never grows past it (`insertWithinMaxPages`, under
	 * the run's frontier lock). Pages fresh in the job's fleet runs (`freshness`) take no room.
	 */
	async #withinMaxPages<T>(
		links: readonly FleetTargetInput[],
		insert: (query: Fleet["query"], within: readonly FleetTargetInput[]) => Promise<T>,
	): Promise<T> {
		const { maxPages, fleet, run, freshness = null } = this.#deps;
		if (maxPages === undefined) return insert(fleet.query, links);
		const room = pagesRoom(maxPages, run.jobName, freshness);
		return fleet.transaction((query) =>
			insertWithinMaxPages(query, run.id, links, room, (within) => insert(query, within)),
		);
	}

	/** Pages the frontier holds now (a sitemap task, depth -1, is none): the count every insert keeps on the run's row. */
	async #size(query: Fleet["query"]): Promise<number> {
		const [row] = await query<{ n: number }>("SELECT pages::int AS n FROM runs WHERE id = $1", [this.#deps.run.id]);
		return row?.n ?? 0;
	}

	/** A retried crawl (`--retry-failed`) follows no link to a page whose newest fleet record is ok. */
	async #notFetchedOk(links: readonly FleetTargetInput[]): Promise<readonly FleetTargetInput[]> {
		const { fleet, run } = this.#deps;
		if (!run.retryFailed) return links;
		const ok = await okTargetIds(
			fleet,
			run.jobName,
			links.map((link) => link.targetId ?? link.url),
		);
		return links.filter((link) => !ok.has(link.targetId ?? link.url));
	}
}

/**
 * A crawl's `max_pages` room: with `freshness`, a page fresh in the job's fleet runs whose links were kept
 * (or none wanted, at `max_depth`) is never fetched and takes none, as a local crawl reads it from its store.
 */
export function pagesRoom(
	maxPages: number,
	jobName: string,
	freshness: { readonly freshnessMs: number; readonly maxDepth: number } | null,
): PagesRoom {
	if (freshness === null) return { maxPages, fresh: null };
	return {
		maxPages,
		fresh: async (query, pages) => {
			const keyOf = (page: FleetTargetInput) => page.urlKey ?? page.url;
			const idOf = (page: FleetTargetInput) => page.targetId ?? keyOf(page);
			const fresh = await freshPages({ query }, jobName, pages.map(idOf), freshness.freshnessMs);
			const found = new Map<string, boolean>();
			for (const page of pages) {
				const kept = fresh.get(idOf(page));
				if (kept !== undefined) found.set(keyOf(page), kept.links !== null || (page.depth ?? 0) >= freshness.maxDepth);
			}
			return found;
		},
	};
}
