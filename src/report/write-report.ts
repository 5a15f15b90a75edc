import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { jsonlLines, UsageError, writeFileAtomic } from "../common/index.js";
import { parseRecordLine, type ResultRecord, RUN_FILES, type RunSummary, runStartedMs } from "../output/index.js";
import { createRecordAggregates, type RecordAggregates } from "./record-aggregates.js";
import { renderReportHtml } from "./render-report.js";
import type { ReportData } from "./report-data.js";
import { readPauseWindows } from "./run-log-events.js";

export const REPORT_FILE = "report.html";

/**
 * Gathers what the report needs while a run writes its records (constant memory, a few array
 * increments per record), so the report costs no second pass over a million records at the end.
 */
export interface ReportCollector {
	add(record: ResultRecord): void;
	/** Write `report.html` into `runDir`; returns its path. */
	write(runDir: string, summary: RunSummary): Promise<string>;
}

export function createReportCollector(originMs: number): ReportCollector {
	const aggregates = createRecordAggregates(originMs);
	return {
		add: (record) => aggregates.add(record),
		write: async (runDir, summary) => writeReport(runDir, summary, aggregates),
	};
}

/**
 * Rebuild `report.html` from a run folder's own files (`scrapejob report RUN_DIR`): old runs, resumed
 * runs (whose earlier sessions' records are only on disk) and merged shard folders.
 */
export async function rebuildReport(runDir: string): Promise<string> {
	const summary = readSummary(runDir);
	const aggregates = createRecordAggregates(runOrigin(runDir, summary));
	for (const line of jsonlLines(join(runDir, RUN_FILES.jsonl))) {
		// The one record validator (output/record-lines.ts): a torn or foreign line is skipped, and so is a
		// record without the times the charts are drawn from.
		const record = parseRecordLine(line.text);
		if (record && typeof record.finished_at === "string" && typeof record.duration_ms === "number")
			aggregates.add(record);
	}
	return writeReport(runDir, summary, aggregates);
}

async function writeReport(runDir: string, summary: RunSummary, aggregates: RecordAggregates): Promise<string> {
	const data: ReportData = {
		version: 1,
		generated_at: new Date().toISOString(),
		summary,
		timeline: aggregates.timeline(),
		pauses: await readPauseWindows(join(runDir, RUN_FILES.log)),
		latency: aggregates.latency(),
		fields: aggregates.fields(),
		changes: aggregates.changes(),
		top_failing_hosts: aggregates.topFailingHosts(),
		failed_targets: aggregates.failedTargets(),
		crawl_depths: aggregates.crawlDepths(),
	};
	const path = join(runDir, REPORT_FILE);
	writeFileAtomic(path, renderReportHtml(data));
	return path;
}

function readSummary(runDir: string): RunSummary {
	const path = join(runDir, RUN_FILES.summary);
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (error) {
		// A run folder (run.json) without a summary is a run still going, or one killed before its end.
		if (existsSync(join(runDir, RUN_FILES.meta)))
			throw new UsageError(
				`${runDir} has no ${RUN_FILES.summary} yet: its run is still going, or was killed before it ended; the run's --resume finishes it and writes ${RUN_FILES.summary} and ${REPORT_FILE}`,
				{ cause: error },
			);
		throw new UsageError(`${runDir} is not a run folder: cannot read ${RUN_FILES.summary}`, { cause: error });
	}
	try {
		const summary = JSON.parse(text) as RunSummary;
		if (typeof summary?.targets?.by_status !== "object" || typeof summary.credits !== "object")
			throw new Error("shape");
		return summary;
	} catch (error) {
		throw new UsageError(`${path} is not a scrapejob summary`, { cause: error });
	}
}

/** The folder's first session start: every record of every session finishes after it. */
function runOrigin(runDir: string, summary: RunSummary): number {
	// A merged folder has no run.json: the summary's start is the next best origin.
	const created = runStartedMs(runDir);
	if (created !== null) return created;
	const started = Date.parse(summary.started_at);
	return Number.isFinite(started) ? started : 0;
}
