import { hash } from "node:crypto";
import {
	type Crawler,
	type CrawlSummary,
	createLinkScope,
	createRobots,
	normalizeUrl,
	type SitemapFetch,
} from "../../crawl/index.js";
import type { ExtractPlan } from "../../extract/index.js";
import type { FleetTargetInput } from "../../fleet/index.js";
import { createTargetKey, identityOptionsJson, type Job, streamTargetBatches, type Target } from "../../job/index.js";
import { readSitemapTask, type SitemapTaskReader } from "./fleet-sitemaps.js";
import { toFleetInput } from "./fleet-targets.js";
import type { FleetCoordination } from "./fleet-worker.js";

/** A crawl's seed as a fleet run loads it: depth 0, and a profile naming its fetch options. */
export function asCrawlSeed(target: Target): Target {
	return { ...target, crawl: { depth: 0, parent: null, profile: profileOf(target) } };
}

/** The options a crawled page is fetched with, as a short label (the local crawl's profile key). */
function profileOf(target: Target): string {
	return hash("sha256", identityOptionsJson(target.params), "hex").slice(0, 12);
}

export interface FleetCrawl extends Crawler {
	/**
	 * The links `page` found that the crawl follows — normalized, in scope, allowed by robots.txt — as
	 * the frontier stores them, one depth below it; forgotten here once taken.
	 */
	take(page: Target, plans: readonly ExtractPlan[]): Promise<FleetTargetInput[]>;
	/** The links `page` was read with (before `take`), kept with its record for a later run's freshness; null when none were read. */
	linksOf(pageId: string): readonly string[] | null;
	/**
	 * `freshness`: a fresh page's links as its last fetch kept them (null: none wanted, at `max_depth`),
	 * followed as a fetched page's are, and where its redirects ended noted as its fetch would have; the
	 * page is counted fresh, not fetched.
	 */
	pageFresh(target: Target, links: readonly string[] | null, landing: string | null): void;
	/** `freshness`: a fresh page is fetched again only because no links of it were kept. */
	refetchedForLinks(): void;
	/**
	 * Where `page`'s redirects ended, when elsewhere than its own address: fetched (and paid) as `page`, so
	 * the frontier notes it and no worker fetches it again under its own address, as a local crawl does.
	 * Forgotten here once taken.
	 */
	takeLanding(pageId: string): { readonly url: string; readonly targetId: string } | undefined;
	/**
	 * The URLs of `hrefs` the crawl follows from `page` (normalized, in scope, allowed by robots.txt), as
	 * the frontier stores them at `depth`, with `page`'s options. A sitemap's pages go through here too.
	 */
	follow(
		hrefs: Iterable<string>,
		page: Target,
		depth: number,
		plans: readonly ExtractPlan[],
	): Promise<FleetTargetInput[]>;
	/**
	 * `robots: obey`: the stored body of `origin`'s robots.txt as the rules read it (null: none; "stopped":
	 * not fetched), so the sitemap reader pays for it no second time; undefined without the rules.
	 */
	readonly robotsFile?: (origin: string, seed: Target) => Promise<string | null | "stopped">;
	/** Credits this worker's sitemap reading cost, for its summary. */
	addSitemapCredits(credits: number): void;
}

export interface FleetCrawlOptions {
	readonly job: Job & { crawl: NonNullable<Job["crawl"]> };
	/** The crawl's seeds: they set its scope (`host` / `domain`). */
	readonly seeds: readonly Target[];
	readonly runDir: string;
	/** robots.txt through the service (`robots: obey`). */
	readonly fetchSitemap: SitemapFetch;
	/** A host's robots.txt asks for a `Crawl-delay`: the fleet's politeness for it. */
	readonly onCrawlDelay: (host: string, delayMs: number) => void;
	readonly warn: (message: string) => void;
	readonly isStopping: () => boolean;
}

