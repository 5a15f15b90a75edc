import { existsSync } from "node:fs";
import { join } from "node:path";
import { closeEach, createUrlKeys, jsonlLines, parseJsonLine, type UrlKeys } from "../common/index.js";
import { type CrawlSpec, createTargetKey, type Job, type RetryCrawl, shardOf, type Target } from "../job/index.js";
import { DepthIndex } from "./depth-index.js";
import { CHARGED_UNPAID, FRONTIER_FILE, type FrontierEntry, isFrontierEntry } from "./frontier-file.js";
import { createLinkScope, type LinkScope } from "./link-scope.js";
import { normalizeUrl } from "./normalize-url.js";
import { OutstandingPages } from "./outstanding-pages.js";
import { createRobots, ROBOTS_PAID, type Robots } from "./robots.js";
import { SeedProfiles } from "./seed-profiles.js";
import type { ShardInbox } from "./shard-inbox.js";
import type { SitemapBounds } from "./sitemap-stream.js";
import { createSitemapReader, SITEMAP_PAID, type SitemapFetch } from "./sitemaps.js";

/** What a crawl adds to summary.json. */
export interface CrawlSummary {
	/** Pages fetched (records), seeds included, earlier sessions included. */
	pages: number;
	/** Distinct URLs known to the crawl: seeds and discovered links in scope. */
	discovered: number;
	max_depth: number;
	max_pages: number;
	/** Credits the robots.txt and sitemap fetches cost (`sitemaps: true`, `robots: obey`), every session included. */
	sitemap_credits: number;
	/** `robots: obey`: discovered links not followed because their host's robots.txt disallows them. */
	robots_disallowed: number;
	/** `freshness:`: fresh pages whose links were read from their stored page (not fetched, no record). */
	fresh: number;
	/** `freshness:`: fresh pages fetched again (paid, with a record) only to follow their links: none was stored. */
	refetched_for_links: number;
	/** `max_pages` when the crawl stopped there with discovered pages left (--resume with a larger one goes on). */
	stopped_by: "max_pages" | null;
}

export interface CrawlerOptions {
	readonly job: Job;
	readonly spec: CrawlSpec;
	readonly runDir: string;
	/** Ids with a record from earlier sessions of this run (a resume); null for a new run. */
	readonly done: { has(id: string): boolean; readonly size: number } | null;
	/** Whether the run is stopping: the crawl hands out nothing more (`wake` it when that changes). */
	readonly isStopping: () => boolean;
	/** Fetch a robots.txt or sitemap through the service with a seed's options (`crawl.sitemaps`, `crawl.robots`). */
	readonly fetchSitemap?: SitemapFetch;
	/** Something the user should know and the crawl goes on from (a sitemap or robots.txt cut at its bound). */
	readonly warn?: (message: string) => void;
	/** Lower sitemap bounds than sitemaps.org's, for tests. */
	readonly sitemapBounds?: SitemapBounds;
	/** The job's other run folders, where a robots.txt stored less than a day ago is read instead of paid again (robots.ts). */
	readonly earlierRunDirs?: readonly string[];
	/** URL keys held in memory before older ones spill to disk (url-keys.ts). @default 1,000,000 */
	readonly keysInMemory?: number;
	/**
	 * A sharded crawl (`run --shard`): links of another shard's hosts are handed to it through its inbox,
	 * this shard's inbox is read as its pages settle and when it runs out of work, and the crawl ends only
	 * when the layout is out of work (shard-inbox.ts). Without it, such links are left out.
	 */
	readonly handOff?: {
		readonly inbox: ShardInbox;
		/** Whether shard `index` of the layout is running (its lock held, its lease current). */
		isRunning(index: number): boolean;
		/** How often an out-of-work shard looks at its inbox and the others, ms. @default 100 */
		readonly pollMs?: number;
	};
}

/** The run folder's spilled URL keys while a crawl runs (removed at its end; rebuilt from the frontier on resume). */
const CRAWL_KEYS_DIR = "crawl-keys";

