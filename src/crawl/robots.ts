import { hash } from "node:crypto";
import {
	closeSync,
	copyFileSync,
	existsSync,
	fstatSync,
	openSync,
	readSync,
	rmSync,
	statSync,
	utimesSync,
} from "node:fs";
import { basename, join } from "node:path";
import { makeDirectory, writeFileAtomic } from "../common/index.js";
import type { Target } from "../job/index.js";
import type { FrontierEntry } from "./frontier-file.js";
import { withSeedCredentials } from "./normalize-url.js";
import { parseRobotsRules, ROBOTS_MAX_BYTES, type RobotsRules } from "./robots-rules.js";
import { chargedUnpaid, type SitemapFetch } from "./sitemaps.js";

/** The group a robots.txt names for scrapejob; without one, its `*` group applies. */
export const ROBOTS_USER_AGENT = "scrapejob";

/** The folder in the run folder where each host's robots.txt is kept for the run (a resume reads it, unpaid). */
export const ROBOTS_DIR = "robots";

/** The frontier line of a robots.txt paid for (`c`: its credits); its body is in `robots/`. */
export const ROBOTS_PAID = -5;

export interface RobotsOptions {
	readonly runDir: string;
	readonly fetch: SitemapFetch;
	readonly append: (entries: readonly FrontierEntry[]) => void;
	/** A robots.txt cut at its bound, or too costly to match a URL against: the crawl goes on. */
	readonly warn?: (message: string) => void;
	/**
	 * The job's other run folders: a robots.txt one of them stored less than `ROBOTS_REUSE_MS` ago is read
	 * from there instead of being paid for again.
	 */
	readonly earlierRunDirs?: readonly string[];
}

/**
 * How long a robots.txt stored by an earlier run of the job is used instead of a new fetch: RFC 9309 §2.4
 * asks crawlers not to use a cached copy for more than 24 hours.
 */
export const ROBOTS_REUSE_MS = 24 * 60 * 60 * 1000;
/** How far ahead of this clock a stored robots.txt's time may be and still count as young (hosts' clocks drift). */
const ROBOTS_CLOCK_SKEW_MS = 5 * 60 * 1000;

/**
 * The folders among `runDirs` whose `robots/` changed in the last `ROBOTS_REUSE_MS` (one stat each),
 * newest first: only those can hold a robots.txt young enough to use.
 */
function recentRobotsDirs(runDirs: readonly string[], now: number): string[] {
	const recent: { dir: string; at: number }[] = [];
	for (const runDir of runDirs) {
		const dir = join(runDir, ROBOTS_DIR);
		try {
			const at = statSync(dir).mtimeMs;
			if (now - at < ROBOTS_REUSE_MS) recent.push({ dir, at });
		} catch {
			// No robots.txt kept there.
		}
	}
	return recent.sort((a, b) => b.at - a.at).map((entry) => entry.dir);
}

/**
 * The first `ROBOTS_MAX_BYTES` of a stored robots.txt, cut after its last whole line (a rule cut in two
 * would say something else), and its size when it was longer.
 */
export function readRobotsBody(path: string): { body: string; cutFrom: number | null } {
	const fd = openSync(path, "r");
	try {
		const size = fstatSync(fd).size;
		const buffer = Buffer.alloc(Math.min(size, ROBOTS_MAX_BYTES));
		const read = readSync(fd, buffer, 0, buffer.length, 0);
		if (size <= ROBOTS_MAX_BYTES) return { body: buffer.toString("utf8", 0, read), cutFrom: null };
		const lastBreak = Math.max(buffer.lastIndexOf(0x0a, read - 1), buffer.lastIndexOf(0x0d, read - 1));
		return { body: buffer.toString("utf8", 0, lastBreak === -1 ? 0 : lastBreak), cutFrom: size };
	} finally {
		closeSync(fd);
	}
}

/**
 * `crawl.robots: obey`: each crawled origin's robots.txt, fetched through the service once per run (its
 * credits counted, journalled so a resume neither pays again nor forgets it) unless a run of the job
 * stored it less than a day ago (`earlierRunDirs`), and kept in memory as rules.
 * A robots.txt that is missing or failed allows everything. `Crawl-delay` (seconds) is read per host.
 */
export interface Robots {
	/** A `d: -5` line of the journal, replayed by a resume. */
	remember(entry: FrontierEntry): void;
	/** Fetch (or read back) `origin`'s robots.txt with `seed`'s options; false: not fetched (the run is stopping). */
	load(origin: string, seed: Target, profile: string): Promise<boolean>;
	/** Whether `url` may be fetched; null while its origin's robots.txt is not loaded. */
	allows(url: string): boolean | null;
	/** The kept body of `origin`'s robots.txt (null: none), once loaded: the sitemap reader reads its `Sitemap:` lines. */
	bodyPath(origin: string): string | null;
	/** `Crawl-delay` of `host` (`new URL(u).host`) in ms; 0 without one. */
	crawlDelayMs(host: string): number;
	/** Credits the robots.txt fetches cost, every session included. */
	readonly credits: number;
}

/** `scheme://host[:port]` of a normalized URL, without parsing it again (the crawl asks per link). */
function originOf(url: string): string {
	const slash = url.indexOf("/", url.indexOf("//") + 2);
	const origin = slash === -1 ? url : url.slice(0, slash);
	// A seed's userinfo (`user:pass@`) is not part of its origin.
	return origin.includes("@") ? new URL(url).origin : origin;
}

