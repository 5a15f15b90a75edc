/**
 * The crawl row of `npm run bench` (`--only=crawl`, issue #13): the client's cost of crawling a
 * generated site of 100,000 pages (`--quick`: 10,000) at zero latency — no network, so what is
 * measured is scrapejob's own work per page: parse, links (`<a>`, `<link rel=next>`, `<base>`),
 * normalization, scope and filters, the seen/claimed sets and the journalled frontier.
 *
 * The pages are the demo site's link graph (src/emulator/link-graph.ts: cycles, query-order variants,
 * a calendar trap excluded by the job, redirects, dead and off-site links). Figures: CPU (user +
 * system) per page fetched and per URL discovered, link extraction alone per page, peak RSS.
 * Judged against the list runner's figure (bench row cpu: ≤ 0.5 ms per target) and the runner's
 * memory goal (512 MB).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileUserRegex } from "../src/common/index.js";
import { createCrawler } from "../src/crawl/index.js";
import { graphPage } from "../src/emulator/link-graph.js";
import { extractLinks, parseHtml, streamLinks } from "../src/extract/index.js";
import type { CrawlSpec, Job, Target } from "../src/job/index.js";

const SITE = "http://bench.example";
const MEMORY_GOAL_MB = 512;
const CPU_GOAL_MS_PER_PAGE = 0.5;

export interface CrawlBenchRow {
	readonly pages: number;
	readonly fetched: number;
	readonly discovered: number;
	readonly cpuMsPerPage: number;
	readonly cpuUsPerDiscovered: number;
	readonly linksMsPerPage: number;
	/** The same pages' links read through a tree (a crawl that also extracts fields). */
	readonly treeLinksMsPerPage: number;
	readonly peakRssMb: number;
	readonly verdicts: Array<{ target: string; measured: string; met: boolean }>;
}

function cpuMs(): number {
	const usage = process.cpuUsage();
	return (usage.user + usage.system) / 1000;
}

function htmlFor(url: string, pages: number): string | null {
	const match = /\/graph\/(\d+)$/.exec(new URL(url).pathname);
	const n = match ? Number(match[1]) : 0;
	return n >= 1 && n <= pages ? graphPage(n, pages) : null;
}

/** A crawler of the generated graph site from its first page, as the runner would drive it. */
function graphCrawl(job: Job, spec: CrawlSpec, runDir: string) {
	const crawler = createCrawler({ job, spec, runDir, done: null, isStopping: () => false });
	const seed: Target = {
		id: "seed",
		url: `${SITE}/graph/1`,
		params: { url: `${SITE}/graph/1`, mode: "request" },
		origin: { file: "bench", line: 1, col: 1 },
	};
	async function* seeds(): AsyncIterable<Target[]> {
		yield [seed];
	}
	return { crawler, seeds };
}