export interface Crawler {
	/**
	 * The seeds (the job's targets and sources), then every page discovered from them, lowest depth
	 * first (see `createCrawler`). Every page handed out must be `settled` once its work has ended.
	 */
	targets(seeds: AsyncIterable<Target[]>): AsyncIterable<Target[]>;
	/**
	 * A page handed out by `targets` is done with (its record written, or dropped): a page of the next
	 * depth may now be due. Call after `pageFetched`, once per page, whatever its outcome.
	 */
	settled(target: Target): void;
	/** The run is stopping: `targets` stops waiting for pages to settle (queued ones may never run). */
	wake(): void;
	/**
	 * A page was fetched: its links (in scope, not seen before, above `max_depth`) are journalled. Call
	 * before the page's record is written. Returns the parsed page for extraction to reuse.
	 * `finalUrl`: where the target's redirects ended (when the service said): that address counts as
	 * fetched, and the page's links resolve against it, as a browser's would.
	 */
	/**
	 * A fetched page's links (found by the page pool, off the main thread; empty for a page that is not
	 * HTML; null when the page could not be read) go to the frontier.
	 */
	pageFetched(target: Target, links: readonly string[] | null, finalUrl?: string): void;
	/**
	 * A page's record was written (ok, failed or skipped): one of the summary's `pages`. Pages handed out
	 * and dropped by a stop have none, and are fetched by `--resume`.
	 */
	pageRecorded(): void;
	summary(): CrawlSummary;
	/** Of `summary().sitemap_credits`, the robots.txt and sitemap credits this session paid (not an earlier session of the run). */
	sessionSitemapCredits(): number;
	/** `robots: obey`: the `Crawl-delay` of `host`'s robots.txt in ms (0: none, or not read yet). */
	crawlDelayMs(host: string): number;
	sync(): void;
	close(): void;
}

const BATCH = 256;
/** Links of one page journalled per append. */
const LINK_SLICE = 4096;

/**
 * What a crawl's robots.txt and sitemap fetches cost in a run folder, every session included, read from
 * its journal as a resume reads it (`merge` counts them: no record holds them). 0 without a crawl.
 */
export function journalledCrawlCredits(runDir: string): number {
	const path = join(runDir, FRONTIER_FILE);
	if (!existsSync(path)) return 0;
	const robotsPaid = new Set<string>();
	let credits = 0;
	for (const { text } of jsonlLines(path)) {
		// Links (d ≥ 0) cost nothing and are most lines: passed over unparsed.
		if (!text.includes('"d":-')) continue;
		const entry = parseJsonLine(text);
		if (!isFrontierEntry(entry)) continue;
		if (entry.d === ROBOTS_PAID) {
			if (robotsPaid.has(entry.u)) continue;
			robotsPaid.add(entry.u);
		} else if (entry.d !== SITEMAP_PAID && entry.d !== CHARGED_UNPAID) continue;
		credits += entry.c ?? 0;
	}
	return credits;
}

const sameOrigin = (seed: Target, url: URL) => URL.canParse(seed.url) && new URL(seed.url).origin === url.origin;

/** A batch of seeds as the crawl takes it: the ones to fetch, and the origins to read first. */
interface SeedBatch {
	readonly out: Target[];
	/** Origins first seen in this batch, with their first seed (whose options fetch the sitemaps). */
	readonly newOrigins: Target[];
	/** Origins whose robots.txt is to be read before their seeds go out (its Crawl-delay paces them). */
	readonly robotsOrigins: Target[];
}

/**
 * Breadth-first crawl over a journalled frontier. One set of 64-bit URL keys (url-keys.ts): seen
 * (discovered or seeded: a link is journalled once) and, of those, claimed (handed out for fetching:
 * a URL is fetched once, even when a seed and a link name it).
 *
 * The feed is continuous and depth-exact: pages are handed out lowest depth first, and a page of depth
 * d is handed out only once no page of depth ≤ d−2 is outstanding (handed out and not settled). So level
 * d+1 starts while level d's last pages are in flight — their links are at d+1, never above a page
 * handed out — and a page is never claimed at a depth larger than its shortest: a shorter path would
 * run through a page of depth ≤ d−2 linking it, and all of those have settled (their links journalled).
 * A link found at depth e for a URL first journalled deeper (a page of depth e+1 finished before the
 * last of depth e−1) is journalled again at e; whichever entry is handed out first claims the URL, and
 * the shallower one is first. `max_depth` cuts where a BFS would; `max_pages` counts exactly.
 *
 * The frontier stays on disk, indexed by depth (depth-index.ts); pages in flight per depth are
 * outstanding-pages.ts's, seeds' options seed-profiles.ts's.
 */
