import { creditCostRange, JOB_MODES } from "../common/index.js";
import type { Job, TargetCounts } from "../job/index.js";

/**
 * What `--dry-run` can say about a crawl or map/search sources: the page count is not known before
 * the run, so it names the seeds (listed above it) and the bound: `max_pages` pages at the dearest
 * seed's worst case, against `max_credits`. Empty for other jobs.
 */
export function crawlDryRunLines(job: Job, counts: TargetCounts): string[] {
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
	const bound = crawlCreditBound(job, counts) ?? 0;
	const budget =
		job.maxCredits === null ? "no max_credits set" : `max_credits ${job.maxCredits} stops it sooner if reached`;
	lines.push(
		`${job.name}: crawl: how many pages it finds cannot be known before it runs. The ${counts.targets === 1 ? "target above is its seed" : `${counts.targets} targets above are its seeds`}; it fetches at most ${crawl.maxPages} pages (max_pages, seeds included), ${crawl.maxDepth} links deep, scope ${crawl.scope}: at most ${bound} credits (${crawl.maxPages} × ${worstPerPage} per page worst case; ${budget}).`,
	);
	return lines;
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

/** A crawl's worst case: max_pages at the dearest seed's price (the dry run's cost check uses it); null without crawl. */
export function crawlCreditBound(job: Job, counts: TargetCounts): number | null {
	return job.crawl ? Math.ceil(job.crawl.maxPages * worstPerPageOf(job, counts)) : null;
}