export async function benchCrawl(
	quick: boolean,
	log: (line: string) => void,
	pagesWanted: number | null = null,
): Promise<CrawlBenchRow> {
	const pages = pagesWanted ?? (quick ? 10_000 : 100_000);
	const runDir = mkdtempSync(join(tmpdir(), "scrapejob-crawl-bench-"));
	try {
		// Link extraction alone, on a sample of pages (no crawl bookkeeping): as a page read only for its
		// links is read (streamed, no tree), and through a tree, as when a field or a CSS block signature needs one.
		const sample = Array.from({ length: 2000 }, (_, index) => graphPage(((index * 37) % pages) + 1, pages));
		const treeStart = cpuMs();
		for (const [index, html] of sample.entries()) extractLinks(parseHtml(html, `${SITE}/graph/${index + 1}`));
		const treeLinksMsPerPage = (cpuMs() - treeStart) / sample.length;
		const linksStart = cpuMs();
		for (const [index, html] of sample.entries()) streamLinks(html, `${SITE}/graph/${index + 1}`);
		const linksMsPerPage = (cpuMs() - linksStart) / sample.length;

		const spec: CrawlSpec = {
			maxDepth: 1_000_000,
			maxPages: pages * 10,
			scope: "host",
			include: [],
			exclude: [compileUserRegex("/calendar/")],
			sitemaps: false,
			robots: "ignore",
		};
		const job = { crawl: spec } as unknown as Job;
		const { crawler, seeds } = graphCrawl(job, spec, runDir);
		log(`crawl: ${pages} pages…`);
		let fetched = 0;
		const started = cpuMs();
		for await (const batch of crawler.targets(seeds())) {
			for (const target of batch) {
				fetched += 1;
				const html = htmlFor(target.url, pages);
				if (html !== null) crawler.pageFetched(target, streamLinks(html, target.url));
				crawler.settled(target);
			}
		}
		const cpu = cpuMs() - started;
		const summary = crawler.summary();
		crawler.close();
		const peakRssMb = process.resourceUsage().maxRSS / 1024;
		const cpuMsPerPage = cpu / fetched;
		return {
			pages,
			fetched,
			discovered: summary.discovered,
			cpuMsPerPage,
			cpuUsPerDiscovered: (cpu * 1000) / summary.discovered,
			linksMsPerPage,
			treeLinksMsPerPage,
			peakRssMb,
			verdicts: [
				{
					target: `CPU ≤ ${CPU_GOAL_MS_PER_PAGE} ms per page (the list runner's cpu row)`,
					measured: `${cpuMsPerPage.toFixed(3)} ms`,
					met: cpuMsPerPage <= CPU_GOAL_MS_PER_PAGE,
				},
				{
					target: "link extraction well under 1 ms per page",
					measured: `${linksMsPerPage.toFixed(3)} ms`,
					met: linksMsPerPage < 1,
				},
				{
					target: `peak RSS ≤ ${MEMORY_GOAL_MB} MB`,
					measured: `${peakRssMb.toFixed(0)} MB`,
					met: peakRssMb <= MEMORY_GOAL_MB,
				},
			],
		};
	} finally {
		rmSync(runDir, { recursive: true, force: true });
	}
}

export function formatCrawlRow(row: CrawlBenchRow): string {
	const lines = [
		`crawl row: ${row.pages} generated pages, ${row.fetched} fetched (dead links included), ${row.discovered} URLs discovered`,
		`  client CPU ${row.cpuMsPerPage.toFixed(3)} ms per page fetched, ${row.cpuUsPerDiscovered.toFixed(1)} µs per URL discovered; links alone ${row.linksMsPerPage.toFixed(3)} ms per page (through a tree ${row.treeLinksMsPerPage.toFixed(3)} ms); peak RSS ${row.peakRssMb.toFixed(0)} MB`,
		...row.verdicts.map((verdict) => `  ${verdict.met ? "ok  " : "MISS"} ${verdict.target}: ${verdict.measured}`),
	];
	return lines.join("\n");
}

/** The feed part of the crawl row: pages/s at the account's limit, each fetch taking a simulated latency. */
export interface CrawlFeedRow {
	readonly pages: number;
	readonly limit: number;
	readonly fetched: number;
	readonly levels: number;
	readonly wallMs: number;
	readonly pagesPerSecond: number;
	/** What `limit` fetches in flight all the time would reach: limit / the fetches' mean latency. */
	readonly ceilingPagesPerSecond: number;
	/** Mean fetches in flight over the crawl (sampled at every start and end). */
	readonly meanInFlight: number;
}

/**
 * Crawl a generated site through a pool of `limit` slots, as the runner's queue feeds it (refilled when
 * fewer than `limit` wait), every fetch taking 5–45 ms and one in 50 400 ms (spread by URL, the same every
 * run): how close the crawl stays to the account's limit across level boundaries, where a slow page ends a level.
 */
