/**
 * `POST /scraper/crawl` (docs/service.md, "Map, search and crawl"): discover a domain's pages by following its links from the
 * home page (same host, up to `depth` links away, `url_pattern` filtering, at most `max_urls`), then
 * submit every page as a scraper task polled at `/scraper/tasks/<id>`. Pages are billed at the
 * normal scraper rates of `scraper_config`'s mode, each when its task's fetch succeeds; the crawl
 * itself costs nothing. The page fetches share the key's credits and concurrency slots.
 */
import { checkScrapeParams, compileUserRegex, type Mode, type UserRegex } from "../common/index.js";
import type { BackgroundJob } from "./background-jobs.js";
import type { EmulatorContext } from "./context.js";
import { fetchText, intIn, siteBase } from "./discovery.js";
import { isTruthy, timestamp } from "./http-io.js";
import type { LedgerEntry } from "./ledger.js";
import type { Params } from "./saved-items.js";
import { resolveSavedReferences } from "./saved-references.js";
import { readRenderOptions } from "./scrape-render.js";
import { worstCaseCost } from "./scrape-run.js";
import { insufficientCreditsBody, scrapeInBackground } from "./scrape-start.js";
import { toTaskResult } from "./task-result.js";
import type { Task } from "./tasks.js";

export const CRAWL_MAX_URLS = 10_000;
export const CRAWL_MAX_DEPTH = 10;
/** `depth` when the request leaves it out (docs/service.md, "Map, search and crawl"). */
const DEFAULT_DEPTH = 1;

/** A crawl request, checked. */
export interface CrawlPlan {
	readonly domain: string;
	readonly maxUrls: number;
	readonly depth: number;
	readonly pattern: UserRegex | null;
	/** The realtime parameters every page is fetched with (saved references resolved, no `url`). */
	readonly scrape: Params;
	readonly mode: Mode;
}

export type CrawlCheck = { readonly plan: CrawlPlan } | { readonly problems: string[] };