export function createRobots(options: RobotsOptions): Robots {
	const dir = join(options.runDir, ROBOTS_DIR);
	const paid = new Set<string>();
	const rules = new Map<string, RobotsRules | null>();
	const delays = new Map<string, number>();
	const loading = new Map<string, Promise<boolean>>();
	/** Origins already warned of a URL too costly to match (once each). */
	const overBudget = new Set<string>();
	let credits = 0;

	const pathOf = (origin: string) => join(dir, `${hash("sha256", origin, "hex").slice(0, 24)}.txt`);
	const robotsUrl = (origin: string) => `${origin}/robots.txt`;

	const parse = (origin: string) => {
		const path = pathOf(origin);
		const read = existsSync(path) ? readRobotsBody(path) : null;
		if (read?.cutFrom != null) {
			options.warn?.(
				`${robotsUrl(origin)} is ${(read.cutFrom / 1024 / 1024).toFixed(1)} MiB: its first ${ROBOTS_MAX_BYTES / 1024} KiB read (RFC 9309), the rest ignored`,
			);
		}
		const parsed = read === null ? null : parseRobotsRules(read.body);
		rules.set(origin, parsed);
		const delay = parsed?.crawlDelay(ROBOTS_USER_AGENT);
		if (delay !== undefined && Number.isFinite(delay) && delay > 0) {
			// At most a minute between fetches: a robots.txt cannot stall a run for hours per page.
			delays.set(new URL(origin).host, Math.min(delay, 60) * 1000);
		}
	};

	let recentDirs: string[] | null = null;
	/**
	 * Copy a robots.txt an earlier run stored less than a day ago (its fetch time kept, so a copy of a copy
	 * ages as the first one did); false when none is young enough. Only a stored body is used (a site's
	 * 4xx is stored empty): a failed one is asked for again.
	 */
	const reuseEarlier = (path: string): boolean => {
		recentDirs ??= recentRobotsDirs(options.earlierRunDirs ?? [], Date.now());
		for (const earlierDir of recentDirs) {
			const earlier = join(earlierDir, basename(path));
			try {
				const stored = statSync(earlier);
				const age = Date.now() - stored.mtimeMs;
				// A time ahead of this clock (another host's, a restored copy) says nothing of the file's age.
				if (!stored.isFile() || age >= ROBOTS_REUSE_MS || age < -ROBOTS_CLOCK_SKEW_MS) continue;
				copyFileSync(earlier, path);
				utimesSync(path, stored.atime, stored.mtime);
				return true;
			} catch {
				// Not kept there, or gone meanwhile: the next folder, or a fetch.
			}
		}
		return false;
	};

	const fetchOnce = async (origin: string, seed: Target, profile: string): Promise<boolean> => {
		const url = robotsUrl(origin);
		if (!paid.has(url)) {
			makeDirectory(dir);
			const path = pathOf(origin);
			if (reuseEarlier(path)) {
				// Journalled at no cost: a resume reads the copy, and pays nothing either.
				options.append([{ u: url, d: ROBOTS_PAID, p: null, k: profile, c: 0 }]);
				paid.add(url);
				parse(origin);
				return true;
			}
			const fetched = await options.fetch(withSeedCredentials(url, seed.url), seed, path);
			if (fetched.kind === "stopped") {
				credits += chargedUnpaid(url, profile, fetched, options.append);
				return false;
			}
			// Booked before anything else can fail: what the service charged is in the journal and the summary.
			options.append([{ u: url, d: ROBOTS_PAID, p: null, k: profile, c: fetched.credits }]);
			paid.add(url);
			credits += fetched.credits;
			// A robots.txt the site says it has none of (4xx) allows everything, as an empty one does (RFC 9309
			// §2.3.1.3): kept as an empty file, so that later runs read that answer too. Any other failure is not kept.
			if (fetched.kind === "missing") {
				if (fetched.unavailable) writeFileAtomic(path, "");
				else rmSync(path, { force: true });
			}
		}
		parse(origin);
		return true;
	};

	return {
		remember(entry) {
			if (entry.d !== ROBOTS_PAID || paid.has(entry.u)) return;
			paid.add(entry.u);
			credits += entry.c ?? 0;
		},
		load(origin, seed, profile) {
			if (rules.has(origin)) return Promise.resolve(true);
			let pending = loading.get(origin);
			if (!pending) {
				pending = fetchOnce(origin, seed, profile).finally(() => loading.delete(origin));
				loading.set(origin, pending);
			}
			return pending;
		},
		allows(url) {
			const origin = originOf(url);
			if (!rules.has(origin)) return null;
			const parsed = rules.get(origin);
			if (!parsed) return true;
			const allowed = parsed.allows(url, ROBOTS_USER_AGENT);
			if (allowed !== "budget") return allowed;
			if (!overBudget.has(origin)) {
				overBudget.add(origin);
				options.warn?.(
					`${robotsUrl(origin)}: matching a ${url.length}-character URL against its rules passed its bound; such links are not followed`,
				);
			}
			return false;
		},
		bodyPath(origin) {
			const path = pathOf(origin);
			return existsSync(path) ? path : null;
		},
		crawlDelayMs: (host) => delays.get(host) ?? 0,
		get credits() {
			return credits;
		},
	};
}
