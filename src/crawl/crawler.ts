import { hash } from "node:crypto";
import { join } from "node:path";
import { createUrlKeys, type UrlKeys } from "../common/index.js";
import {
	type CrawlSpec,
	createTargetKey,
	identityOptionsJson,
	type Job,
	type RetryCrawl,
	shardOf,
	type Target,
} from "../job/index.js";
import { FRONTIER_FILE, type FrontierEntry, type FrontierFile, openFrontierFile } from "./frontier-file.js";
import { createLinkScope } from "./link-scope.js";
import { normalizeUrl, withSeedCredentials } from "./normalize-url.js";
import { createRobots, ROBOTS_PAID } from "./robots.js";
import type { ShardInbox } from "./shard-inbox.js";
import type { SitemapBounds } from "./sitemap-stream.js";
import { createSitemapReader, type SitemapFetch } from "./sitemaps.js";

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
	 * A fetched page's links (found by the page pool, off the main thread; null when it found none or
	 * the page could not be read) go to the frontier.
	 */
	pageFetched(target: Target, links: readonly string[] | null, finalUrl?: string): void;
	summary(): CrawlSummary;
	/** `robots: obey`: the `Crawl-delay` of `host`'s robots.txt in ms (0: none, or not read yet). */
	crawlDelayMs(host: string): number;
	sync(): void;
	close(): void;
}

/** Seed options every page found from that seed inherits: one per distinct option set, held in memory. */
interface Profile {
	readonly optionsJson: string;
	readonly seed: Target;
}

const BATCH = 256;

const sameOrigin = (seed: Target, url: URL) => URL.canParse(seed.url) && new URL(seed.url).origin === url.origin;

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
 * The frontier stays on disk: for each depth, the byte ranges of frontier.jsonl that hold its
 * entries (one range per run of appends of that depth: a handful per level) are read a chunk at a time.
 */