/**
 * A crawl's part in a fleet worker: the runner hands it each crawled page's links (`pageFetched`), the
 * worker takes the ones to follow (`take`) and adds them to the fleet's frontier before the page's record
 * settles, so the run cannot complete while a page that adds links is unsettled. The frontier itself
 * (each URL once, depth, max_pages) is PostgreSQL's, and so is each origin's robots.txt (fetched once per
 * fleet run, by the first worker that meets it).
 */
export function createFleetCrawl(options: FleetCrawlOptions): FleetCrawl {
	const spec = options.job.crawl;
	const scope = createLinkScope(spec.scope);
	for (const seed of options.seeds) {
		const url = normalizeUrl(seed.url);
		if (url !== null) scope.addSeed(new URL(url));
	}
	const robots =
		spec.robots === "obey"
			? createRobots({
					runDir: options.runDir,
					fetch: options.fetchSitemap,
					append: () => undefined,
					warn: options.warn,
				})
			: null;
	const found = new Map<string, readonly string[]>();
	/** Pages whose redirects ended elsewhere, by page id, until their lease takes the landing to the frontier. */
	const landings = new Map<string, { readonly url: string; readonly targetId: string }>();
	const delaysSent = new Set<string>();
	let pages = 0;
	let fresh = 0;
	let refetched = 0;
	let discovered = 0;
	let robotsDisallowed = 0;
	let sitemapCredits = 0;

	const inScope = (url: string): boolean => {
		if (!scope.allows(new URL(url))) return false;
		if (spec.include.length > 0 && !spec.include.some((pattern) => pattern.test(url))) return false;
		return !spec.exclude.some((pattern) => pattern.test(url));
	};

	/** robots.txt of `url`'s origin loaded (fetched once by this worker), and whether it allows `url`. */
	const allowed = async (url: string, page: Target): Promise<boolean | null> => {
		if (!robots) return true;
		let verdict = robots.allows(url);
		if (verdict === null) {
			const origin = new URL(url).origin;
			if (!(await robots.load(origin, page, page.crawl?.profile ?? profileOf(page)))) return null;
			const host = new URL(url).host;
			const delay = robots.crawlDelayMs(host);
			if (delay > 0 && !delaysSent.has(host)) {
				delaysSent.add(host);
				options.onCrawlDelay(host, Math.max(delay, options.job.perHostDelayMs ?? 0));
			}
			verdict = robots.allows(url);
		}
		return verdict !== false;
	};

	const follow = async (
		hrefs: Iterable<string>,
		page: Target,
		depth: number,
		plans: readonly ExtractPlan[],
	): Promise<FleetTargetInput[]> => {
		if (!page.crawl) return [];
		const optionsJson = identityOptionsJson(page.params);
		const seen = new Set<string>();
		const inputs: FleetTargetInput[] = [];
		// Every link, stopping or not: a page settles once its links are in, and nothing finds them again.
		for (const href of hrefs) {
			const url = normalizeUrl(href);
			if (url === null || seen.has(url) || !inScope(url)) continue;
			seen.add(url);
			const verdict = await allowed(url, page);
			// Its robots.txt not fetched (a stop): the page stays unsettled, and whoever fetches it again follows them.
			if (verdict === null)
				throw new Error(`the robots.txt of ${new URL(url).origin} was not read: links not followed`);
			if (!verdict) {
				robotsDisallowed += 1;
				continue;
			}
			const link: Target = {
				id: createTargetKey(url, optionsJson).id,
				url,
				// The frontier (a table other workers read) never holds URL credentials: a crawled page is
				// fetched without them (docs/guides/fleet.md, "Crawls in a fleet").
				params: { ...page.params, url },
				origin: page.origin,
				crawl: { depth, parent: depth === 0 ? null : page.id, profile: page.crawl.profile },
			};
			if (page.extract) link.extract = page.extract;
			inputs.push(toFleetInput(link, plans, url));
		}
		discovered += inputs.length;
		return inputs;
	};

	return {
		pageFetched(target, links, finalUrl) {
			const landed = finalUrl === undefined ? null : normalizeUrl(finalUrl);
			if (target.crawl && landed !== null && landed !== normalizeUrl(target.url))
				landings.set(target.id, {
					url: landed,
					targetId: createTargetKey(landed, identityOptionsJson(target.params)).id,
				});
			if (links === null || !target.crawl || target.crawl.depth >= spec.maxDepth) return;
			found.set(target.id, links);
		},
		linksOf: (pageId) => found.get(pageId) ?? null,
		pageFresh(target, links, landing) {
			fresh += 1;
			if (target.crawl && landing !== null && landing !== normalizeUrl(target.url))
				landings.set(target.id, {
					url: landing,
					targetId: createTargetKey(landing, identityOptionsJson(target.params)).id,
				});
			if (links === null || !target.crawl || target.crawl.depth >= spec.maxDepth) return;
			found.set(target.id, links);
		},
		refetchedForLinks() {
			refetched += 1;
		},
		takeLanding(pageId) {
			const landing = landings.get(pageId);
			if (landing !== undefined) landings.delete(pageId);
			return landing;
		},
		take(page, plans) {
			const links = found.get(page.id);
			found.delete(page.id);
			if (!links || !page.crawl) return Promise.resolve([]);
			return follow(links, page, page.crawl.depth + 1, plans);
		},
		follow: (hrefs, page, depth, plans) => follow(hrefs, page, depth, plans),
		...(robots
			? {
					robotsFile: async (origin: string, seed: Target) =>
						(await robots.load(origin, seed, seed.crawl?.profile ?? profileOf(seed)))
							? robots.bodyPath(origin)
							: ("stopped" as const),
				}
			: {}),
		addSitemapCredits(credits) {
			sitemapCredits += credits;
		},
		pageRecorded() {
			pages += 1;
		},
		summary: (): CrawlSummary => ({
			pages,
			discovered,
			max_depth: spec.maxDepth,
			max_pages: spec.maxPages,
			sitemap_credits: (robots?.credits ?? 0) + sitemapCredits,
			robots_disallowed: robotsDisallowed,
			fresh,
			refetched_for_links: refetched,
			stopped_by: null,
		}),
		// A worker's robots.txt and sitemap credits are its own session's: it reads back none of another's.
		sessionSitemapCredits: () => (robots?.credits ?? 0) + sitemapCredits,
		crawlDelayMs: (host) => robots?.crawlDelayMs(host) ?? 0,
		// The frontier is the fleet's: nothing of the local crawler's feed, journal or files.
		targets: () => {
			throw new Error("a fleet worker's targets come from its claims");
		},
		settled: () => undefined,
		wake: () => undefined,
		sync: () => undefined,
		close: () => undefined,
	};
}