export function createCrawler(options: CrawlerOptions): Crawler {
	return new BreadthFirstCrawler(options);
}

class BreadthFirstCrawler implements Crawler {
	private readonly spec: CrawlSpec;
	private readonly done: CrawlerOptions["done"];
	private readonly frontier: DepthIndex;
	private readonly urls: UrlKeys;
	private readonly scope: LinkScope;
	private readonly profiles = new SeedProfiles();
	private readonly outstanding = new OutstandingPages();
	/** `robots: obey`: each crawled origin's robots.txt decides which discovered links are followed. */
	private readonly robots: Robots | null;
	private readonly sitemaps: ReturnType<typeof createSitemapReader>;
	/** `--retry-failed`: failed seeds and pages are fetched again, and what they newly link. */
	private readonly retry: RetryCrawl | null;
	/** The shard a URL is fetched by: this one's index when unsharded. */
	private readonly shard: Job["shard"];
	/** Pages with a record from earlier sessions of this run. */
	private readonly pagesBefore: number;
	/** robots.txt and sitemap credits earlier sessions of the run paid (read back from the journal). */
	private sitemapCreditsBefore = 0;
	/** Of those, what fetches given up after a charge cost (`CHARGED_UNPAID` lines). */
	private chargedUnpaidBefore = 0;
	/** Seed origins whose sitemaps were asked for (`sitemaps: true`), each once per session. */
	private readonly seedOrigins = new Set<string>();
	private handedOut = 0;
	/** Page records written this session (`handedOut` less the pages a stop dropped before their fetch). */
	private recorded = 0;
	private fresh = 0;
	private refetched = 0;
	private robotsDisallowed = 0;
	private stoppedBy: CrawlSummary["stopped_by"] = null;
	/** Sitemap files were left unread because the crawl knew `max_pages` URLs already. */
	private sitemapsCut = false;

	private readonly options: CrawlerOptions;

	constructor(options: CrawlerOptions) {
		this.options = options;
		this.spec = options.spec;
		this.done = options.done;
		this.frontier = new DepthIndex(options.runDir);
		this.urls = createUrlKeys({
			dir: join(options.runDir, CRAWL_KEYS_DIR),
			...(options.keysInMemory !== undefined ? { inMemory: options.keysInMemory } : {}),
		});
		this.scope = createLinkScope(this.spec.scope);
		this.retry = options.job.retryCrawl ?? null;
		this.shard = options.job.shard;
		this.pagesBefore = this.done?.size ?? 0;
		const journal = (entries: readonly FrontierEntry[]) => this.frontier.journal(entries);
		this.robots =
			this.spec.robots === "obey" && options.fetchSitemap
				? createRobots({
						runDir: options.runDir,
						fetch: options.fetchSitemap,
						append: journal,
						...(options.warn ? { warn: options.warn } : {}),
						...(options.earlierRunDirs ? { earlierRunDirs: options.earlierRunDirs } : {}),
					})
				: null;
		const robots = this.robots;
		this.sitemaps = createSitemapReader({
			// The robots.txt read for the rules is the one read for `Sitemap:` lines: paid once.
			...(robots
				? {
						robotsFile: async (origin: string, seed: Target, profile: string) =>
							(await robots.load(origin, seed, profile)) ? robots.bodyPath(origin) : ("stopped" as const),
					}
				: {}),
			runDir: options.runDir,
			...(options.warn ? { warn: options.warn } : {}),
			...(options.sitemapBounds ? { bounds: options.sitemapBounds } : {}),
			fetch: options.fetchSitemap ?? (async () => ({ kind: "stopped" })),
			append: journal,
			pageFound: (href, profile) => {
				const url = this.follows(href);
				// A sitemap page of another shard's host: that shard reads the same sitemap from its seed.
				if (url === null || !this.mine(url)) return null;
				const key = urlKey(url);
				return this.urls.see(key.high, key.low) ? { u: url, d: 0, p: null, k: profile } : null;
			},
			isStopping: options.isStopping,
			hasRoom: () => this.urls.size < this.spec.maxPages,
		});
		if (this.done !== null) {
			this.rememberJournalled();
			this.sitemapCreditsBefore = this.sitemapCredits();
		}
	}

