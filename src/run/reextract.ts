import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { basename, extname, join } from "node:path";
import type { Logger } from "pino";
import { contentOf } from "../api/index.js";
import {
	errorMessage,
	FileTooLargeError,
	jsonlLines,
	NotRegularFileError,
	readRegularFile,
	UsageError,
} from "../common/index.js";
import { createPagePool, type ExtractPlan, PageTooComplexError, serviceData } from "../extract/index.js";
import { createChangeTracker, type JobHistory, writeContractState } from "../history/index.js";
import type { Job } from "../job/index.js";
import {
	createPageStore,
	createRecordScrubber,
	createRunDir,
	createRunLog,
	findCorruptLines,
	jobOutputDir,
	newRunId,
	openAppendFile,
	parseRecordLine,
	type ResultRecord,
	RUN_FILES,
	writeSummary,
} from "../output/index.js";
import { createReportCollector } from "../report/index.js";
import { createContractCheck, judgeCompletedRun } from "./contract-check.js";
import { extractPlansOf } from "./extract-overrides.js";
import { createRunFillStats } from "./extract-record.js";
import { createRecordWriter, openRecordSinks } from "./record-writer.js";
import { CorruptResultsError } from "./resume-state.js";
import type { RunJobResult } from "./run-job.js";
import { buildSummary, createRunStatistics } from "./run-statistics.js";
import { setUseful, uselessReasonOf } from "./useful-record.js";

/** The run folder's list of the source's targets that had no stored page to read (no record each). */
export const MISSING_PAGES_FILE = "missing-pages.txt";

/** A stored page's place, as records name it: a file directly in the run folder's `pages/`. */
const PAGE_PATH = /^pages\/[^/\\]+$/;

export interface ReextractOptions {
	readonly job: Job;
	/** Root of output folders (`--out`): `<outRoot>/<job>/<run-id>/`. */
	readonly outRoot: string;
	/** A run id of the job (its folder name), or `latest`: the latest ok record of every target. */
	readonly from: string;
	/** The job's store: the previous records (change tracking, `latest`) and where this run is promoted. */
	readonly history: JobHistory;
	/** Stop: no new page is read; the run folder says it is incomplete (and is never promoted). */
	readonly signal: AbortSignal;
	/** Scrubbed from records and run.log. */
	readonly secrets?: readonly string[];
	readonly logger?: Logger;
	/** The new run's id. @default from the start time */
	readonly runId?: string;
	/** Page worker threads. @default the page pool's (cores but one, at most 4) */
	readonly threads?: number;
}

/** One record of the source and the run folder its page is in. */
interface SourceEntry {
	readonly record: ResultRecord;
	readonly runDir: string;
}

/**
 * A new run of the job from stored pages (docs/guides/extraction.md, "Re-extraction and data contracts"): every record of the source that has
 * its page kept (`content: files`) is read again with the job file's current `extract:` in the page
 * pool, and written through the one record path with `credits_used` 0 — nothing is sent to the service.
 * The source is read as a stream (a run's results.jsonl front to back, or the store's latest records
 * run by run) with a few pages in flight per worker, so memory does not grow with the page count.
 *
 * The records keep their page's fetch times (`started_at`, `finished_at`): freshness still counts from
 * the fetch, and the store's "latest" (the later finish wins; on a tie the later fold) takes them over
 * the records they were read from. The run is promoted when it ends, if it keeps the job's contract.
 * Throws `UsageError` (no such run, nothing to read with) before the run folder is made.
 */