export function createCrawler(options: CrawlerOptions): Crawler {
	const { spec, done } = options;
	const frontier: FrontierFile = openFrontierFile(join(options.runDir, FRONTIER_FILE));
	const urls: UrlKeys = createUrlKeys({
		dir: join(options.runDir, CRAWL_KEYS_DIR),
		...(options.keysInMemory !== undefined ? { inMemory: options.keysInMemory } : {}),
	});
	const scope = createLinkScope(spec.scope);
	const profiles = new Map<string, Profile>();
	let handedOut = 0;
	let fresh = 0;
	let refetched = 0;
	/** Seed origins whose sitemaps were asked for (`sitemaps: true`), each once per session. */
	const seedOrigins = new Set<string>();
	let stoppedBy: CrawlSummary["stopped_by"] = null;
	/** Sitemap files were left unread because the crawl knew `max_pages` URLs already. */
	let sitemapsCut = false;
	const pagesBefore = done?.size ?? 0;
	/** Per depth: byte ranges of frontier.jsonl holding its entries not handed out yet, in file order. */
	const ranges = new Map<number, Array<{ from: number; to: number }>>();
	/** Per depth: entries read from its first range and not handed out yet. */
	const buffered = new Map<number, FrontierEntry[]>();
	/** The depth whose range the last journalled entries extended (-1: none, or a mixed append). */
	let lastRangeDepth = -1;
	/** The deepest entry journalled (a link found shallower than it may have been journalled deeper first). */
	let deepestJournalled = 0;
	/** Per depth: pages handed out and not settled yet. */
	const outstanding = new Map<number, number>();
	let outstandingTotal = 0;
	let wakeUp: (() => void) | null = null;

	const urlKey = (url: string) => createTargetKey(url, "");
	/** `--retry-failed`: failed seeds and pages are fetched again, and what they newly link. */
	const retry = options.job.retryCrawl ?? null;
	/** The shard a URL is fetched by: this one's index when unsharded. */
	const shard = options.job.shard;
	const shardOfUrl = (url: string) => (shard ? shardOf(url, shard.count, options.job.shardBy) : 1);
	const mine = (url: string) => !shard || shardOfUrl(url) === shard.index;
	const pagesLeft = () => spec.maxPages - pagesBefore - handedOut;

	const profileOf = (seed: Target): string => {
		const identity = seed.browserSession ? { ...seed.params, browser_session: seed.browserSession } : seed.params;
		const optionsJson = identityOptionsJson(identity);
		const key = hash("sha256", optionsJson, "hex").slice(0, 12);
		if (!profiles.has(key)) profiles.set(key, { optionsJson, seed });
		return key;
	};

	const discoveredTarget = (entry: FrontierEntry, profile: Profile): Target => {
		const { seed } = profile;
		const target: Target = {
			id: createTargetKey(entry.u, profile.optionsJson).id,
			url: entry.u,
			// The journal never holds credentials: the fetch gets the seed's back on the seed's own origin.
			params: { ...seed.params, url: withSeedCredentials(entry.u, seed.url) },
			origin: seed.origin,
			crawl: { depth: entry.d, parent: entry.p, profile: entry.k },
		};
		if (seed.browserSession) target.browserSession = seed.browserSession;
		if (seed.extract !== undefined) target.extract = seed.extract;
		return target;
	};

	/** Note that bytes [from, to) of frontier.jsonl hold entries of `depth` to hand out. */
	const addRange = (depth: number, from: number, to: number, extend: boolean) => {
		let list = ranges.get(depth);
		if (!list) {
			list = [];
			ranges.set(depth, list);
		}
		const last = list.at(-1);
		if (extend && last && last.to <= from) last.to = to;
		else list.push({ from, to });
		if (depth > deepestJournalled) deepestJournalled = depth;
	};

	/** Every entry goes to frontier.jsonl through here: pages to hand out are indexed by depth. */
	const journal = (entries: readonly FrontierEntry[]) => {
		if (entries.length === 0) return;
		const from = frontier.size;
		frontier.append(entries);
		const to = frontier.size;
		let depth = -1;
		let mixed = false;
		for (const entry of entries) {
			// Sitemap files (d < 0) and redirect landings (claimed when journalled) are not handed out.
			if (entry.d < 0 || entry.r === 1) continue;
			if (depth === -1) depth = entry.d;
			else if (entry.d !== depth) {
				mixed = true;
				break;
			}
		}
		if (depth === -1) return;
		if (!mixed) {
			addRange(depth, from, to, lastRangeDepth === depth);
			lastRangeDepth = depth;
			return;
		}
		// Depths mixed in one append (an inbox read): each depth's range covers it, lines of others passed over.
		const depths = new Set(entries.filter((entry) => entry.d >= 0 && entry.r !== 1).map((entry) => entry.d));
		for (const each of depths) addRange(each, from, to, false);
		lastRangeDepth = -1;
	};

	/** The lowest depth with entries to hand out, or null. */
	const lowestPending = (): number | null => {
		let lowest: number | null = null;
		for (const [depth, list] of ranges) {
			if ((lowest === null || depth < lowest) && (list.length > 0 || (buffered.get(depth)?.length ?? 0) > 0))
				lowest = depth;
		}
		return lowest;
	};

	/** The lowest depth of a page handed out and not settled, or null. */
	const lowestOutstanding = (): number | null => {
		let lowest: number | null = null;
		for (const depth of outstanding.keys()) if (lowest === null || depth < lowest) lowest = depth;
		return lowest;
	};

	/** The next entry of `depth` to hand out (read from its ranges a chunk at a time), or null. */
	const nextOf = (depth: number): FrontierEntry | null => {
		for (;;) {
			const held = buffered.get(depth);
			if (held && held.length > 0) return held.pop()!;
			const list = ranges.get(depth);
			const range = list?.[0];
			if (!list || !range) {
				ranges.delete(depth);
				buffered.delete(depth);
				return null;
			}
			const read = frontier.readDepth(range.from, range.to, depth);
			range.from = read.next;
			if (range.from >= range.to) list.shift();
			// Held reversed: pop() hands them out in file order.
			buffered.set(depth, read.entries.reverse());
		}
	};

	/** The job's scope as it is now: `scope`, `include`, `exclude` over a normalized URL. */
	const inScope = (url: string): boolean => {
		if (!scope.allows(new URL(url))) return false;
		if (spec.include.length > 0 && !spec.include.some((pattern) => pattern.test(url))) return false;
		return !spec.exclude.some((pattern) => pattern.test(url));
	};

	const follows = (href: string): string | null => {
		const url = normalizeUrl(href);
		return url !== null && inScope(url) ? url : null;
	};

	/** `robots: obey`: each crawled origin's robots.txt decides which discovered links are followed. */
	const robots =
		spec.robots === "obey" && options.fetchSitemap
			? createRobots({
					runDir: options.runDir,
					fetch: options.fetchSitemap,
					append: journal,
					...(options.warn ? { warn: options.warn } : {}),
				})
			: null;
	let robotsDisallowed = 0;

	const sitemaps = createSitemapReader({
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
		pageFound(href, profile) {
			const url = follows(href);
			// A sitemap page of another shard's host: that shard reads the same sitemap from its seed.
			if (url === null || !mine(url)) return null;
			const key = urlKey(url);
			return urls.see(key.high, key.low) ? { u: url, d: 0, p: null, k: profile } : null;
		},
		isStopping: options.isStopping,
		hasRoom: () => urls.size < spec.maxPages,
	});

	/** A resumed run knows every link journalled before: they are not journalled again. */
	const rememberJournalled = () => {
		const reader = openFrontierFile(join(options.runDir, FRONTIER_FILE));
		try {
			for (let lineStart = 0, entry = reader.next(); entry !== null; lineStart = reader.cursor, entry = reader.next()) {
				if (entry.d < 0) {
					if (entry.d === ROBOTS_PAID) robots?.remember(entry);
					else sitemaps.remember(entry);
					continue;
				}
				const key = urlKey(entry.u);
				if (entry.r === 1) urls.claim(key.high, key.low);
				else {
					urls.see(key.high, key.low);
					// Handed out again in depth order; what has a record (or a claim) is passed over then.
					addRange(entry.d, lineStart, reader.cursor, lastRangeDepth === entry.d);
					lastRangeDepth = entry.d;
				}
			}
		} finally {
			reader.close();
		}
	};
	if (done !== null) rememberJournalled();

	async function* targets(seeds: AsyncIterable<Target[]>): AsyncIterable<Target[]> {
		for await (const batch of seeds) {
			const out: Target[] = [];
			/** Origins first seen in this batch, with their first seed (whose options fetch the sitemaps). */
			const newOrigins: Target[] = [];
			/** Origins whose robots.txt is to be read before their seeds go out (its Crawl-delay paces them). */
			const robotsOrigins: Target[] = [];
			for (const seed of batch) {
				const url = normalizeUrl(seed.url);
				const k = profileOf(seed);
				seed.crawl = { depth: 0, parent: null, profile: k };
				if (url !== null) {
					const parsed = new URL(url);
					scope.addSeed(parsed);
					if (robots && mine(url) && robots.allows(url) === null && !robotsOrigins.some((t) => sameOrigin(t, parsed))) {
						robotsOrigins.push(seed);
					}
					if (spec.sitemaps && mine(url) && !seedOrigins.has(parsed.origin)) {
						seedOrigins.add(parsed.origin);
						newOrigins.push(seed);
					}
					const key = urlKey(url);
					urls.claim(key.high, key.low);
				}
				if (done?.has(seed.id)) continue;
				// Every seed widens the scope and names its options; another shard's seed is that shard's to fetch.
				if (!mine(seed.url)) continue;
				// --retry-failed: only a seed whose latest record failed is fetched again.
				if (retry && !retry.failed(seed)) continue;
				if (handOut(seed)) out.push(seed);
			}
			// Sitemaps before the seeds that lead to them are fetched: a page they list is depth 0
			// whatever the timing (no seed's link can have journalled it at depth 1 first).
			for (const seed of robotsOrigins) {
				const origin = new URL(normalizeUrl(seed.url)!).origin;
				if (!(await robots!.load(origin, seed, seed.crawl?.profile ?? profileOf(seed)))) return;
			}
			// --retry-failed: the sitemaps were read by the run that found their pages (failed ones come below).
			if (!retry && !(await readSitemaps(newOrigins))) return;
			if (out.length > 0) yield out;
		}
		if (retry) journalFailedPages(retry);
		// Then the journal, lowest depth first, each depth once the depth two above it has settled.
		let out: Target[] = [];
		for (;;) {
			if (options.isStopping()) return;
			const depth = lowestPending();
			const lowestBusy = lowestOutstanding();
			const due = depth !== null && (lowestBusy === null || lowestBusy >= depth - 1);
			const entry = due ? nextOf(depth) : null;
			if (entry === null) {
				if (due) continue;
				// Nothing due: hand out what is gathered, then wait for a page to settle (its links may be due).
				if (out.length > 0) {
					yield out;
					out = [];
					continue;
				}
				if (outstandingTotal > 0) {
					await new Promise<void>((resolve) => {
						wakeUp = resolve;
					});
					wakeUp = null;
					absorbInbox();
					continue;
				}
				if (absorbInbox() > 0) continue;
				// Out of work: a sharded crawl waits for links from the others until the layout is out of work too.
				if (!(await awaitInbox())) return;
				continue;
			}
			// A link to an origin whose robots.txt is not read yet: read first (once per origin per run).
			if (robots) {
				const seed = profiles.get(entry.k)?.seed;
				if (seed && robots.allows(entry.u) === null && !(await robots.load(new URL(entry.u).origin, seed, entry.k)))
					return;
			}
			take(entry);
			if (stoppedBy) {
				if (out.length > 0) yield out;
				return;
			}
			if (out.length >= BATCH) {
				yield out;
				out = [];
			}
		}

		function take(entry: FrontierEntry): void {
			if (entry.d < 0) return;
			const key = urlKey(entry.u);
			if (urls.isClaimed(key.high, key.low)) return;
			const profile = profiles.get(entry.k);
			// The seed whose options it carried is no longer in the job (a resume with --force): not fetched.
			if (!profile) return;
			const target = discoveredTarget(entry, profile);
			// --retry-failed: a link to a page whose latest record is ok is not fetched again.
			if (done?.has(target.id) || retry?.fetchedOk(target.id)) {
				urls.claim(key.high, key.low);
				return;
			}
			urls.claim(key.high, key.low);
			// Journalled under an earlier job file (a resume after `exclude` was added) or by another shard
			// (its inbox): the job's scope now decides. The line stays, so a wider scope later finds it again.
			if (!inScope(entry.u)) return;
			// Journalled as discovered, refused by its host's robots.txt: counted, never fetched.
			if (robots && robots.allows(entry.u) === false) {
				robotsDisallowed += 1;
				return;
			}
			if (handOut(target)) out.push(target);
		}
	}

	/**
	 * --retry-failed: the failed crawled pages go to the frontier at their recorded depth and parent, with
	 * the options of the seed they were found from (the one whose options give their id). Seeds among them
	 * were claimed when read (retried as seeds), and a resume finds the others journalled already.
	 */
	function journalFailedPages(retrying: RetryCrawl): void {
		const candidates = [...profiles.entries()];
		let found: FrontierEntry[] = [];
		for (const page of retrying.pages()) {
			const url = normalizeUrl(page.url);
			if (url === null || !mine(url) || page.depth > spec.maxDepth) continue;
			const profile = candidates.find(([, each]) => createTargetKey(url, each.optionsJson).id === page.id)?.[0];
			// Its seed's options are no longer in the job: not fetched (as a seed no longer listed).
			if (profile === undefined) continue;
			const key = urlKey(url);
			// Seen already: a seed (claimed when read), or journalled by an earlier session of this run.
			if (!urls.see(key.high, key.low)) continue;
			found.push({ u: url, d: page.depth, p: page.parent, k: profile });
			if (found.length >= BATCH) {
				journal(found);
				found = [];
			}
		}
		journal(found);
	}

	/** Links other shards handed to this one go to the frontier (each once; a seed's options must be known). */
	function absorbInbox(): number {
		const handOff = options.handOff;
		if (!handOff) return 0;
		const found: FrontierEntry[] = [];
		for (const entry of handOff.inbox.readNew()) {
			if (!profiles.has(entry.k)) continue;
			const key = urlKey(entry.u);
			if (urls.see(key.high, key.low)) found.push({ u: entry.u, d: entry.d, p: entry.p, k: entry.k });
		}
		journal(found);
		return found.length;
	}

	/** Wait until links arrive (true) or the whole layout is out of work or the run stops (false). */
	async function awaitInbox(): Promise<boolean> {
		const handOff = options.handOff;
		if (!handOff) return false;
		for (;;) {
			if (options.isStopping()) return false;
			if (absorbInbox() > 0) {
				handOff.inbox.setIdle(false);
				return true;
			}
			handOff.inbox.setIdle(true);
			if (handOff.inbox.allSettled(handOff.isRunning)) return false;
			await new Promise((resolve) => setTimeout(resolve, handOff.pollMs ?? 100));
		}
	}

	/**
	 * Whether a page is handed out: a fresh one with its page stored always (it is read, not fetched, and
	 * is no page record: `max_pages` does not count it); any other while `max_pages` leaves room.
	 */
	function handOut(target: Target): boolean {
		const freshPage = options.job.freshPage?.(target) ?? null;
		if (freshPage?.path) {
			target.crawl!.storedPage = freshPage.path;
			fresh += 1;
			busy(target, 1);
			return true;
		}
		if (pagesLeft() <= 0) {
			stoppedBy = "max_pages";
			return false;
		}
		if (freshPage) refetched += 1;
		handedOut += 1;
		busy(target, 1);
		return true;
	}

	/** Count a page handed out (+1) or settled (-1) at its depth. */
	function busy(target: Target, change: 1 | -1): void {
		const depth = target.crawl?.depth ?? 0;
		const count = (outstanding.get(depth) ?? 0) + change;
		if (count > 0) outstanding.set(depth, count);
		else outstanding.delete(depth);
		outstandingTotal += change;
	}

	/**
	 * `sitemaps: true`: each new seed origin's sitemap pages join the frontier as seeds (depth 0, no
	 * parent), journalled file by file (sitemaps.ts). False when the run stops while reading.
	 */
	async function readSitemaps(origins: readonly Target[]): Promise<boolean> {
		if (!options.fetchSitemap) return true;
		for (const seed of origins) {
			const origin = new URL(normalizeUrl(seed.url)!).origin;
			const read = await sitemaps.read(origin, seed, seed.crawl?.profile ?? profileOf(seed));
			if (read === "stopped") return false;
			if (read === "cut") sitemapsCut = true;
		}
		return true;
	}

	return {
		targets,
		pageFetched(target, links, finalUrl) {
			const crawl = target.crawl;
			const found: FrontierEntry[] = [];
			const landed = finalUrl === undefined ? null : normalizeUrl(finalUrl);
			if (crawl && landed !== null && landed !== normalizeUrl(target.url)) {
				// Fetched (and paid) as this page: never fetched again under its own address, even after a resume.
				const key = urlKey(landed);
				if (urls.claim(key.high, key.low))
					found.push({ u: landed, d: crawl.depth, p: target.id, k: crawl.profile, r: 1 });
			}
			if (!crawl || crawl.depth >= spec.maxDepth || links === null) {
				journal(found);
				return;
			}
			const depth = crawl.depth + 1;
			// Deeper entries exist only while the last pages of this page's level finish: a link seen before may
			// have been journalled deeper (from a page of the next level), so an unclaimed one is journalled at this depth too.
			const mayBeDeeper = deepestJournalled > depth;
			const handed = new Map<number, FrontierEntry[]>();
			for (const href of links) {
				const url = follows(href);
				if (url === null) continue;
				const owner = shardOfUrl(url);
				// Another shard's host: handed to it (a crawl without inboxes leaves it out).
				if (shard && owner !== shard.index && !options.handOff) continue;
				const key = urlKey(url);
				if (
					!urls.see(key.high, key.low) &&
					!(mayBeDeeper && owner === (shard?.index ?? 1) && !urls.isClaimed(key.high, key.low))
				)
					continue;
				const entry = { u: url, d: depth, p: target.id, k: crawl.profile };
				if (shard && owner !== shard.index) {
					const list = handed.get(owner) ?? [];
					list.push(entry);
					handed.set(owner, list);
				} else found.push(entry);
			}
			journal(found);
			for (const [owner, entries] of handed) options.handOff?.inbox.handOff(owner, entries);
		},
		settled(target) {
			if (!target.crawl) return;
			busy(target, -1);
			wakeUp?.();
		},
		wake: () => wakeUp?.(),
		summary: () => ({
			pages: pagesBefore + handedOut,
			discovered: urls.size,
			max_depth: spec.maxDepth,
			max_pages: spec.maxPages,
			sitemap_credits: sitemaps.credits + (robots?.credits ?? 0),
			robots_disallowed: robotsDisallowed,
			fresh,
			refetched_for_links: refetched,
			stopped_by: stoppedBy ?? (sitemapsCut ? "max_pages" : null),
		}),
		crawlDelayMs: (host) => robots?.crawlDelayMs(host) ?? 0,
		sync: () => frontier.sync(),
		close: () => {
			options.handOff?.inbox.close();
			frontier.close();
			urls.close();
		},
	};
}
