import { creditCostRange, JOB_MODES } from "../common/index.js";
import type { Job, TargetCounts } from "../job/index.js";
import { type CrawlExtraFetches, MAX_SITEMAP_FILES } from "../run/index.js";

/**
 * What `--dry-run` can say about a crawl or map/search sources: the page count is not known before
 * the run, so it names the seeds (listed above it) and the bound: `max_pages` pages at the dearest
 * seed's worst case, against `max_credits`. Empty for other jobs.
 */
export function crawlDryRunLines(job: Job, counts: TargetCounts, extra: CrawlExtraFetches | null): string[] {
	const lines: string[] = [];
	const calls = job.discovery ?? [];
	if (calls.length > 0) {
		const kinds = calls.map((call) => call.kind).join(", ");
		lines.push(
			`${job.name}: ${calls.length} map/search ${calls.length === 1 ? "source" : "sources"} (${kinds}): the URLs they find are known only when the run asks the service (each call is paid then, once per run).`,
		);
	}
	const crawl = job.crawl;
	if (!crawl) return lines;
	const worstPerPage = worstPerPageOf(job, counts);
	const bound = crawlCreditBound(job, counts, extra) ?? 0;
	const budget =
		job.maxCredits === null ? "no max_credits set" : `max_credits ${job.maxCredits} stops it sooner if reached`;
	lines.push(
		`${job.name}: crawl: how many pages it finds cannot be known before it runs. The ${counts.targets === 1 ? "target above is its seed" : `${counts.targets} targets above are its seeds`}; it fetches at most ${crawl.maxPages} pages (max_pages, seeds included), ${crawl.maxDepth} links deep, scope ${crawl.scope}: at most ${bound} credits (${crawl.maxPages} × ${worstPerPage} per page worst case${extra ? `; ${extraWords(job, extra, worstPerPage)}` : ""}; ${budget}).`,
	);
	return lines;
}

/** The robots.txt and sitemap part of the bound, in words. */
function extraWords(job: Job, extra: CrawlExtraFetches, worstPerPage: number): string {
	const what = job.crawl!.sitemaps
		? `its robots.txt and up to ${MAX_SITEMAP_FILES} sitemap files`
		: "its robots.txt (robots: obey)";
	const origins = extra.seedOrigins === 1 ? "1 seed origin" : `${extra.seedOrigins} seed origins`;
	const more = job.crawl!.robots === "obey" ? ", and a robots.txt for each other origin its links reach" : "";
	return `plus ${what} per origin at the same price: ${origins} × ${extra.perOrigin} × ${worstPerPage}${more}`;
}

/**
 * The dearest page a seed's options can cost: every page found from it has the same options. The seeds
 * a map/search source finds are not listed: each is priced at its source's options over `defaults`.
 */
function worstPerPageOf(job: Job, counts: TargetCounts): number {
	let worstPerPage = 0;
	for (const mode of JOB_MODES) {
		const count = counts.byMode[mode];
		if (count > 0) worstPerPage = Math.max(worstPerPage, counts.creditRangeByMode[mode].max / count);
	}
	for (const source of job.discovery ?? []) {
		const mode = source.options.mode ?? job.defaults.mode;
		const proxyType = source.options.proxy_type ?? job.defaults.proxy_type;
		const range = creditCostRange({ ...(mode ? { mode } : {}), ...(proxyType ? { proxy_type: proxyType } : {}) });
		worstPerPage = Math.max(worstPerPage, range.max);
	}
	return worstPerPage;
}

/**
 * A crawl's worst case: max_pages and its seed origins' robots.txt and sitemap files, at the dearest seed's
 * price (the dry run's cost check uses it); null without crawl.
 */
export function crawlCreditBound(job: Job, counts: TargetCounts, extra: CrawlExtraFetches | null): number | null {
	if (!job.crawl) return null;
	const fetches = job.crawl.maxPages + (extra ? extra.seedOrigins * extra.perOrigin : 0);
	return Math.ceil(fetches * worstPerPageOf(job, counts));
}
