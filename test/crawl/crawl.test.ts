import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ResultRecord } from "../../src/output/index.js";
import { isRunFolderName, onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { runPrintedCommand } from "../helpers/spawn-cli.js";
import { expectBfsPages, siteBfs } from "./site-bfs.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

/** Fetches the emulator was asked for, per target URL (a dead link's 404 is not charged, but still asked). */
function requestedFetches(svc: TestService): Map<string, number> {
	const counts = new Map<string, number>();
	for (const entry of svc.emulator.ledger.entries) {
		if (entry.endpoint === "realtime" && entry.url) {
			counts.set(entry.url, (counts.get(entry.url) ?? 0) + 1);
		}
	}
	return counts;
}

function crawlJob(seeds: string[], crawl: string[], extra: string[] = []): string {
	return [
		"name: crawl",
		"defaults:",
		"  mode: request",
		"output:",
		"  content: none",
		...extra,
		"crawl:",
		...crawl.map((line) => `  ${line}`),
		"targets:",
		...seeds.map((seed) => `  - ${seed}`),
		"",
	].join("\n");
}

async function crawl(
	yaml: string,
	env: NodeJS.ProcessEnv = {},
): Promise<{ records: ResultRecord[]; runDir: string; code: number; stderr: string }> {
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(dir, "crawl", yaml);
	const result = await runCli(["run", job, "--out", out, "--quiet"], { env: { ...service!.env, ...env } });
	const runDir = onlyRunDir(out, "crawl");
	return { records: readRecords(runDir), runDir, code: result.code, stderr: result.stderr };
}

describe("crawl: link following", () => {
	it("finds exactly the pages a BFS reaches in scope, each fetched (and paid) once, with depth and parent", async () => {
		service = await startTestService({ concurrency: 8 });
		const site = service.site.url;
		const host = new URL(site).host;
		const seed = `${site}/graph/1`;
		const expected = await siteBfs({ seeds: [seed], maxDepth: 6, follows: (url) => url.host === host });
		const { records, runDir, code } = await crawl(
			crawlJob([seed], ["max_depth: 6", "max_pages: 100000", "robots: ignore"]),
		);

		expectBfsPages(records, expected, expect);
		// One record per URL; the service was asked once per URL.
		const requested = requestedFetches(service);
		expect([...requested.values()].every((count) => count === 1)).toBe(true);
		expect(new Set(requested.keys())).toEqual(new Set(records.map((record) => record.url)));
		// The graph's redirects land on pages the crawl counted as fetched and did not pay for again.
		expect(expected.landed.size).toBeGreaterThan(0);
		// (Unless handed out one level deeper while the redirect was in flight: `optional`, site-bfs.ts.)
		expect([...expected.landed].filter((url) => requested.has(url) && !expected.optional.has(url))).toEqual([]);
		// The graph has the traps: the calendar is cut at max_depth, off-site links are never fetched.
		expect(records.some((record) => record.url.includes("/calendar/"))).toBe(true);
		expect(records.some((record) => record.url.includes("offsite"))).toBe(false);
		// Parents: a seed has none; every other page names a page one level up that links to it.
		const byId = new Map(records.map((record) => [record.id, record]));
		for (const record of records) {
			if (record.depth === 0) expect(record.parent).toBeNull();
			else expect(byId.get(record.parent!)?.depth).toBe(record.depth! - 1);
		}
		// The frontier journal holds each discovered URL once (the seed is not in it); redirects' final
		// addresses are marked (r: 1) besides.
		const journalled = readFileSync(join(runDir, "frontier.jsonl"), "utf8")
			.trim()
			.split("\n")
			.map((line) => JSON.parse(line) as { u: string; r?: number })
			.filter((entry) => entry.r !== 1);
		expect(new Set(journalled.map((entry) => entry.u)).size).toBe(journalled.length);
		expect(journalled.length).toBeGreaterThanOrEqual(records.length - 1);
		const summary = readSummary(runDir);
		expect(code).toBe(records.some((record) => record.status !== "ok") ? 1 : 0);
		expect(summary.crawl).toMatchObject({ pages: records.length, max_depth: 6, stopped_by: null });
	});

	it("finds the same pages when most URL keys are spilled to disk, and removes the spilled runs at the end", async () => {
		service = await startTestService({ concurrency: 8 });
		const site = service.site.url;
		const host = new URL(site).host;
		const seed = `${site}/graph/1`;
		const expected = await siteBfs({ seeds: [seed], maxDepth: 6, follows: (url) => url.host === host });
		const { records, runDir } = await crawl(crawlJob([seed], ["max_depth: 6", "max_pages: 100000"]), {
			SCRAPEJOB_CRAWL_KEYS_IN_MEMORY: "8",
		});
		expectBfsPages(records, expected, expect);
		expect([...requestedFetches(service).values()].every((count) => count === 1)).toBe(true);
		expect(existsSync(join(runDir, "crawl-keys"))).toBe(false);
	});

	it("include, exclude and max_depth cut where the BFS says", async () => {
		service = await startTestService({ concurrency: 8 });
		const site = service.site.url;
		const host = new URL(site).host;
		const seed = `${site}/graph/2`;
		const follows = (url: URL) => url.host === host && /\/graph\//.test(url.href) && !/[05]$/.test(url.href);
		const expected = await siteBfs({ seeds: [seed], maxDepth: 3, follows });
		const { records } = await crawl(
			crawlJob([seed], ["max_depth: 3", 'include: ["/graph/"]', 'exclude: ["[05]$", "\\\\?never"]']),
		);
		expectBfsPages(records, expected, expect);
	});

	it("max_pages bounds the pages fetched, seeds included; --resume with a larger max_pages goes on without refetching", async () => {
		service = await startTestService({ concurrency: 4 });
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const seeds = [`${site}/graph/1`, `${site}/graph/50`];
		writeJob(dir, "crawl", crawlJob(seeds, ["max_depth: 20", "max_pages: 15"]));
		const first = await runCli(["run", "crawl.yaml", "--out", "out"], { env: service.env, cwd: dir });
		const runDir = onlyRunDir(out, "crawl");
		expect(readRecords(runDir)).toHaveLength(15);
		expect(readSummary(runDir)).toMatchObject({ complete: false, crawl: { pages: 15, stopped_by: "max_pages" } });
		expect(first.code).toBe(1);
		// The hint says what finishes it: a plain --resume alone would stop at the same bound again.
		expect(first.stdout).toContain("raise crawl.max_pages (now 15) in crawl.yaml, then finish with `");
		const printed = /finish with `([^`]+)`/.exec(first.stdout)![1]!;

		writeJob(dir, "crawl", crawlJob(seeds, ["max_depth: 20", "max_pages: 40"]));
		const second = await runPrintedCommand(printed, service.env, dir).done;
		expect(second.code, second.stderr).toBe(1);
		const records = readRecords(runDir);
		expect(records).toHaveLength(40);
		expect(new Set(records.map((record) => record.url)).size).toBe(40);
		expect([...requestedFetches(service).values()].every((count) => count === 1)).toBe(true);
	});

	it("after a budget stop, crawl.pages counts the pages with a record, not those handed out and dropped; --resume adds its own", async () => {
		// A slow site: when the budget runs out, pages are queued behind the ones in flight.
		service = await startTestService({ concurrency: 8 }, 30);
		const dir = tempDir();
		const out = join(dir, "out");
		writeJob(
			dir,
			"crawl",
			crawlJob(
				[`${service.site.url}/graph/1`],
				["max_depth: 6", "max_pages: 100000", "robots: ignore"],
				["max_credits: 41"],
			),
		);
		const first = await runCli(["run", "crawl.yaml", "--out", "out", "--quiet"], { env: service.env, cwd: dir });
		expect(first.code, first.stderr).toBe(1);
		const runDir = onlyRunDir(out, "crawl");
		const stopped = readSummary(runDir);
		expect(stopped.stopped_reason).toBe("budget_exhausted");
		expect(stopped.crawl!.discovered).toBeGreaterThan(readRecords(runDir).length);
		expect(stopped.crawl!.pages).toBe(readRecords(runDir).length);

		// Stopped by its budget again: the earlier session's pages and this one's, with a record each.
		const resumed = await runCli(["run", "crawl.yaml", "--out", "out", "--quiet", "--resume", "--max-credits", "81"], {
			env: service.env,
			cwd: dir,
		});
		expect(resumed.code, resumed.stderr).toBe(1);
		const again = readSummary(runDir);
		expect(again.stopped_reason).toBe("budget_exhausted");
		expect(readRecords(runDir).length).toBeGreaterThan(stopped.crawl!.pages);
		expect(again.crawl!.pages).toBe(readRecords(runDir).length);
	});

	it("--continue after a crawl stopped at max_pages starts the next crawl (a resume would stop at the same bound), and resumes it once max_pages was raised", async () => {
		service = await startTestService({ concurrency: 4 });
		const dir = tempDir();
		const seeds = [`${service.site.url}/graph/1`];
		writeJob(dir, "crawl", crawlJob(seeds, ["max_depth: 20", "max_pages: 15"]));
		const nightly = () =>
			runCli(["run", "crawl.yaml", "--out", "out", "--continue", "--quiet"], { env: service!.env, cwd: dir });
		const folders = () =>
			readdirSync(join(dir, "out", "crawl"))
				.filter(isRunFolderName)
				.sort();
		expect((await nightly()).code).toBe(1);
		expect(folders()).toHaveLength(1);
		// The next night: a new crawl of 15 pages, not a resume that sends nothing and stops at 15 again.
		const next = await nightly();
		expect(next.code, next.stderr).toBe(1);
		expect(folders()).toHaveLength(2);
		const newest = join(dir, "out", "crawl", folders()[1]!);
		expect(readRecords(newest)).toHaveLength(15);
		// The bound raised: --continue resumes that crawl and goes on from its pages.
		writeJob(dir, "crawl", crawlJob(seeds, ["max_depth: 20", "max_pages: 25"]));
		const raised = await nightly();
		expect(raised.code, raised.stderr).toBe(1);
		expect(folders()).toHaveLength(2);
		const records = readRecords(newest);
		expect(records).toHaveLength(25);
		expect(new Set(records.map((record) => record.url)).size).toBe(25);
	});

	it("a crawl's progress bar counts pages done against the pages known so far, with no ETA", async () => {
		service = await startTestService({ concurrency: 4, latency_ms: 40 });
		const dir = tempDir();
		const job = writeJob(dir, "crawl", crawlJob([`${service.site.url}/graph/1`], ["max_depth: 20", "max_pages: 30"]));
		const run = await runCli(["run", job, "--out", join(dir, "out")], { env: service.env, tty: true });
		expect(run.code).toBe(1);
		// cli-progress redraws a frame by moving the cursor to column 1 (ESC [1G).
		const frames = run.stderr
			.replaceAll("\u001b[1G", "\n")
			.split(/\r|\n/)
			.filter((line) => line.includes("pages known"));
		expect(frames.length).toBeGreaterThan(0);
		expect(run.stderr).not.toMatch(/ETA/);
		const last = /(\d+)\/(\d+) pages known/.exec(frames.at(-1)!)!;
		// Pages done against the pages known (links found, up to max_pages): never "60/1", the seeds' count.
		expect(Number(last[1])).toBe(30);
		expect(Number(last[2])).toBe(30);
		// While it runs, more pages are known than done (the seeds' count, 1, was the old total: full at once).
		const counts = frames
			.map((frame) => /(\d+)\/(\d+) pages known/.exec(frame)!)
			.map((m) => [Number(m[1]), Number(m[2])]);
		expect(counts.some(([done, known]) => done! > 0 && known! > done!)).toBe(true);
	});

	it("the example job jobs/crawl-demo.yaml crawls the demo site within its bounds", async () => {
		service = await startTestService({ concurrency: 8 });
		const site = service.site.url;
		const host = new URL(site).host;
		const follows = (url: URL) => url.host === host && !/\/calendar\//.test(url.href);
		const expected = await siteBfs({ seeds: [`${site}/graph/1`], maxDepth: 3, follows });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = join(import.meta.dirname, "..", "..", "jobs", "crawl-demo.yaml");
		await runCli(["run", job, "--out", out, "--quiet"], { env: { ...service.env, SCRAPEJOB_DEMO_SITE: site } });
		const records = readRecords(onlyRunDir(out, "crawl-demo"));
		// The whole 3-deep crawl (67 pages on the default 100-page graph) fits in max_pages: 150.
		expect(expected.pages.size).toBeLessThan(150);
		expectBfsPages(records, expected, expect);
		expect(records.some((record) => record.url.includes("/calendar/"))).toBe(false);
	});

	it("sitemaps: true seeds from robots.txt and the sitemap index, fetched through the service and counted", async () => {
		service = await startTestService({ concurrency: 8 });
		const site = service.site.url;
		const { records, runDir } = await crawl(
			crawlJob([`${site}/graph/1`], ["max_depth: 0", "sitemaps: true", 'include: ["/product/"]']),
		);
		// robots.txt names /sitemap.xml, an index of the graph's and the products' sitemaps; include keeps the products.
		const products = Array.from({ length: 100 }, (_, index) => `${site}/product/${index + 1}`);
		expect(records.map((record) => record.url).sort()).toEqual([`${site}/graph/1`, ...products].sort());
		expect(records.every((record) => record.depth === 0 && record.parent === null)).toBe(true);
		const sitemapFetches = service.emulator.ledger.entries.filter(
			(entry) => entry.endpoint === "realtime" && /robots\.txt|sitemap/.test(entry.url ?? ""),
		);
		expect(sitemapFetches.map((entry) => new URL(entry.url!).pathname).sort()).toEqual([
			"/robots.txt",
			"/sitemap-graph.xml",
			"/sitemap-products.xml",
			"/sitemap.xml",
		]);
		const sitemapCredits = sitemapFetches.reduce((sum, entry) => sum + entry.creditsCharged, 0);
		expect(sitemapCredits).toBeGreaterThan(0);
		const summary = readSummary(runDir);
		expect(summary.crawl?.sitemap_credits).toBe(sitemapCredits);
		const recordCredits = records.reduce((sum, record) => sum + record.credits_used, 0);
		expect(summary.credits.used).toBe(recordCredits + sitemapCredits);
	});
});
