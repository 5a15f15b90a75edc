import { hash } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { makeDirectory } from "../common/index.js";
import type { Target } from "../job/index.js";
import { CHARGED_UNPAID, type FrontierEntry } from "./frontier-file.js";
import { normalizeUrl, withSeedCredentials } from "./normalize-url.js";
import {
	readRobotsSitemaps,
	readSitemapFile,
	SITEMAP_MAX_BYTES,
	SITEMAP_MAX_LOC_CHARS,
	SITEMAP_MAX_URLS,
	type SitemapBounds,
} from "./sitemap-stream.js";

/**
 * `crawl.sitemaps: true`: a seed origin's robots.txt `Sitemap:` lines (its `/sitemap.xml` when it lists
 * none), sitemap index files followed, at most `MAX_SITEMAP_FILES` sitemap files per origin (a loop or a
 * giant index cannot run away). Every file is fetched through the service (it costs credits).
 *
 * Journalled in frontier.jsonl, per file, so a kill or a budget stop resumes exactly:
 * - `d: -2` a sitemap file to read (`p`: the seed origin it belongs to);
 * - `d: -3` a file paid for (`c`: its credits); its body is kept in the run folder until it is read;
 * - `d: -4` a file read up to its `n`th `<loc>`: the crawl knew `max_pages` URLs (a resume with a
 *   larger `max_pages` reads on from there, in its kept body);
 * - `d: -1` a file read: every URL it lists was journalled before this line.
 * A resume never fetches a file with a `d: -3` line again (it reads the kept body) and reads every
 * queued file without a `d: -1` line. (An older run's `d: -1` line naming an origin marks it read.)
 */
export const MAX_SITEMAP_FILES = 50;

/** The folder in the run folder where fetched robots.txt and sitemap bodies wait to be read. */
export const SITEMAP_BODIES_DIR = "sitemaps";

/** What fetching one robots.txt or sitemap file through the service came to. */
export type SitemapFetchResult =
	/** The body is stored at the path asked for. */
	| { readonly kind: "stored"; readonly credits: number }
	/**
	 * Failed or not there (4xx/5xx): read as listing nothing, paid all the same. `unavailable`: the site
	 * itself answered 4xx (not 429), an answer that stands, where a failure or a 5xx may pass.
	 */
	| { readonly kind: "missing"; readonly credits: number; readonly unavailable?: boolean }
	/**
	 * Not fetched (no budget left, the account refused, the run stopping): left unread for `--resume`.
	 * `credits`: what attempts given up were charged all the same.
	 */
	| { readonly kind: "stopped"; readonly credits?: number };

/** The frontier line of a sitemap file paid for (`c`: its credits). */
export const SITEMAP_PAID = -3;

/** Fetch `url` through the service with `seed`'s options; on success its body is stored at `path`. */
export type SitemapFetch = (url: string, seed: Target, path: string) => Promise<SitemapFetchResult>;

export interface SitemapReaderOptions {
	readonly runDir: string;
	readonly fetch: SitemapFetch;
	readonly append: (entries: readonly FrontierEntry[]) => void;
	/** A page a sitemap lists: its frontier entry (depth 0) when it is followed and new, else null. */
	readonly pageFound: (href: string, profile: string) => FrontierEntry | null;
	readonly isStopping: () => boolean;
	/** False once the crawl knows `max_pages` URLs: further sitemap files are left for a resume. */
	readonly hasRoom: () => boolean;
	/** Resolves once the pages appended so far are counted in `hasRoom` (a fleet adds them to its database). */
	readonly appended?: () => Promise<void>;
	/**
	 * `robots: obey`: the origin's robots.txt as the robots rules fetched it (path of its body, null: none),
	 * so it is paid once; "stopped" when it could not be fetched. Without it, robots.txt is fetched here.
	 */
	readonly robotsFile?: (origin: string, seed: Target, profile: string) => Promise<string | null | "stopped">;
	/** Something the user should know and the crawl goes on from (a file cut at its bound). */
	readonly warn?: (message: string) => void;
	/** Lower bounds than sitemaps.org's, for tests. */
	readonly bounds?: SitemapBounds;
}

