import { type Crawler, createCrawler } from "../crawl/index.js";
import type { ParsedPage } from "../extract/index.js";
import type { Job, Target } from "../job/index.js";
import type { RunSummary } from "../output/index.js";
import type { IdSet } from "./compact-id-set.js";
import { isHtmlResult, pageHtml } from "./extract-record.js";
import type { FetchResult } from "./fetch-target.js";

/** The run's crawler when the job has `crawl:`; null otherwise. */
export function crawlerFor(
	job: Job,
	runDir: string,
	done: IdSet | null,
	queue: { onIdle(): Promise<void> },
	isStopping: () => boolean,
): Crawler | null {
	if (!job.crawl) return null;
	return createCrawler({ job, spec: job.crawl, runDir, done, idle: () => queue.onIdle(), isStopping });
}

/**
 * A fetched page's links go to the crawl's frontier (before its record is written: a crash between
 * the two loses nothing). The parsed page is returned for extraction: one parse serves both.
 */
export function crawlPage(crawler: Crawler | null, target: Target, result: FetchResult): ParsedPage | undefined {
	if (!crawler || result.kind !== "ok" || !isHtmlResult(target, result)) return undefined;
	return crawler.pageFetched(target, pageHtml(result));
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
	summary.targets.total = null;
	summary.targets.remaining = null;
	if (summary.stopped_reason === null) summary.complete = crawl.stopped_by === null;
}
