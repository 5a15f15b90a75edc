/**
 * The report row of `npm run bench` (`--only=report`): the report of a 1,000,000-record run must be
 * under 2 MB and open (every chart drawn) in under 2 s in headless Chromium (issue #15).
 *
 * Measures, on a generated run folder of N records (4 extracted fields, 3 % failures over 5,000 hosts,
 * 200 pauses in run.log): the in-run collector's CPU per record, `scrapejob report` rebuilding from the
 * files, the file's size, and the browser's time from navigation to the last chart drawn (median of 3).
 */
import { createWriteStream, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import type { ResultRecord, RunSummary } from "../src/output/index.js";
import { createReportCollector, rebuildReport } from "../src/report/index.js";

const SIZE_LIMIT_BYTES = 2 * 1024 * 1024;
const OPEN_LIMIT_MS = 2000;

export interface ReportBenchRow {
	readonly records: number;
	readonly collectorNsPerRecord: number;
	readonly rebuildMs: number;
	readonly reportBytes: number;
	readonly openMs: number;
	readonly verdicts: Array<{ target: string; measured: string; met: boolean }>;
}

function recordAt(index: number, originMs: number): ResultRecord {
	const failed = index % 33 === 0;
	const finished = originMs + index * 3.6;
	const duration = 80 + ((index * 7919) % 900);
	return {
		id: index.toString(16).padStart(16, "0"),
		url: `https://shop-${index % 5000}.example/product/${index}`,
		status: failed ? "failed" : "ok",
		http_status: failed ? 503 : 200,
		error: failed ? "http_503" : null,
		message: failed ? "Service unavailable" : null,
		mode_requested: "request",
		mode_used: "request",
		credits_used: failed ? 0 : 2,
		credits_remaining: 1e9 - index * 2,
		attempts: failed ? 5 : 1,
		task_id: null,
		started_at: new Date(finished - duration).toISOString(),
		finished_at: new Date(finished).toISOString(),
		duration_ms: duration,
		bytes: 120_000,
		content_path: null,
		content_hash: null,
		change: null,
		depth: null,
		parent: null,
		...(failed
			? {}
			: { data: { name: `Item ${index}`, price: index % 10 ? 19.99 : null, sku: `S${index}`, tags: ["a", "b"] } }),
	};
}

async function writeRunFolder(dir: string, records: number, originMs: number): Promise<RunSummary> {
	const out = createWriteStream(join(dir, "results.jsonl"));
	for (let index = 0; index < records; index += 1) {
		if (!out.write(`${JSON.stringify(recordAt(index, originMs))}\n`))
			await new Promise<void>((resolve) => out.once("drain", () => resolve()));
	}
	await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
	const failed = Math.ceil(records / 33);
	const wallMs = records * 3.6;
	const summary: RunSummary = {
		job: "bench-report",
		run_id: "20261122T000000Z-bench0",
		complete: true,
		stopped_reason: null,
		stop_message: null,
		targets: {
			total: records,
			done: records,
			remaining: 0,
			by_status: { ok: records - failed, failed, skipped: 0 },
			duplicates: 0,
			skipped_rows: 0,
		},
		credits: {
			used: (records - failed) * 2,
			by_mode: { request: (records - failed) * 2 },
			remaining: 1e9,
			max_credits: null,
		},
		retries: failed * 4,
		rate_limit_pauses: 200,
		tasks: { created: 0, completed: 0, failed: 0, left_pending: 0 },
		errors_by_kind: { http_503: failed },
		started_at: new Date(originMs).toISOString(),
		finished_at: new Date(originMs + wallMs).toISOString(),
		wall_ms: wallMs,
		throughput_per_s: records / (wallMs / 1000),
		latency_ms: { p50: 500, p95: 900 },
		concurrency: 50,
		resumed_from: null,
	};
	writeFileSync(join(dir, "summary.json"), JSON.stringify(summary));
	writeFileSync(join(dir, "run.json"), JSON.stringify({ created_at: summary.started_at }));
	const pauses = Array.from({ length: 200 }, (_, index) =>
		JSON.stringify({
			level: 40,
			time: new Date(originMs + index * (wallMs / 200)).toISOString(),
			event: "pause",
			reason: "rate_limited",
			pause_ms: 5000,
		}),
	);
	writeFileSync(join(dir, "run.log"), `${pauses.join("\n")}\n`);
	return summary;
}

async function openMs(path: string): Promise<number> {
	const browser = await chromium.launch({
		executablePath: process.env.SCRAPEJOB_CHROMIUM ?? "/usr/bin/chromium",
		args: [
			"--no-sandbox",
			"--disable-gpu",
			"--no-first-run",
			"--disable-background-networking",
			"--disable-component-update",
			"--disable-sync",
		],
	});
	try {
		const times: number[] = [];
		for (let run = 0; run < 3; run += 1) {
			const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
			const started = performance.now();
			await page.goto(pathToFileURL(path).href);
			await page.waitForFunction(() =>
				Array.from(document.querySelectorAll<HTMLElement>("[data-chart]")).every(
					(box) => box.hidden || box.dataset.drawn,
				),
			);
			times.push(performance.now() - started);
			await page.close();
		}
		return times.sort((a, b) => a - b)[1]!;
	} finally {
		await browser.close();
	}
}

export async function benchReport(records: number, log: (line: string) => void): Promise<ReportBenchRow> {
	const dir = mkdtempSync(join(tmpdir(), "scrapejob-bench-report-"));
	try {
		const originMs = Date.parse("2026-11-22T00:00:00.000Z");
		log(`report: writing a run folder of ${records.toLocaleString("en-US")} records…`);
		const summary = await writeRunFolder(dir, records, originMs);

		// The in-run path: what the runner pays per record while it writes them.
		const collector = createReportCollector(originMs);
		const cpuBefore = process.cpuUsage();
		for (let index = 0; index < records; index += 1) collector.add(recordAt(index, originMs));
		const cpu = process.cpuUsage(cpuBefore);
		// recordAt's own cost is in there too: measured apart and subtracted.
		const makeBefore = process.cpuUsage();
		for (let index = 0; index < records; index += 1) recordAt(index, originMs);
		const make = process.cpuUsage(makeBefore);
		const collectorNs = Math.max(0, cpu.user + cpu.system - make.user - make.system) * 1000;
		await collector.write(dir, summary);

		const rebuildStarted = performance.now();
		const path = await rebuildReport(dir);
		const rebuildMs = performance.now() - rebuildStarted;
		const reportBytes = statSync(path).size;
		const open = await openMs(path);
		return {
			records,
			collectorNsPerRecord: collectorNs / records,
			rebuildMs,
			reportBytes,
			openMs: open,
			verdicts: [
				{
					target: "report < 2 MB",
					measured: `${(reportBytes / 1024).toFixed(0)} KB`,
					met: reportBytes < SIZE_LIMIT_BYTES,
				},
				{ target: "opens < 2 s", measured: `${open.toFixed(0)} ms`, met: open < OPEN_LIMIT_MS },
			],
		};
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

export function formatReportRow(row: ReportBenchRow): string {
	return [
		"| row | records | collector CPU / record | `scrapejob report` (rebuild) | report size | open in Chromium (median of 3) |",
		"|---|---|---|---|---|---|",
		`| report | ${row.records.toLocaleString("en-US")} | ${row.collectorNsPerRecord.toFixed(0)} ns | ${(row.rebuildMs / 1000).toFixed(1)} s | ${(row.reportBytes / 1024).toFixed(0)} KB | ${row.openMs.toFixed(0)} ms |`,
		...row.verdicts.map((verdict) => `${verdict.met ? "met" : "NOT MET"}: ${verdict.target} (${verdict.measured})`),
	].join("\n");
}