export async function reextractRun(options: ReextractOptions): Promise<RunJobResult> {
	const { job, history } = options;
	const plan = job.extraction?.plan ?? null;
	if (!plan || plan.fields.length === 0)
		throw new UsageError(`${job.displayFile}: no \`extract:\` fields to read the stored pages with`);
	const jobDir = jobOutputDir(options.outRoot, job.name);
	const sourceDir = options.from === "latest" ? null : sourceRunDir(jobDir, options.from, job.name, options.outRoot);
	if (sourceDir === null && history.size === 0)
		throw new UsageError(`no records of job ${job.name} under ${options.outRoot}: nothing to re-extract`);
	if (sourceDir !== null) {
		// A damaged source is said before anything is written, with what repairs it (the caller names the command).
		const jsonl = join(sourceDir, RUN_FILES.jsonl);
		const corrupt = findCorruptLines(jsonl);
		if (corrupt.count > 0) throw new CorruptResultsError(jsonl, corrupt.lines, corrupt.count);
	}
	/** The newest run the records were read from: what `reextracted_from` names for `--run latest`. */
	let newestSource = sourceDir === null ? "" : basename(sourceDir);

	const startedAt = Date.now();
	const runId = options.runId ?? newRunId(new Date(startedAt));
	const runDir = createRunDir(options.outRoot, job.name, runId);
	// Kept out of "latest" until it ends within the job's contract (history/contract-state.ts).
	writeContractState(runDir, "pending");
	const runLog = createRunLog(join(runDir, RUN_FILES.log), options.secrets ?? []);
	const log = runLog.log;
	log.info(
		{ event: "run_start", run_id: runId, job: job.name, reextracted_from: options.from },
		"re-extraction started",
	);

	const { jsonl, sinks } = openRecordSinks(job, runDir);
	const changes = createChangeTracker(history, runDir, true);
	const fill = await createRunFillStats(job, null);
	const contract = job.contract ? createContractCheck(job.contract) : null;
	const stats = createRunStatistics();
	const report = createReportCollector(startedAt);
	const pages = createPageStore(runDir);
	const write = createRecordWriter({
		scrub: createRecordScrubber(options.secrets ?? []),
		changes,
		fill,
		contract,
		jsonl,
		sinks,
		// Promoted at the end, as a whole, if it keeps the contract.
		history: null,
		historyRun: 0,
		stats,
		report,
	});
	let missing: ReturnType<typeof openAppendFile> | null = null;
	let missingCount = 0;
	const noteMissing = (id: string, url: string, reason: string) => {
		missing ??= openAppendFile(join(runDir, MISSING_PAGES_FILE));
		missing.append(`${oneLine(id)}\t${oneLine(url)}\t${reason}\n`);
		missingCount += 1;
	};

	const pool = await createPagePool({
		timeoutMs: job.pageTimeoutMs,
		...(options.threads !== undefined ? { threads: options.threads } : {}),
	});
	// As many pages wait as the pool has workers, twice over (the pool's own default count).
	const threads = options.threads ?? Math.min(4, Math.max(1, availableParallelism() - 1));
	const inFlight = new Set<Promise<void>>();
	const failures: unknown[] = [];
	let seen = 0;
	// Each page with the fields it was fetched to be read with: a target's or its source's own `extract`.
	const plans = await extractPlansOf(job, plan, options.signal);
	let unmatchedWarned = false;
	const planOf = (record: ResultRecord): ExtractPlan => {
		if (plans.crawledPagesUnmatched && (record.depth ?? 0) > 0 && !unmatchedWarned) {
			unmatchedWarned = true;
			const message =
				"seeds of this crawl set their own extract: pages found from them are read with the job's own fields (a record does not say which seed found it)";
			log.warn({ event: "extract_override_unmatched" }, message);
			options.logger?.warn({}, message);
		}
		return plans.planOf(record.id);
	};
	const readOne = async (entry: SourceEntry, pagePath: string) => {
		const record = await reextracted(entry.record, pagePath, planOf(entry.record), job, pool.run, options.signal);
		if (record === null) return;
		record.content_path = pages.share(record.id, pagePath, extname(pagePath).slice(1) || "html");
		write(record, null);
	};
	try {
		for (const entry of sourceEntries(jobDir, history, sourceDir, noteMissing)) {
			if (options.signal.aborted) break;
			const source = basename(entry.runDir);
			if (source > newestSource) newestSource = source;
			const pagePath = storedPagePath(entry);
			if (pagePath === null) {
				const record = entry.record;
				noteMissing(
					record.id,
					record.url,
					record.status === "ok" ? "no stored page" : `no stored page (${record.error ?? record.status})`,
				);
				continue;
			}
			seen += 1;
			const task: Promise<void> = readOne(entry, pagePath)
				.catch((error: unknown) => {
					failures.push(error);
				})
				.finally(() => inFlight.delete(task));
			inFlight.add(task);
			// A few pages per worker wait their turn; the rest of the source stays unread meanwhile.
			if (inFlight.size >= threads * 2) await Promise.race(inFlight);
		}
		await Promise.all(inFlight);
	} finally {
		await pool.close();
		for (const sink of sinks) await sink.close();
		(missing as ReturnType<typeof openAppendFile> | null)?.close();
		changes.close();
	}
	if (failures.length > 0) {
		runLog.close();
		throw failures[0];
	}

	const stopReason = options.signal.aborted ? ("interrupted" as const) : null;
	const summary = buildSummary(stats, {
		job: job.name,
		runId,
		resumed: false,
		stopReason,
		survey: { total: stopReason === null ? stats.done : seen, duplicates: 0, skippedRows: 0 },
		maxCredits: null,
		rateLimitPauses: 0,
		concurrency: threads,
		startedMs: startedAt,
		finishedMs: Date.now(),
	});
	summary.reextracted_from = newestSource || options.from;
	if (options.from === "latest") summary.reextracted_latest = true;
	summary.missing_pages = missingCount;
	summary.changes = { ...changes.counts };
	if (fill) summary.extract = fill.summary();
	let finalReason: RunJobResult["stopReason"] = stopReason;
	let stopMessage: string | null = stopReason ? "stop requested: the re-extraction stopped; run it again" : null;
	if (summary.complete) {
		const judged = contract ? judgeCompletedRun(contract, summary, runDir, 0, "re-extraction") : null;
		if (judged?.brokenMessage) {
			finalReason = "contract_failed";
			stopMessage = judged.brokenMessage;
			writeContractState(runDir, "held", judged.verdict.broken);
			log.warn({ event: "contract_failed", broken: judged.verdict.broken.length }, stopMessage);
		} else {
			writeContractState(runDir, "passed");
			try {
				history.foldRun(runId);
			} catch (error) {
				// The next open folds it in from results.jsonl: it passed, so nothing holds it back.
				options.logger?.warn({ error: errorMessage(error) }, "could not promote the run in the job's history");
			}
		}
	}
	summary.stop_message = stopMessage;
	writeSummary(join(runDir, RUN_FILES.summary), summary);
	log.info(
		{
			event: "run_end",
			complete: summary.complete,
			stopped_reason: summary.stopped_reason,
			done: summary.targets.done,
		},
		"re-extraction ended",
	);
	runLog.close();
	let reportPath: string | null = null;
	try {
		reportPath = await report.write(runDir, summary);
	} catch (error) {
		options.logger?.warn({ error: errorMessage(error) }, "could not write report.html");
	}
	// Nothing is paid in a re-extraction: no target has a cost.
	return { summary, runDir, stopReason: finalReason, stopMessage, reportPath, dearestTarget: 0 };
}

