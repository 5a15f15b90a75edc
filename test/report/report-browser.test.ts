import { appendFileSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ResultRecord } from "../../src/output/index.js";
import type { ReportData } from "../../src/report/index.js";
import { renderReportHtml } from "../../src/report/index.js";
import { createRecordAggregates } from "../../src/report/record-aggregates.js";
import { launchChromium, type PageWatch, screenshot, watchPage } from "../helpers/browser.js";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

let browser: Browser;
let service: TestService | undefined;

beforeAll(async () => {
	browser = await launchChromium();
});
afterAll(async () => {
	await browser?.close();
});
afterEach(async () => {
	await service?.close();
	service = undefined;
});

interface ChartState {
	name: string;
	hidden: boolean;
	drawn: number;
	/** Pixels of the chart's canvas that are not the background. */
	inked: number;
}

/** Open a report file and wait until every visible chart says it drew (or the page failed). */
async function openReport(path: string, width = 1280): Promise<{ page: Page; watch: PageWatch; charts: ChartState[] }> {
	const page = await browser.newPage({ viewport: { width, height: 900 } });
	const watch = watchPage(page);
	await page.goto(pathToFileURL(path).href, { waitUntil: "load" });
	await page.waitForFunction(() =>
		Array.from(document.querySelectorAll<HTMLElement>("[data-chart]")).every((box) => box.hidden || box.dataset.drawn),
	);
	const charts = await page.evaluate(() =>
		Array.from(document.querySelectorAll<HTMLElement>("[data-chart]")).map((box) => {
			const canvas = box.querySelector("canvas");
			let inked = 0;
			if (canvas) {
				const pixels = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height).data;
				for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) inked += 1;
			}
			return { name: box.dataset.chart!, hidden: box.hidden, drawn: Number(box.dataset.drawn ?? 0), inked };
		}),
	);
	return { page, watch, charts };
}

function onlyRunDir(jobDir: string): string {
	const runs = readdirSync(jobDir).filter((name) => existsSync(join(jobDir, name, "run.json")));
	expect(runs).toHaveLength(1);
	return join(jobDir, runs[0]!);
}

/** Nearest-rank quantile of exact values. */
function nearestRank(values: number[], q: number): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}

/** The RGBA of a chart canvas's pixel at the centre of each of its bars (as the page recorded them). */
async function barColours(page: Page, chart: string): Promise<number[][]> {
	return page.evaluate((name) => {
		const box = document.querySelector<HTMLElement>(`[data-chart="${name}"]`)!;
		const canvas = box.querySelector("canvas")!;
		const centres = JSON.parse(box.dataset.bars ?? "[]") as number[][];
		const context = canvas.getContext("2d")!;
		return centres.map(([x, y]) => Array.from(context.getImageData(x!, y!, 1, 1).data));
	}, chart);
}

function visible(charts: ChartState[]): string[] {
	return charts.filter((chart) => !chart.hidden).map((chart) => chart.name);
}