	/** The seeds, then the journal, lowest depth first, each depth once the depth two above it has settled. */
	async *targets(seeds: AsyncIterable<Target[]>): AsyncIterable<Target[]> {
		for await (const batch of seeds) {
			const { out, newOrigins, robotsOrigins } = this.takeSeeds(batch);
			// Sitemaps before the seeds that lead to them are fetched: a page they list is depth 0
			// whatever the timing (no seed's link can have journalled it at depth 1 first).
			for (const seed of robotsOrigins) {
				const origin = new URL(normalizeUrl(seed.url)!).origin;
				if (!(await this.robots!.load(origin, seed, seed.crawl?.profile ?? this.profiles.keyOf(seed)))) return;
			}
			// --retry-failed: the sitemaps were read by the run that found their pages (failed ones come below).
			if (!this.retry && !(await this.readSitemaps(newOrigins))) return;
			if (out.length > 0) yield out;
		}
		if (this.retry) this.journalFailedPages(this.retry);
		yield* this.discovered();
	}

	settled(target: Target): void {
		if (!target.crawl) return;
		this.outstanding.settle(target);
	}

	wake(): void {
		this.outstanding.wake();
	}

	pageFetched(target: Target, links: readonly string[] | null, finalUrl?: string): void {
		const crawl = target.crawl;
		const found: FrontierEntry[] = [];
		if (finalUrl !== undefined) this.landingFound(target, finalUrl, found);
		if (!crawl || crawl.depth >= this.spec.maxDepth || links === null) {
			this.frontier.journal(found);
			return;
		}
		// A slice at a time: a page of hundreds of thousands of links holds one slice's entries and journal
		// text at once, not the page's.
		for (let start = 0; start < links.length || found.length > 0; start += LINK_SLICE) {
			const handed = this.linksFound(target.id, crawl, links, found, start, start + LINK_SLICE);
			this.frontier.journal(found);
			found.length = 0;
			for (const [owner, entries] of handed) this.options.handOff?.inbox.handOff(owner, entries);
		}
	}

	/**
	 * Where `target`'s redirects ended: fetched (and paid) as it, never fetched under its own address, even
	 * after a resume. A landing on another shard's host is handed to that shard as fetched, so it does not
	 * fetch it again when a link leads there.
	 */
	private landingFound(target: Target, finalUrl: string, found: FrontierEntry[]): void {
		const crawl = target.crawl;
		const landed = normalizeUrl(finalUrl);
		if (!crawl || landed === null || landed === normalizeUrl(target.url)) return;
		const key = urlKey(landed);
		if (!this.urls.claim(key.high, key.low)) return;
		const entry: FrontierEntry = { u: landed, d: crawl.depth, p: target.id, k: crawl.profile, r: 1 };
		found.push(entry);
		const owner = this.shardOfUrl(landed);
		if (this.shard && owner !== this.shard.index) this.options.handOff?.inbox.handOff(owner, [entry]);
	}

	pageRecorded(): void {
		this.recorded += 1;
	}

	sessionSitemapCredits(): number {
		return this.sitemapCredits() - this.sitemapCreditsBefore;
	}

	/** robots.txt and sitemap credits, every session included. */
	private sitemapCredits(): number {
		return this.sitemaps.credits + (this.robots?.credits ?? 0) + this.chargedUnpaidBefore;
	}

	summary(): CrawlSummary {
		return {
			pages: this.pagesBefore + this.recorded,
			discovered: this.urls.size,
			max_depth: this.spec.maxDepth,
			max_pages: this.spec.maxPages,
			sitemap_credits: this.sitemapCredits(),
			robots_disallowed: this.robotsDisallowed,
			fresh: this.fresh,
			refetched_for_links: this.refetched,
			stopped_by: this.stoppedBy ?? (this.sitemapsCut ? "max_pages" : null),
		};
	}

