import { readdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { BodySpill } from "../../api/index.js";
import { creditCostRange, readRegularFile, type ScrapeParams, writeFileAtomic } from "../../common/index.js";
import {
	type Crawler,
	createCrawler,
	FRONTIER_FILE,
	openShardInbox,
	readLandings,
	type SitemapBounds,
	type SitemapFetch,
} from "../../crawl/index.js";
import { createTargetKey, type Job, type Target } from "../../job/index.js";
import { OutputError, openBodyFile, type RunSummary } from "../../output/index.js";
import type { CreditBudget } from "../flow/credit-budget.js";
import type { ShardPeers } from "../locks/shard-peers.js";
import type { IdSet } from "../records/compact-id-set.js";
import { pageHtml } from "./extract-record.js";
import type { FetchResult } from "./fetch-target.js";

/** The run's crawler when the job has `crawl:`; null otherwise. */
export function crawlerFor(
	job: Job,
	runDir: string,
	done: IdSet | null,
	isStopping: () => boolean,
	fetchSitemap: SitemapFetch,
	keysInMemory: number | undefined,
	peers: ShardPeers | null = null,
	/** A robots.txt or sitemap cut at its bound: the run's warning (run.log and the terminal). */
	warn?: (message: string) => void,
	sitemapBounds?: SitemapBounds,
	/** The lock's lease, ms: a shard of the layout not running yet is waited for this long. @default 30 s */
	leaseMs?: number,
): Crawler | null {
	if (!job.crawl) return null;
	// A sharded crawl hands links across shards through inboxes in the job's folder (shared by all shards).
	const handOff =
		job.shard && peers
			? {
					inbox: openShardInbox(dirname(runDir), job.shard, basename(runDir), done !== null, {
						startGraceMs: leaseMs ?? DEFAULT_START_GRACE_MS,
					}),
					// Read the locks now, not the copy of up to 250 ms ago: a shard that started since would look
					// ended (its inbox state is there, its lock not yet in the copy), and this one would end
					// before the links it is about to hand over (asked only while this shard is out of work).
					isRunning: (index: number) => peers.refresh().includes(index),
				}
			: undefined;
	return createCrawler({
		...(handOff ? { handOff } : {}),
		job,
		spec: job.crawl,
		runDir,
		done,
		isStopping,
		fetchSitemap,
		...(warn ? { warn } : {}),
		...(sitemapBounds ? { sitemapBounds } : {}),
		...(keysInMemory !== undefined ? { keysInMemory } : {}),
		...(job.crawl.robots === "obey" ? { earlierRunDirs: otherRunDirs(runDir) } : {}),
	});
}

/** The job's run folders beside `runDir` (shards and fleet workers' folders included), not `runDir` itself. */
function otherRunDirs(runDir: string): string[] {
	const jobDir = dirname(runDir);
	try {
		return readdirSync(jobDir, { withFileTypes: true })
			.filter((entry) => entry.isDirectory() && entry.name !== basename(runDir))
			.map((entry) => join(jobDir, entry.name));
	} catch {
		return [];
	}
}

/** What the runner lends the sitemap fetches: its fetch, its budget, and its stop. */
export interface SitemapFetchDeps {
	/** One fetch through the service (retries, 429s, outages as for any target); large bodies go to `spill`. */
	fetch(id: string, params: ScrapeParams, spill: BodySpill): Promise<FetchResult>;
	/** Book the worst case (waiting for in-flight fetches to settle); false when it cannot fit: the run stops. */
	reserve(worstCase: number): Promise<boolean>;
	budget: CreditBudget;
	/** The account refused (401/402/403): the run stops as it would for a page. */
	stop(reason: "unauthorized" | "insufficient_credits" | "forbidden", message: string): void;
	/** A paid body that could not be stored (`OutputError`): the run stops as for any output failure (exit 5). */
	outputFailed(error: OutputError): void;
}

/**
 * robots.txt and sitemaps fetched through the service with a seed's options (`crawl.sitemaps`):
 * inside the budget like any fetch, but not records. The body goes to `path` (past a few KiB straight
 * from the socket, never whole in memory); a failed or non-2xx fetch is "missing" (paid, lists nothing).
 */
export function serviceSitemapFetch(deps: SitemapFetchDeps): SitemapFetch {
	return async (url, seed, path) => {
		// `mode: adaptive` is the runner's, not the service's: robots.txt and sitemaps go as a plain request.
		const params: ScrapeParams =
			seed.params.mode === "adaptive" ? { ...seed.params, url, mode: "request" } : { ...seed.params, url };
		const worstCase = creditCostRange(params).max;
		if (!(await deps.reserve(worstCase))) return { kind: "stopped" };
		const result = await deps.fetch(`sitemap-${createTargetKey(url, "").id}`, params, {
			afterBytes: SITEMAP_IN_MEMORY_BYTES,
			open: () => openBodyFile(dirname(path)),
		});
		if (result.kind === "aborted") deps.stop(result.reason, `stopping: ${result.message}`);
		if (result.kind !== "ok" && result.kind !== "failed") {
			// Given up, but what its attempts were charged is spent (an answer that said nothing: its worst case).
			const charged = result.charged + (result.kind === "output_failed" ? (result.answer ?? worstCase) : 0);
			if (charged === 0) deps.budget.release(worstCase);
			else deps.budget.commit(worstCase, charged);
			if (result.kind === "output_failed") deps.outputFailed(new OutputError(result.path, result.cause));
			return { kind: "stopped", credits: charged };
		}
		const charged = result.creditsUsed ?? (result.kind === "ok" ? worstCase : 0);
		deps.budget.commit(worstCase, charged);
		if (result.kind !== "ok" || result.httpStatus >= 400) {
			if (result.kind === "ok" && result.spilled?.stored) rmSync(result.spilled.stored, { force: true });
			// The site's own 4xx (a 404: no robots.txt) is an answer; a failed fetch or a 5xx is not.
			const siteStatus = result.kind === "ok" || result.error.startsWith("target_http_") ? result.httpStatus : null;
			const unavailable = siteStatus !== null && siteStatus >= 400 && siteStatus < 500 && siteStatus !== 429;
			return { kind: "missing", credits: charged, ...(unavailable ? { unavailable } : {}) };
		}
		// Written under a temporary name, then renamed: the stored body is whole or absent.
		try {
			if (result.spilled?.stored) renameSync(result.spilled.stored, path);
			else writeFileAtomic(path, result.json ? pageHtml(result) : result.body);
		} catch (error) {
			if (result.spilled?.stored) rmSync(result.spilled.stored, { force: true });
			// Paid and not stored: the run stops like any output failure (docs/behaviour.md, "Stops"),
			// and the file is booked as paid and listing nothing, so its credits are in the summary.
			deps.outputFailed(new OutputError(path, error));
			return { kind: "missing", credits: charged };
		}
		return { kind: "stored", credits: charged };
	};
}

/** A sitemap body past this size is written to its file as it arrives. */
const SITEMAP_IN_MEMORY_BYTES = 64 * 1024;

/** Where a finished run's crawled pages' redirects ended (page id → address), from its `frontier.jsonl`. */
export function runRedirectLandings(runDir: string): Map<string, string> {
	return readLandings(join(runDir, FRONTIER_FILE));
}

/**
 * A fresh crawled page (`freshness:`) whose page is stored: the HTML its links are read from (in the
 * page pool, like a fetched page's). A file gone or larger than `max_body_mb` reads as none (the page
 * is fresh all the same).
 */
export function storedPageHtml(target: Target, maxBodyBytes: number | undefined): string | null {
	const path = target.crawl?.storedPage;
	if (path === undefined) return null;
	try {
		// A FIFO or device put in its place is not read (it would block or never end).
		return readRegularFile(path, maxBodyBytes ?? Number.MAX_SAFE_INTEGER).toString("utf8");
	} catch {
		return null;
	}
}

/**
 * A crawl's summary: how many pages and links, and whether it stopped at `max_pages` with pages
 * left (then it is not complete, and `--resume` with a larger `max_pages` goes on). Its total is
 * not known in advance.
 */
export function addCrawlSummary(summary: RunSummary, crawler: Crawler | null): void {
	if (!crawler) return;
	const crawl = crawler.summary();
	summary.crawl = crawl;
	summary.credits.used += crawl.sitemap_credits;
	if (crawl.fresh > 0) summary.targets.fresh = (summary.targets.fresh ?? 0) + crawl.fresh;
	summary.targets.total = null;
	summary.targets.remaining = null;
	if (summary.stopped_reason === null) {
		// Pages an open breaker parked have no record yet: `--resume` fetches them and follows their links.
		const parked = summary.breakers?.some((breaker) => breaker.parked > 0) ?? false;
		summary.complete = crawl.stopped_by === null && !parked;
		// An early end says why, on the terminal and in summary.json (docs/behaviour.md, "Summaries and hints").
		if (crawl.stopped_by !== null) summary.stopped_reason = crawl.stopped_by;
	}
}

/** The job with every shard's targets: a sharded crawl's seed stream (the crawler keeps its own shard's). */
export function unshardedJob(job: Job): Job {
	const { shard: _shard, ...unsharded } = job;
	return unsharded;
}

/** A shard of the layout not running yet is waited for this long when no lease is given (the lock's default). */
const DEFAULT_START_GRACE_MS = 30_000;