/** The folder of a run id of this job: a folder name under `<out>/<job>/`, with records. */
function sourceRunDir(jobDir: string, runId: string, jobName: string, outRoot: string): string {
	// A run id names a folder of this job, nothing else: no path may lead out of output/<job>/.
	if (!/^[\w.-]+$/.test(runId) || runId.startsWith("."))
		throw new UsageError(
			`--run: ${JSON.stringify(runId)} is not a run id (a folder name under output/<job>/) nor latest`,
		);
	const dir = join(jobDir, runId);
	if (!existsSync(join(dir, RUN_FILES.jsonl)))
		throw new UsageError(`--run: no run ${runId} of job ${jobName} under ${outRoot}`);
	return dir;
}

/**
 * The source's records, one at a time: a run's results.jsonl front to back, or the latest ok record of
 * every target (the store's, run by run), then the targets that never had one (no page to read: listed).
 */
function* sourceEntries(
	jobDir: string,
	history: JobHistory,
	sourceDir: string | null,
	noteMissing: (id: string, url: string, reason: string) => void,
): Generator<SourceEntry> {
	if (sourceDir !== null) {
		for (const record of readRecords(join(sourceDir, RUN_FILES.jsonl))) yield { record, runDir: sourceDir };
		return;
	}
	for (const { record, run } of history.latestOkEntries()) yield { record, runDir: join(jobDir, run) };
	for (const { id, url } of history.neverOk()) noteMissing(id, url, "never fetched ok");
}

