import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ReportData } from "../../src/report/index.js";
import { renderReportHtml } from "../../src/report/index.js";
import { launchChromium, type PageWatch, screenshot, watchPage } from "../helpers/browser.js";
import { isRunFolderName, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

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
		const run = await runCli(["run", job, "--out", out], { env: service.env });
		expect(run.code).toBe(1);
		const runDir = join(out, "shop", readdirSync(join(out, "shop")).find(isRunFolderName)!);
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
		await screenshot(first.page, "report-run.png");
		// README's picture: SCRAPEJOB_UPDATE_SCREENSHOT=1 npx vitest run test/report/report-browser.test.ts
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
		const before = statSync(reportPath).mtimeMs;
		const rebuilt = await runCli(["report", runDir, "--json"]);
		expect(rebuilt.code).toBe(0);
		expect(JSON.parse(rebuilt.stdout)).toEqual([{ run_dir: runDir, report: reportPath }]);
		expect(statSync(reportPath).mtimeMs).toBeGreaterThanOrEqual(before);
		const second = await openReport(reportPath);
		const data = JSON.parse((await second.page.locator("#report-data").textContent()) ?? "null") as ReportData;
		expect(data.pauses).toEqual([
			{ start_ms: Date.parse(pauseAt), end_ms: Date.parse(pauseAt) + 400, reason: "rate_limited" },
		]);
		expect(data.timeline.finished.reduce((a, b) => a + b, 0)).toBe(31);
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
			latency: { bounds_ms: [50, 100, 200], counts: [0, 2, 2, 0], p50: 100, p95: 200, p99: 200 },
			fields: [{ name: evil, filled: 2, of: 3 }],
			changes: { new: 1, changed: 1, unchanged: 1 },
			top_failing_hosts: [{ host: evil, failed: 1 }],
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

	it("`scrapejob report` on a folder that is not a run folder exits 2 with a clear message", async () => {
		const result = await runCli(["report", tempDir()]);
		expect(result.code).toBe(2);
		expect(result.stderr).toMatch(/is not a run folder: cannot read summary\.json/);
	});
});
