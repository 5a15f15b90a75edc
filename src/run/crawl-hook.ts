import { type Crawler, type CrawlerOptions, createCrawler } from "../crawl/index.js";
import type { ParsedPage } from "../extract/index.js";
import { createTargetKey, type Job, type Target } from "../job/index.js";
import type { RunSummary } from "../output/index.js";
import { creditCostRange, type ScrapeParams } from "../shared/index.js";
import type { IdSet } from "./compact-id-set.js";
import type { CreditBudget } from "./credit-budget.js";
import { isHtmlResult, pageHtml } from "./extract-record.js";
import type { FetchResult } from "./fetch-target.js";

/** The run's crawler when the job has `crawl:`; null otherwise. */
export function crawlerFor(
	job: Job,
	runDir: string,
	done: IdSet | null,
	queue: { onIdle(): Promise<void> },
	isStopping: () => boolean,
	fetchText: CrawlerOptions["fetchText"],
	keysInMemory: number | undefined,
): Crawler | null {
	if (!job.crawl) return null;
	return createCrawler({
		job,
		spec: job.crawl,
		runDir,
		done,
		idle: () => queue.onIdle(),
		isStopping,
		fetchText,
		...(keysInMemory !== undefined ? { keysInMemory } : {}),
	});
}

/**
 * robots.txt and sitemaps fetched through the service with a seed's options (`crawl.sitemaps`):
 * inside the budget like any fetch, but not records. A failed or non-2xx fetch reads as nothing.
 */
export function serviceTextFetch(
	fetch: (id: string, params: ScrapeParams) => Promise<FetchResult>,
	budget: CreditBudget,
): NonNullable<CrawlerOptions["fetchText"]> {
	return async (url, seed) => {
		const params: ScrapeParams = { ...seed.params, url };
		const worstCase = creditCostRange(params).max;
		if (!budget.tryReserve(worstCase)) return { text: null, credits: 0 };
		const result = await fetch(`sitemap-${createTargetKey(url, "").id}`, params);
		if (result.kind !== "ok" && result.kind !== "failed") {
			budget.release(worstCase);
			return { text: null, credits: 0 };
		}
		const charged = result.creditsUsed ?? (result.kind === "ok" ? worstCase : 0);
		budget.commit(worstCase, charged);
		const text = result.kind === "ok" && result.httpStatus < 400 ? pageHtml(result) : null;
		return { text, credits: charged };
	};
}

/**
 * A fetched page's links go to the crawl's frontier (before its record is written: a crash between
 * the two loses nothing). The parsed page is returned for extraction: one parse serves both.
 */
export function crawlPage(crawler: Crawler | null, target: Target, result: FetchResult): ParsedPage | undefined {
	if (!crawler || result.kind !== "ok" || !isHtmlResult(target, result)) return undefined;
	return crawler.pageFetched(target, pageHtml(result), result.finalUrl);
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
	summary.targets.total = null;
	summary.targets.remaining = null;
	if (summary.stopped_reason === null) {
		summary.complete = crawl.stopped_by === null;
		// An early end says why, on the terminal and in summary.json (shared/design.md, "Resume, budget, hints").
		if (crawl.stopped_by !== null) summary.stopped_reason = crawl.stopped_by;
	}
}