	crawlDelayMs(host: string): number {
		return this.robots?.crawlDelayMs(host) ?? 0;
	}

	sync(): void {
		this.frontier.sync();
	}

	close(): void {
		// Each file is closed even when one before it failed; the first failure is the one reported.
		closeEach([() => this.options.handOff?.inbox.close(), () => this.frontier.close(), () => this.urls.close()]);
	}

	/** The pages discovered, from the journal: handed out in batches as their depth comes due. */
	private async *discovered(): AsyncIterable<Target[]> {
		let out: Target[] = [];
		for (;;) {
			if (this.options.isStopping()) return;
			const depth = this.frontier.lowestPending();
			const lowestBusy = this.outstanding.lowest();
			const due = depth !== null && (lowestBusy === null || lowestBusy >= depth - 1);
			const entry = due ? this.frontier.next(depth) : null;
			if (entry === null) {
				if (due) continue;
				// Nothing due: hand out what is gathered, then wait for a page to settle (its links may be due).
				if (out.length > 0) {
					yield out;
					out = [];
					continue;
				}
				if (this.outstanding.total > 0) {
					await this.outstanding.settled();
					this.absorbInbox();
					continue;
				}
				if (this.absorbInbox() > 0) continue;
				// Out of work: a sharded crawl waits for links from the others until the layout is out of work too.
				if (!(await this.awaitInbox())) return;
				continue;
			}
			// A link to an origin whose robots.txt is not read yet: read first (once per origin per run).
			if (this.robots) {
				const seed = this.profiles.seedOf(entry.k);
				if (
					seed &&
					this.robots.allows(entry.u) === null &&
					!(await this.robots.load(new URL(entry.u).origin, seed, entry.k))
				)
					return;
			}
			const target = this.take(entry);
			if (target) out.push(target);
			if (this.stoppedBy) {
				if (out.length > 0) yield out;
				return;
			}
			if (out.length >= BATCH) {
				yield out;
				out = [];
			}
		}
	}

	/** A batch of seeds: each widens the scope and names its options; this shard's new ones are handed out. */
	private takeSeeds(batch: readonly Target[]): SeedBatch {
		const taken: SeedBatch = { out: [], newOrigins: [], robotsOrigins: [] };
		for (const seed of batch) {
			const url = normalizeUrl(seed.url);
			const k = this.profiles.keyOf(seed);
			seed.crawl = { depth: 0, parent: null, profile: k };
			if (url !== null) {
				const parsed = new URL(url);
				this.scope.addSeed(parsed);
				if (
					this.robots &&
					this.mine(url) &&
					this.robots.allows(url) === null &&
					!taken.robotsOrigins.some((t) => sameOrigin(t, parsed))
				) {
					taken.robotsOrigins.push(seed);
				}
				if (this.spec.sitemaps && this.mine(url) && !this.seedOrigins.has(parsed.origin)) {
					this.seedOrigins.add(parsed.origin);
					taken.newOrigins.push(seed);
				}
				const key = urlKey(url);
				this.urls.claim(key.high, key.low);
			}
			if (this.done?.has(seed.id)) continue;
			// Every seed widens the scope and names its options; another shard's seed is that shard's to fetch.
			if (!this.mine(seed.url)) continue;
			// --retry-failed: only a seed whose latest record failed is fetched again.
			if (this.retry && !this.retry.failed(seed)) continue;
			if (this.handOut(seed)) taken.out.push(seed);
		}
		return taken;
	}

	/** A journalled entry, claimed: the target to fetch, or null when it is not fetched (and why is counted). */
	private take(entry: FrontierEntry): Target | null {
		if (entry.d < 0) return null;
		const key = urlKey(entry.u);
		if (this.urls.isClaimed(key.high, key.low)) return null;
		// The seed whose options it carried is no longer in the job (a resume with --force): not fetched.
		const target = this.profiles.targetOf(entry);
		if (!target) return null;
		// --retry-failed: a link to a page whose latest record is ok is not fetched again.
		if (this.done?.has(target.id) || this.retry?.fetchedOk(target.id)) {
			this.urls.claim(key.high, key.low);
			return null;
		}
		this.urls.claim(key.high, key.low);
		// Journalled under an earlier job file (a resume after `exclude` was added) or by another shard
		// (its inbox): the job's scope now decides. The line stays, so a wider scope later finds it again.
		if (!this.inScope(entry.u)) return null;
		// Journalled as discovered, refused by its host's robots.txt: counted, never fetched.
		if (this.robots && this.robots.allows(entry.u) === false) {
			this.robotsDisallowed += 1;
			return null;
		}
		return this.handOut(target) ? target : null;
	}