export async function benchCrawlFeed(pages: number, limit: number, log: (line: string) => void): Promise<CrawlFeedRow> {
	const runDir = mkdtempSync(join(tmpdir(), "scrapejob-crawl-feed-"));
	try {
		const spec: CrawlSpec = {
			maxDepth: 1_000_000,
			maxPages: pages * 10,
			scope: "host",
			include: [],
			exclude: [compileUserRegex("/calendar/")],
			sitemaps: false,
			robots: "ignore",
		};
		const job = { crawl: spec } as unknown as Job;
		let running = 0;
		const waiting: Array<() => Promise<void>> = [];
		let idleWaiters: Array<() => void> = [];
		const roomWaiters: Array<() => void> = [];
		let inFlightArea = 0;
		let lastChange = performance.now();
		const account = () => {
			const now = performance.now();
			inFlightArea += running * (now - lastChange);
			lastChange = now;
		};
		const pump = () => {
			while (running < limit && waiting.length > 0) {
				const task = waiting.shift()!;
				account();
				running += 1;
				void task().finally(() => {
					account();
					running -= 1;
					pump();
				});
			}
			if (waiting.length < limit) for (const wake of roomWaiters.splice(0)) wake();
			if (running === 0 && waiting.length === 0) {
				const waiters = idleWaiters;
				idleWaiters = [];
				for (const wake of waiters) wake();
			}
		};
		const { crawler, seeds } = graphCrawl(job, spec, runDir);
		let fetched = 0;
		let levels = 0;
		let latencySumMs = 0;
		log(`crawl feed: ${pages} pages, ${limit} in flight at most, 5–45 ms a fetch, one in 50 400 ms…`);
		const started = performance.now();
		lastChange = started;
		for await (const batch of crawler.targets(seeds())) {
			for (const target of batch) {
				if (waiting.length >= limit * 2) await new Promise<void>((resolve) => roomWaiters.push(resolve));
				waiting.push(async () => {
					fetched += 1;
					levels = Math.max(levels, (target.crawl?.depth ?? 0) + 1);
					// 5–45 ms, one page in 50 400 ms: spread by the URL (the same for each run of the bench).
					const hash = hashOf(target.url);
					const latencyMs = hash % 50 === 0 ? 400 : 5 + (hash % 41);
					latencySumMs += latencyMs;
					await new Promise((resolve) => setTimeout(resolve, latencyMs));
					const html = htmlFor(target.url, pages);
					crawler.pageFetched(target, html === null ? null : streamLinks(html, target.url));
					crawler.settled(target);
				});
				pump();
			}
		}
		await new Promise<void>((resolve) => {
			if (running === 0 && waiting.length === 0) resolve();
			else idleWaiters.push(resolve);
		});
		account();
		const wallMs = performance.now() - started;
		crawler.close();
		return {
			pages,
			limit,
			fetched,
			levels,
			wallMs,
			pagesPerSecond: (fetched * 1000) / wallMs,
			ceilingPagesPerSecond: (limit * 1000) / (latencySumMs / fetched),
			meanInFlight: inFlightArea / wallMs,
		};
	} finally {
		rmSync(runDir, { recursive: true, force: true });
	}
}

function hashOf(text: string): number {
	let hash = 0;
	for (let index = 0; index < text.length; index += 1) hash = (hash * 31 + text.charCodeAt(index)) >>> 0;
	return hash;
}

export function formatCrawlFeedRow(row: CrawlFeedRow): string {
	return `crawl feed: ${row.fetched} pages over ${row.levels} levels, limit ${row.limit}: ${row.pagesPerSecond.toFixed(0)} pages/s (${((100 * row.pagesPerSecond) / row.ceilingPagesPerSecond).toFixed(1)} % of ${row.ceilingPagesPerSecond.toFixed(0)} at the limit), mean in flight ${row.meanInFlight.toFixed(2)}, wall ${(row.wallMs / 1000).toFixed(2)} s`;
}