/** A fleet worker's crawl for `job`, its scope set from the job's seeds, its links given to `fleet`. */
export async function fleetCrawlFor(
	job: Job & { crawl: NonNullable<Job["crawl"]> },
	fleet: FleetCoordination,
	options: Pick<FleetCrawlOptions, "runDir" | "fetchSitemap" | "warn" | "isStopping">,
): Promise<FleetCrawl> {
	const seeds: Target[] = [];
	for await (const batch of streamTargetBatches(job)) seeds.push(...batch);
	const crawl = createFleetCrawl({
		...options,
		// robots.txt read once per fleet run (the database keeps it for every worker).
		fetchSitemap: fleet.sharedRobots(options.fetchSitemap, options.isStopping),
		job,
		seeds,
		onCrawlDelay: fleet.crawlDelay,
	});
	const sitemaps: SitemapTaskReader | null = job.crawl.sitemaps
		? (seed, origin, plans, store) =>
				readSitemapTask({
					crawl,
					seed,
					origin,
					plans,
					store,
					runDir: options.runDir,
					// Paid once per file for the fleet: the task's lease, not the robots.txt table, makes it once.
					fetch: options.fetchSitemap,
					warn: options.warn,
					isStopping: options.isStopping,
				})
		: null;
	fleet.useCrawl(crawl, sitemaps);
	return crawl;
}