	/**
	 * A fetched page's links one level down: this shard's new ones added to `found`, other shards' ones
	 * returned per shard (for their inboxes).
	 */
	private linksFound(
		parent: string,
		crawl: NonNullable<Target["crawl"]>,
		links: readonly string[],
		found: FrontierEntry[],
		from = 0,
		to = links.length,
	): Map<number, FrontierEntry[]> {
		const { shard } = this;
		const depth = crawl.depth + 1;
		// Deeper entries exist only while the last pages of this page's level finish: a link seen before may
		// have been journalled deeper (from a page of the next level), so an unclaimed one is journalled at this depth too.
		const mayBeDeeper = this.frontier.deepest > depth;
		const handed = new Map<number, FrontierEntry[]>();
		for (let index = from; index < to && index < links.length; index++) {
			const url = this.follows(links[index]!);
			if (url === null) continue;
			const owner = this.shardOfUrl(url);
			// Another shard's host: handed to it (a crawl without inboxes leaves it out).
			if (shard && owner !== shard.index && !this.options.handOff) continue;
			const key = urlKey(url);
			if (
				!this.urls.see(key.high, key.low) &&
				!(mayBeDeeper && owner === (shard?.index ?? 1) && !this.urls.isClaimed(key.high, key.low))
			)
				continue;
			const entry = { u: url, d: depth, p: parent, k: crawl.profile };
			if (shard && owner !== shard.index) {
				const list = handed.get(owner) ?? [];
				list.push(entry);
				handed.set(owner, list);
			} else found.push(entry);
		}
		return handed;
	}

	/** A resumed run knows every link journalled before: they are not journalled again. */
	private rememberJournalled(): void {
		this.frontier.replay((entry) => {
			if (entry.d < 0) {
				if (entry.d === ROBOTS_PAID) this.robots?.remember(entry);
				else if (entry.d === CHARGED_UNPAID) this.chargedUnpaidBefore += entry.c ?? 0;
				else this.sitemaps.remember(entry);
				return false;
			}
			const key = urlKey(entry.u);
			if (entry.r === 1) {
				this.urls.claim(key.high, key.low);
				return false;
			}
			this.urls.see(key.high, key.low);
			// Handed out again in depth order; what has a record (or a claim) is passed over then.
			return true;
		});
	}

	/**
	 * --retry-failed: the failed crawled pages go to the frontier at their recorded depth and parent, with
	 * the options of the seed they were found from (the one whose options give their id). Seeds among them
	 * were claimed when read (retried as seeds), and a resume finds the others journalled already.
	 */
	private journalFailedPages(retrying: RetryCrawl): void {
		let found: FrontierEntry[] = [];
		for (const page of retrying.pages()) {
			const url = normalizeUrl(page.url);
			if (url === null || !this.mine(url) || page.depth > this.spec.maxDepth) continue;
			const profile = this.profiles.keyFor(url, page.id);
			// Its seed's options are no longer in the job: not fetched (as a seed no longer listed).
			if (profile === undefined) continue;
			const key = urlKey(url);
			// Seen already: a seed (claimed when read), or journalled by an earlier session of this run.
			if (!this.urls.see(key.high, key.low)) continue;
			found.push({ u: url, d: page.depth, p: page.parent, k: profile });
			if (found.length >= BATCH) {
				this.frontier.journal(found);
				found = [];
			}
		}
		this.frontier.journal(found);
	}