/** A run's records, a megabyte of the file at a time (a results.jsonl may be larger than memory). */
function* readRecords(path: string): Generator<ResultRecord> {
	for (const line of jsonlLines(path)) {
		const record = parseRecordLine(line.text, true);
		if (record !== null) yield record;
	}
}

/** Where a record's page is, when it was kept and is still there. */
function storedPagePath(entry: SourceEntry): string | null {
	const path = entry.record.content_path;
	if (typeof path !== "string" || !PAGE_PATH.test(path)) return null;
	const absolute = join(entry.runDir, path);
	return existsSync(absolute) ? absolute : null;
}

/** The record read again from its stored page: the same page and fetch, this job's fields, no credits. */
async function reextracted(
	source: ResultRecord,
	pagePath: string,
	plan: ExtractPlan,
	job: Job,
	run: Awaited<ReturnType<typeof createPagePool>>["run"],
	signal: AbortSignal,
): Promise<ResultRecord | null> {
	const { content: _inline, content_hash: _hash, change: _change, ...kept } = source;
	const record: ResultRecord = {
		...kept,
		status: "ok",
		error: null,
		message: null,
		// Nothing was sent: no credits, no attempts, no task.
		credits_used: 0,
		credits_remaining: null,
		attempts: 0,
		task_id: null,
		content_path: null,
		content_hash: null,
		change: null,
	};
	for (const name of job.extraction?.carry ?? []) {
		const carried = record as unknown as Record<string, unknown>;
		carried[name] = carried[name] ?? null;
	}
	let body: Buffer;
	try {
		// Only a regular file within the job's body cap: a FIFO blocked the whole extract, a link to /dev/zero
		// or a 600 MB page ran it out of memory. That page fails; the others are read.
		body = readRegularFile(pagePath, job.maxBodyBytes);
	} catch (error) {
		if (!(error instanceof NotRegularFileError || error instanceof FileTooLargeError)) throw error;
		const failed: ResultRecord = {
			...record,
			status: "failed",
			error: "page_unreadable",
			message: errorMessage(error),
		};
		setUseful(failed, "page_unreadable");
		return failed;
	}
	let html: string | null;
	let json: Record<string, unknown> | null = null;
	const extension = extname(pagePath).toLowerCase();
	if (extension === ".json") {
		try {
			json = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
		} catch {
			json = null;
		}
		const content = json ? contentOf(json) : null;
		html = typeof content === "string" ? content : null;
	} else html = extension === ".html" || extension === ".htm" ? body.toString("utf8") : null;
	const data: Record<string, unknown> = {};
	const blockCss = job.blockSignatures?.css ?? [];
	let cssBlocked: string | undefined;
	if (html === null) {
		record.message = `the stored page ${basename(pagePath)} is not html: nothing to extract`;
	} else {
		try {
			const read = await run({ html, url: source.url, plan, links: false, blockCss }, signal);
			Object.assign(data, read.data);
			cssBlocked = read.blocked;
			if (read.error !== undefined) record.message = `extraction failed: ${read.error}`.slice(0, 2000);
		} catch (error) {
			if (signal.aborted) return null;
			if (!(error instanceof PageTooComplexError)) throw error;
			record.status = "failed";
			record.error = "page_too_complex";
			record.message = error.message;
			delete record.data;
			setUseful(record, "page_too_complex");
			return record;
		}
	}
	for (const field of plan.fields) if (!(field.name in data)) data[field.name] = null;
	const fromService = json ? serviceData(json) : null;
	record.data = fromService ? { ...data, ...fromService } : data;
	setUseful(
		record,
		uselessReasonOf(record, () => html, plan.fields, job, cssBlocked),
	);
	return record;
}

/** A value on one line of missing-pages.txt (tabs and newlines would cut it). */
function oneLine(text: string): string {
	return String(text).replace(/[\t\r\n]+/g, " ");
}