/** The warning of a file cut at its bound: which bound, and that the crawl goes on. */
function boundMessage(file: string, bound: "bytes" | "urls", bounds: SitemapBounds | undefined): string {
	const what =
		bound === "bytes"
			? `its first ${((bounds?.maxBytes ?? SITEMAP_MAX_BYTES) / 1024 / 1024).toLocaleString("en-US")} MiB uncompressed`
			: `its first ${(bounds?.maxUrls ?? SITEMAP_MAX_URLS).toLocaleString("en-US")} URLs`;
	return `sitemap ${file} is past the sitemaps.org bound of a file: read up to ${what}, the rest left out`;
}

/** How reading an origin's sitemaps ended. */
export type SitemapsRead = "read" | "stopped" | "cut";

export interface SitemapReader {
	/** A `d < 0` line of the journal, replayed by a resume. */
	remember(entry: FrontierEntry): void;
	/** Read the origin's robots.txt and sitemap files not read yet; pages go to the journal at depth 0. */
	read(origin: string, seed: Target, profile: string): Promise<SitemapsRead>;
	/** Credits the robots.txt and sitemap fetches cost, every session included. */
	readonly credits: number;
}

export function createSitemapReader(options: SitemapReaderOptions): SitemapReader {
	const dir = join(options.runDir, SITEMAP_BODIES_DIR);
	/** Sitemap files queued per seed origin, in the order found (at most MAX_SITEMAP_FILES each). */
	const queued = new Map<string, string[]>();
	const paid = new Set<string>();
	const read = new Set<string>();
	/** Files read part way (`d: -4`): how many of their `<loc>`s were taken. */
	const partly = new Map<string, number>();
	/** Origins an older run marked read as a whole. */
	const originsRead = new Set<string>();
	let credits = 0;

	const bodyPath = (url: string) => join(dir, hash("sha256", url, "hex").slice(0, 24));

	const filesOf = (origin: string): string[] => {
		const files = queued.get(origin);
		if (files) return files;
		const fresh: string[] = [];
		queued.set(origin, fresh);
		return fresh;
	};

	const enqueue = (origin: string, href: string, profile: string, out: FrontierEntry[]) => {
		const url = normalizeUrl(href);
		if (url === null) return;
		const files = filesOf(origin);
		if (files.length >= MAX_SITEMAP_FILES || files.includes(url)) return;
		files.push(url);
		out.push({ u: url, d: -2, p: origin, k: profile });
	};

	/**
	 * One file: fetched and paid once (its `d: -3` line), its body kept until `consume` has journalled
	 * what it lists, then marked read (`d: -1`) and its body removed.
	 */
	const readDocument = async (
		url: string,
		seed: Target,
		profile: string,
		/** Reads the body (null: there is none); returns how many `<loc>`s it took when it stopped part way. */
		consume: (path: string | null) => Promise<number | null>,
	): Promise<SitemapsRead> => {
		const path = bodyPath(url);
		if (!paid.has(url)) {
			if (options.isStopping()) return "stopped";
			makeDirectory(dir);
			const fetched = await options.fetch(withSeedCredentials(url, seed.url), seed, path);
			if (fetched.kind === "stopped") {
				credits += chargedUnpaid(url, profile, fetched, options.append);
				return "stopped";
			}
			options.append([{ u: url, d: SITEMAP_PAID, p: null, k: profile, c: fetched.credits }]);
			paid.add(url);
			credits += fetched.credits;
			if (fetched.kind === "missing") rmSync(path, { force: true });
		}
		// Paid in an earlier session and its body gone: it listed nothing (a failed fetch keeps none).
		const taken = await consume(existsSync(path) ? path : null);
		if (taken !== null) {
			// Cut by max_pages: the body stays for a resume, which reads on after the `<loc>`s taken.
			options.append([{ u: url, d: -4, p: null, k: profile, n: taken }]);
			partly.set(url, taken);
			return "cut";
		}
		options.append([{ u: url, d: -1, p: null, k: profile }]);
		read.add(url);
		rmSync(path, { force: true });
		return "read";
	};

	return {
		remember(entry) {
			if (entry.d === -2 && entry.p !== null) {
				const files = filesOf(entry.p);
				if (!files.includes(entry.u)) files.push(entry.u);
			} else if (entry.d === SITEMAP_PAID) {
				paid.add(entry.u);
				credits += entry.c ?? 0;
			} else if (entry.d === -4) {
				partly.set(entry.u, Math.max(partly.get(entry.u) ?? 0, entry.n ?? 0));
			} else if (entry.d === -1) {
				read.add(entry.u);
				credits += entry.c ?? 0;
				if (URL.canParse(entry.u) && new URL(entry.u).origin === entry.u) originsRead.add(entry.u);
			}
		},
		async read(origin, seed, profile) {
			if (originsRead.has(origin)) return "read";
			const robots = `${origin}/robots.txt`;
			if (!read.has(robots)) {
				const consume = async (path: string | null) => {
					const listed = path === null ? [] : await readRobotsSitemaps(path);
					const out: FrontierEntry[] = [];
					for (const href of listed) enqueue(origin, href, profile, out);
					// The contract: /sitemap.xml when robots.txt names none.
					if (out.length === 0 && !queued.get(origin)?.length) enqueue(origin, `${origin}/sitemap.xml`, profile, out);
					options.append(out);
					return null;
				};
				if (options.robotsFile) {
					// Fetched (and kept) by the robots rules: read here, marked read, never fetched twice.
					const path = await options.robotsFile(origin, seed, profile);
					if (path === "stopped") return "stopped";
					await consume(path);
					options.append([{ u: robots, d: -1, p: null, k: profile }]);
					read.add(robots);
				} else {
					const done = await readDocument(robots, seed, profile, consume);
					if (done !== "read") return done;
				}
			}
			const files = queued.get(origin) ?? [];
			// The queue grows while an index is read: its files are read after the ones before them.
			for (let index = 0; index < files.length; index++) {
				const file = files[index]!;
				if (read.has(file)) continue;
				await options.appended?.();
				if (!options.hasRoom()) return "cut";
				const done = await readDocument(file, seed, profile, async (path) => {
					if (path === null) return null;
					const skip = partly.get(file) ?? 0;
					let taken = 0;
					let cut = false;
					const result = await readSitemapFile(
						path,
						(locs, kind) => {
							const out: FrontierEntry[] = [];
							for (const href of locs) {
								// Taken by an earlier session that stopped part way through this file.
								if (taken++ < skip) continue;
								if (kind === "sitemapindex") enqueue(origin, href, profile, out);
								else {
									const entry = options.pageFound(href, profile);
									if (entry !== null) out.push(entry);
								}
							}
							options.append(out);
							cut = kind === "urlset" && !options.hasRoom();
							return !cut;
						},
						options.bounds,
					);
					if (result.bound !== null && !cut) options.warn?.(boundMessage(file, result.bound, options.bounds));
					if (result.longLocs > 0)
						options.warn?.(
							`sitemap ${file}: ${result.longLocs} <loc> values longer than ${SITEMAP_MAX_LOC_CHARS} characters left out`,
						);
					return cut ? taken : null;
				});
				if (done !== "read") return done;
			}
			return "read";
		},
		get credits() {
			return credits;
		},
	};
}

/**
 * A fetch given up after the service charged it: journalled (`CHARGED_UNPAID`) so a resume counts the
 * credits, though it fetches the file again. Returns the credits.
 */
export function chargedUnpaid(
	url: string,
	profile: string,
	fetched: Extract<SitemapFetchResult, { kind: "stopped" }>,
	append: (entries: readonly FrontierEntry[]) => void,
): number {
	const credits = fetched.credits ?? 0;
	if (credits > 0) append([{ u: url, d: CHARGED_UNPAID, p: null, k: profile, c: credits }]);
	return credits;
}