	/**
	 * Links other shards handed to this one go to the frontier (each once; a seed's options must be known).
	 * A redirect's landing another shard fetched is journalled as claimed: not fetched here, even after a resume.
	 */
	private absorbInbox(): number {
		const handOff = this.options.handOff;
		if (!handOff) return 0;
		const found: FrontierEntry[] = [];
		let links = 0;
		for (const entry of handOff.inbox.readNew()) {
			if (!this.profiles.has(entry.k)) continue;
			const key = urlKey(entry.u);
			if (entry.r === 1) {
				if (this.urls.claim(key.high, key.low)) found.push({ u: entry.u, d: entry.d, p: entry.p, k: entry.k, r: 1 });
			} else if (this.urls.see(key.high, key.low)) {
				found.push({ u: entry.u, d: entry.d, p: entry.p, k: entry.k });
				links += 1;
			}
		}
		this.frontier.journal(found);
		return links;
	}

	/** Wait until links arrive (true) or the whole layout is out of work or the run stops (false). */
	private async awaitInbox(): Promise<boolean> {
		const handOff = this.options.handOff;
		if (!handOff) return false;
		for (;;) {
			if (this.options.isStopping()) return false;
			if (this.absorbInbox() > 0) {
				handOff.inbox.setIdle(false);
				return true;
			}
			handOff.inbox.setIdle(true);
			if (handOff.inbox.allSettled(handOff.isRunning)) return false;
			await new Promise((resolve) => setTimeout(resolve, handOff.pollMs ?? 100));
		}
	}

	/**
	 * Whether a page is handed out: a fresh one with its page stored, or at `max_depth` where its links are
	 * not wanted, always (it is read or passed over, not fetched, and is no page record: `max_pages` does not
	 * count it); any other while `max_pages` leaves room.
	 */
	private handOut(target: Target): boolean {
		const freshPage = this.options.job.freshPage?.(target) ?? null;
		if (freshPage && (freshPage.path || target.crawl!.depth >= this.spec.maxDepth)) {
			target.crawl!.fresh = true;
			if (freshPage.path) target.crawl!.storedPage = freshPage.path;
			if (freshPage.landing) {
				target.crawl!.storedLanding = freshPage.landing;
				// Noted as it is handed out, not once its links are read: a link to the landing found meanwhile is not fetched.
				const found: FrontierEntry[] = [];
				this.landingFound(target, freshPage.landing, found);
				this.frontier.journal(found);
			}
			this.fresh += 1;
			this.outstanding.add(target);
			return true;
		}
		if (this.spec.maxPages - this.pagesBefore - this.handedOut <= 0) {
			this.stoppedBy = "max_pages";
			return false;
		}
		if (freshPage) this.refetched += 1;
		this.handedOut += 1;
		this.outstanding.add(target);
		return true;
	}

	/**
	 * `sitemaps: true`: each new seed origin's sitemap pages join the frontier as seeds (depth 0, no
	 * parent), journalled file by file (sitemaps.ts). False when the run stops while reading.
	 */
	private async readSitemaps(origins: readonly Target[]): Promise<boolean> {
		if (!this.options.fetchSitemap) return true;
		for (const seed of origins) {
			const origin = new URL(normalizeUrl(seed.url)!).origin;
			const read = await this.sitemaps.read(origin, seed, seed.crawl?.profile ?? this.profiles.keyOf(seed));
			if (read === "stopped") return false;
			if (read === "cut") this.sitemapsCut = true;
		}
		return true;
	}

	/** The job's scope as it is now: `scope`, `include`, `exclude` over a normalized URL. */
	private inScope(url: string): boolean {
		if (!this.scope.allows(new URL(url))) return false;
		if (this.spec.include.length > 0 && !this.spec.include.some((pattern) => pattern.test(url))) return false;
		return !this.spec.exclude.some((pattern) => pattern.test(url));
	}

	/** A link as the crawl follows it (normalized), or null when it is out of scope. */
	private follows(href: string): string | null {
		const url = normalizeUrl(href);
		return url !== null && this.inScope(url) ? url : null;
	}

	private shardOfUrl(url: string): number {
		return this.shard ? shardOf(url, this.shard.count, this.options.job.shardBy) : 1;
	}

	/** Whether this shard fetches `url` (always, unsharded). */
	private mine(url: string): boolean {
		return !this.shard || this.shardOfUrl(url) === this.shard.index;
	}
}

/** A URL's 64-bit key in the crawl's set (no options: a URL is fetched once, whichever seed found it). */
function urlKey(url: string) {
	return createTargetKey(url, "");
}