export function checkCrawl(params: Params, ctx: EmulatorContext): CrawlCheck {
	const problems: string[] = [];
	const domain = params.domain;
	if (typeof domain !== "string" || domain.trim() === "") problems.push("domain: field required");
	else if (/^https?:\/\//i.test(domain) && !URL.canParse(domain)) problems.push("domain: invalid URL format");
	const maxUrls = intIn(params.max_urls, 1, CRAWL_MAX_URLS);
	if (params.max_urls === undefined) problems.push("max_urls: field required");
	else if (maxUrls === null) problems.push(`max_urls: must be a whole number from 1 to ${CRAWL_MAX_URLS}`);
	const depth = params.depth === undefined ? DEFAULT_DEPTH : intIn(params.depth, 0, CRAWL_MAX_DEPTH);
	if (depth === null) problems.push(`depth: must be a whole number from 0 to ${CRAWL_MAX_DEPTH}`);
	// RE2, as the job file's regexes: V8's engine over a nested quantifier held the loop (the run's, in --sandbox).
	let pattern: UserRegex | null = null;
	if (params.url_pattern !== undefined) {
		try {
			pattern = compileUserRegex(String(params.url_pattern));
		} catch {
			problems.push("url_pattern: not a valid regular expression");
		}
	}
	let scrape: Params = {};
	const config = params.scraper_config;
	if (config !== undefined && (typeof config !== "object" || config === null || Array.isArray(config))) {
		problems.push("scraper_config: must be an object of scraper parameters");
	} else if (config !== undefined) {
		const resolved = resolveSavedReferences(ctx.saved, config as Params);
		const { url: _url, async: _async, ...rest } = resolved.params;
		scrape = rest;
		for (const problem of checkScrapeParams({ ...scrape, url: "https://crawl.invalid/" })) {
			problems.push(`scraper_config.${problem.param}: ${problem.problem}`);
		}
		for (const problem of resolved.problems) problems.push(`scraper_config.${problem}`);
	}
	const webhook = params.webhook;
	if (webhook !== undefined && (typeof webhook !== "object" || webhook === null || Array.isArray(webhook))) {
		problems.push("webhook: must be an object with url");
	}
	if (problems.length > 0 || typeof domain !== "string" || maxUrls === null || depth === null) return { problems };
	return {
		plan: { domain: domain.trim(), maxUrls, depth, pattern, scrape, mode: (scrape.mode ?? "auto") as Mode },
	};
}

/** The credits one page needs at most: a crawl that cannot pay for its first page answers 402. */
export function crawlRefusal(ctx: EmulatorContext, plan: CrawlPlan): Params | null {
	const onePage = worstCaseCost(ctx.config.costs, plan.mode, plan.scrape.proxy_type === "datacenter");
	return ctx.credits.available < onePage ? insufficientCreditsBody(ctx, onePage) : null;
}

function linksOf(html: string, page: string): string[] {
	const links: string[] = [];
	for (const match of html.matchAll(/<a\s[^>]*href\s*=\s*["']([^"']+)["']/gi)) {
		try {
			const url = new URL(match[1]!, page);
			url.hash = "";
			if (url.protocol === "http:" || url.protocol === "https:") links.push(url.href);
		} catch {
			// Not a URL: not a page.
		}
	}
	return links;
}

/** Breadth first from the start page, same host only: level 0 is the start page, level n is n links away. */
export async function discoverPages(plan: CrawlPlan, signal: AbortSignal): Promise<string[]> {
	const start = new URL(`${siteBase(plan.domain)}/`).href;
	const host = new URL(start).host;
	const seen = new Set([start]);
	const found: string[] = [];
	let level = [start];
	for (let depth = 0; level.length > 0 && found.length < plan.maxUrls; depth++) {
		const next: string[] = [];
		for (const page of level) {
			if (!plan.pattern || plan.pattern.test(page)) found.push(page);
			if (found.length >= plan.maxUrls) break;
			if (depth >= plan.depth) continue;
			for (const link of linksOf((await fetchText(page, signal)) ?? "", page)) {
				if (new URL(link).host !== host || seen.has(link)) continue;
				seen.add(link);
				next.push(link);
			}
		}
		level = next;
	}
	return found;
}

/**
 * One scraper task per page, fetched in the background by as many workers as the key has slots; the
 * returned results are what the crawl answers.
 */
export function submitPages(
	ctx: EmulatorContext,
	key: string,
	plan: CrawlPlan,
	urls: readonly string[],
	entry: LedgerEntry,
): Params[] {
	const tasks = urls.map((url) => ctx.tasks.create(key, url, plan.mode));
	const render = readRenderOptions(plan.scrape, isTruthy);
	let next = 0;
	const worker = async () => {
		for (let task: Task | undefined = tasks[next++]; task; task = tasks[next++]) {
			const outcome = await scrapeInBackground(ctx, {
				key,
				url: task.url,
				mode: plan.mode,
				datacenter: plan.scrape.proxy_type === "datacenter",
				extraHeaders: null,
				entry,
			});
			ctx.tasks.finish(
				task,
				outcome.kind === "not-started"
					? { status: "failed", error: "Not started", message: outcome.message, modeUsed: plan.mode }
					: toTaskResult(ctx, outcome, render),
			);
		}
	};
	const workers = Math.max(1, Math.min(ctx.slots.limit, tasks.length));
	for (let index = 0; index < workers; index++) void worker();
	return tasks.map((task) => ({
		url: task.url,
		source: "crawl",
		scrape_task_id: task.id,
		scrape_check_url: `/api/v1/scraper/tasks/${task.id}`,
	}));
}

/** The crawl's answer (docs/service.md, "Map, search and crawl"); `credits_used` is 0: each page is charged when its task's fetch succeeds. */
export function crawlBody(ctx: EmulatorContext, plan: CrawlPlan, results: Params[]): Params {
	return {
		success: true,
		domain: plan.domain,
		discovered_count: results.length,
		scraper_tasks_submitted: results.length,
		results,
		credits_used: 0,
		credits_remaining: ctx.credits.balance,
	};
}

/** Discover and submit: the whole crawl, for an answer now or for an async crawl task. */
export async function runCrawl(ctx: EmulatorContext, key: string, plan: CrawlPlan, entry: LedgerEntry) {
	const urls = await discoverPages(plan, ctx.signal);
	return crawlBody(ctx, plan, submitPages(ctx, key, plan, urls, entry));
}

/** `GET /scraper/crawl/tasks/<id>`: processing, then the crawl's answer with the task's id and status. */
export function crawlTaskBody(job: BackgroundJob<Params>): Params {
	if (job.status === "processing" || job.result === null) {
		return {
			success: true,
			task_id: job.id,
			status: "processing",
			message: "Crawl is still discovering pages. Check again shortly.",
			check_url: `/api/v1/scraper/crawl/tasks/${job.id}`,
			timestamp: timestamp(),
		};
	}
	return { ...job.result, task_id: job.id, status: job.status, timestamp: timestamp() };
}