describe("report.html in a real browser", () => {
	it("is written by every run, draws each chart offline without errors, and is rebuilt by `scrapejob report`", async () => {
		service = await startTestService({
			concurrency: 3,
			latency_ms: 25,
			faults: [
				{ kind: "scraping_error", match: "/product\\/2$/", message: "Page crashed" },
				{ kind: "dns_failure", match: "/product\\/3$/" },
			],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const targets = Array.from({ length: 30 }, (_, index) => `  - ${service!.site.url}/product/${index + 1}`);
		const job = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"retry:",
				"  attempts: 2",
				"  backoff_ms: 1",
				"  max_backoff_ms: 2",
				"defaults:",
				"  mode: request",
				"targets:",
				...targets,
				`  - url: ${service.site.url}/missing-page`,
				"",
			].join("\n"),
		);
		// The built CLI, as users run it: its bundle is what writes their reports (an in-process run of the
		// sources did not see the bundler's name helper the page script then called and the page lacked).
		assertBuilt();
		const run = await spawnCli(["run", job, "--out", out], service.env).done;
		expect(run.code, run.stderr).toBe(1);
		const runDir = onlyRunDir(join(out, "shop"));
		const reportPath = join(runDir, "report.html");
		// The terminal summary ends with the report's path.
		expect(run.stdout.trimEnd().split("\n").at(-1)).toBe(`report     ${reportPath}`);

		const first = await openReport(reportPath);
		expect(first.watch.consoleErrors).toEqual([]);
		expect(first.watch.requests).toEqual([pathToFileURL(reportPath).href]);
		// Every run tracks changes (all new on a first run): that chart draws too.
		expect(visible(first.charts)).toEqual([
			"activity",
			"latency",
			"credits-time",
			"credits-mode",
			"status",
			"errors",
			"changes",
		]);
		for (const chart of first.charts.filter((state) => !state.hidden)) {
			// `drawn` is the number of x values plotted: a line over time needs two, a bar chart one.
			const lines = chart.name === "activity" || chart.name === "credits-time";
			expect(chart.drawn, chart.name).toBeGreaterThanOrEqual(lines ? 2 : 1);
			expect(chart.inked, chart.name).toBeGreaterThan(500);
		}
		const tiles = await first.page.locator(".tile").allInnerTexts();
		const summary = readSummary(runDir);
		expect(tiles.join(" ")).toContain(`${summary.targets.by_status.failed}`);
		expect(await first.page.locator("table.data").first().textContent()).toContain(new URL(service.site.url).host);

		// p50/p95/p99 are the records' own durations (nearest rank), not histogram bucket edges.
		const records = readRecords(runDir);
		const durations = records.map((record) => record.duration_ms);
		const firstData = JSON.parse((await first.page.locator("#report-data").textContent()) ?? "null") as ReportData;
		expect([firstData.latency.p50, firstData.latency.p95, firstData.latency.p99]).toEqual([
			nearestRank(durations, 0.5),
			nearestRank(durations, 0.95),
			nearestRank(durations, 0.99),
		]);
		expect(firstData.latency.percentiles).toBe("exact");
		// The retry count is a tile.
		expect(summary.retries).toBeGreaterThan(0);
		expect(await first.page.locator(".tile", { hasText: "retries" }).locator(".value").textContent()).toBe(
			String(summary.retries),
		);
		// Failed targets are listed by URL with their error and attempts.
		const failedRows = await first.page.locator('[data-table="failed"] tbody tr').allInnerTexts();
		const failedRecords = records.filter((record) => record.status === "failed");
		expect(failedRows).toHaveLength(failedRecords.length);
		for (const record of failedRecords) {
			expect(failedRows.some((row) => row.startsWith(record.url) && row.includes(record.error!))).toBe(true);
		}
		// "new" is not drawn red (red is for failures): the changes chart's first bar is green.
		const [newBar] = await barColours(first.page, "changes");
		expect(newBar!.slice(0, 3)).toEqual([0x16, 0xa3, 0x4a]);
		await screenshot(first.page, "report-run.png");
		// The monitoring guide's picture (docs/report.png): SCRAPEJOB_UPDATE_SCREENSHOT=1 npx vitest run test/report/report-browser.test.ts
		if (process.env.SCRAPEJOB_UPDATE_SCREENSHOT === "1") {
			const forReadme = await openReport(reportPath, 1100);
			await forReadme.page.screenshot({
				path: join(import.meta.dirname, "..", "..", "docs", "report.png"),
				fullPage: true,
			});
			await forReadme.page.close();
		}
		await first.page.close();

		// A pause in run.log (as the runner logs one) is marked on the timeline when the report is rebuilt.
		const pauseAt = new Date(Date.parse(summary.started_at) + 50).toISOString();
		appendFileSync(
			join(runDir, "run.log"),
			`${JSON.stringify({ level: 40, time: pauseAt, event: "pause", reason: "rate_limited", pause_ms: 400 })}\n`,
		);
		// A failed record with credentials in its URL (as an older version may have written it) is listed masked.
		const leaky: ResultRecord = {
			...records.find((record) => record.status === "failed")!,
			id: "leaky",
			url: "https://user:hunter2@leaky.example/path?q=1",
		};
		appendFileSync(join(runDir, "results.jsonl"), `${JSON.stringify(leaky)}\n`);
		const before = statSync(reportPath).mtimeMs;
		const rebuilt = await spawnCli(["report", runDir, "--json"], {}).done;
		expect(rebuilt.code, rebuilt.stderr).toBe(0);
		expect(JSON.parse(rebuilt.stdout)).toEqual([{ run_dir: runDir, report: reportPath }]);
		expect(statSync(reportPath).mtimeMs).toBeGreaterThanOrEqual(before);
		const second = await openReport(reportPath);
		const data = JSON.parse((await second.page.locator("#report-data").textContent()) ?? "null") as ReportData;
		expect(data.pauses).toEqual([
			{ start_ms: Date.parse(pauseAt), end_ms: Date.parse(pauseAt) + 400, reason: "rate_limited" },
		]);
		expect(data.timeline.finished.reduce((a, b) => a + b, 0)).toBe(32);
		expect(readFileSync(reportPath, "utf8")).not.toContain("hunter2");
		expect(await second.page.locator('[data-table="failed"]').textContent()).toContain(
			"https://***@leaky.example/path?q=1",
		);
		expect(second.watch.consoleErrors).toEqual([]);
		await second.page.close();
	});

	it("shows hostile strings as text: nothing in the data can run as script", async () => {
		const evil = `</script><script>window.__owned = 1</script><img src=x onerror="window.__owned = 2">`;
		const data: ReportData = {
			version: 1,
			generated_at: "2026-11-21T00:00:00.000Z",
			summary: {
				job: evil,
				run_id: "r1",
				complete: false,
				stopped_reason: evil,
				stop_message: null,
				targets: {
					total: 10,
					done: 4,
					remaining: 6,
					by_status: { ok: 3, failed: 1, skipped: 0 },
					duplicates: 0,
					skipped_rows: 0,
				},
				credits: { used: 8, by_mode: { request: 8 }, remaining: 100, max_credits: null },
				retries: 0,
				rate_limit_pauses: 1,
				tasks: { created: 0, completed: 0, failed: 0, left_pending: 0 },
				errors_by_kind: { [evil]: 1 },
				started_at: "2026-11-21T00:00:00.000Z",
				finished_at: "2026-11-21T00:00:04.000Z",
				wall_ms: 4000,
				throughput_per_s: 1,
				latency_ms: { p50: 100, p95: 200 },
				concurrency: 2,
				resumed_from: null,
			},
			timeline: {
				start_ms: Date.parse("2026-11-21T00:00:00.000Z"),
				bucket_ms: 1000,
				finished: [1, 2, 1],
				ok: [1, 2, 0],
				failed: [0, 0, 1],
				credits: [2, 4, 2],
				in_flight: [1, 2, 1],
			},
			pauses: [
				{
					start_ms: Date.parse("2026-11-21T00:00:01.000Z"),
					end_ms: Date.parse("2026-11-21T00:00:02.000Z"),
					reason: "rate_limited",
				},
			],
			latency: {
				bounds_ms: [50, 100, 200],
				counts: [0, 2, 2, 0],
				p50: 100,
				p95: 200,
				p99: 200,
				percentiles: "exact",
				samples: 4,
			},
			fields: [{ name: evil, filled: 2, of: 3 }],
			changes: { new: 1, changed: 1, unchanged: 1 },
			top_failing_hosts: [{ host: evil, failed: 1 }],
			failed_targets: {
				listed: [{ url: evil, error: evil, http_status: 500, attempts: 2, message: evil }],
				total: 1,
			},
			crawl_depths: null,
		};
		const path = join(tempDir(), "report.html");
		writeFileSync(path, renderReportHtml(data));
		expect(readFileSync(path, "utf8")).not.toContain("<script>window.__owned");
		const { page, watch, charts } = await openReport(path);
		expect(await page.evaluate(() => (window as unknown as { __owned?: number }).__owned)).toBeUndefined();
		expect(await page.locator("h1").textContent()).toContain("window.__owned = 1");
		expect(watch.consoleErrors).toEqual([]);
		expect(watch.requests).toHaveLength(1);
		// With extracted fields and change tracking, their charts draw too.
		expect(visible(charts)).toEqual([
			"activity",
			"latency",
			"credits-time",
			"credits-mode",
			"status",
			"errors",
			"fill",
			"changes",
		]);
		for (const chart of charts) expect(chart.drawn, chart.name).toBeGreaterThan(0);
		await screenshot(page, "report-all-charts.png");
		await page.close();
	});

	it("latency axis labels never overlap, however many buckets and however narrow the page", async () => {
		const aggregates = createRecordAggregates(Date.parse("2026-11-21T00:00:00.000Z"));
		// Durations from 2 ms to about 100 s: some 45 buckets of the histogram.
		for (let index = 0; index < 400; index += 1) {
			const duration = Math.round(2 * 1.03 ** index);
			aggregates.add({
				id: `t${index}`,
				url: `https://shop.example/${index}`,
				status: "ok",
				finished_at: "2026-11-21T00:01:00.000Z",
				duration_ms: duration,
				credits_used: 1,
				change: null,
			} as unknown as ResultRecord);
		}
		const latency = aggregates.latency();
		expect(latency.counts.filter((count) => count > 0).length).toBeGreaterThan(30);
		const data: ReportData = {
			version: 1,
			generated_at: "2026-11-21T00:00:00.000Z",
			summary: {
				job: "many-buckets",
				run_id: "r1",
				complete: true,
				stopped_reason: null,
				stop_message: null,
				targets: {
					total: 400,
					done: 400,
					remaining: 0,
					by_status: { ok: 400, failed: 0, skipped: 0 },
					duplicates: 0,
					skipped_rows: 0,
				},
				credits: { used: 400, by_mode: { request: 400 }, remaining: 100, max_credits: null },
				retries: 0,
				rate_limit_pauses: 0,
				tasks: { created: 0, completed: 0, failed: 0, left_pending: 0 },
				errors_by_kind: {},
				started_at: "2026-11-21T00:00:00.000Z",
				finished_at: "2026-11-21T00:01:00.000Z",
				wall_ms: 60_000,
				throughput_per_s: 6.7,
				latency_ms: { p50: 100, p95: 200 },
				concurrency: 2,
				resumed_from: null,
			},
			timeline: aggregates.timeline(),
			pauses: [],
			latency,
			fields: [],
			changes: null,
			top_failing_hosts: [],
			failed_targets: { listed: [], total: 0 },
			crawl_depths: null,
		};
		const path = join(tempDir(), "report.html");
		writeFileSync(path, renderReportHtml(data));
		for (const width of [1280, 700]) {
			const { page, watch } = await openReport(path, width);
			expect(watch.consoleErrors).toEqual([]);
			const gap = await page.locator('[data-chart="latency"]').getAttribute("data-label-gap");
			expect(Number(gap), `width ${width}`).toBeGreaterThanOrEqual(0);
			await screenshot(page, `report-latency-${width}.png`);
			await page.close();
		}
	});

	it("a crawl's report shows its depth reached, pages, URLs discovered and stop reason", async () => {
		service = await startTestService({ concurrency: 3 });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults:",
				"  mode: request",
				"output:",
				"  content: none",
				"crawl:",
				"  max_depth: 2",
				"  max_pages: 12",
				"  scope: host",
				'  exclude: ["/calendar/"]',
				"targets:",
				`  - ${service.site.url}/graph/1`,
				"",
			].join("\n"),
		);
		const run = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		const runDir = onlyRunDir(join(out, "crawl"));
		const summary = readSummary(runDir);
		expect(summary.crawl?.stopped_by, run.stderr).toBe("max_pages");
		const deepest = Math.max(...readRecords(runDir).map((record) => record.depth ?? 0));
		const { page, watch } = await openReport(join(runDir, "report.html"));
		expect(watch.consoleErrors).toEqual([]);
		const card = page.locator('[data-table="crawl"]');
		const facts = Object.fromEntries(
			(await card.locator("table.facts tr").allInnerTexts()).map((row) => row.split("\t") as [string, string]),
		);
		expect(facts).toMatchObject({
			"depth reached": `${deepest} of max_depth 2`,
			"pages fetched": `${summary.crawl!.pages} of max_pages 12`,
			"URLs discovered": String(summary.crawl!.discovered),
			"stop reason": "max_pages",
		});
		expect(await card.locator("table.data tbody tr").count()).toBe(deepest + 1);
		await screenshot(page, "report-crawl.png");
		await page.close();
	});

	it("`scrapejob report` on a folder that is not a run folder exits 2 with a clear message", async () => {
		const result = await runCli(["report", tempDir()]);
		expect(result.code).toBe(2);
		expect(result.stderr).toMatch(/is not a run folder: cannot read summary\.json/);
	});
});
