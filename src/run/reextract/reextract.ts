import { basename, extname, join } from "node:path";
import type { Logger } from "pino";
import { createTaskQueue, type LastWords, type OptionWords, UsageError } from "../../common/index.js";
import { createPagePool, defaultPageThreads, type ExtractPlan } from "../../extract/index.js";
import { createChangeTracker, type JobHistory, writeContractState } from "../../history/index.js";
import type { Job } from "../../job/index.js";
import {
	createPageStore,
	createRecordScrubber,
	createRunLog,
	findCorruptLines,
	jobOutputDir,
	newRunId,
	openAppendFile,
	type ResultRecord,
	RUN_FILES,
	type RunSummary,
	writeSummary,
} from "../../output/index.js";
import { createReportCollector } from "../../report/index.js";
import { finishRun, type RunJobResult } from "../core/finish-run.js";
import { createRunFolder } from "../core/open-run.js";
import { createStopController } from "../flow/stop-controller.js";
import { lockForReextraction, warnIfTookOver } from "../locks/job-lock.js";
import type { LockLease, RunLock } from "../locks/run-lock.js";
import { createContractCheck } from "../records/contract-check.js";
import { createRecordWriter, openRecordSinks } from "../records/record-writer.js";
import { CorruptResultsError } from "../records/resume-state.js";
import { buildSummary, createRunStatistics } from "../records/run-statistics.js";
import { extractPlansOf } from "../target/extract-overrides.js";
import { createRunFillStats } from "../target/extract-record.js";
import { reextracted } from "./reextract-record.js";
import {
	missingReason,
	type SourceEntry,
	sourceEntries,
	sourceHasStoredPage,
	sourceRunDir,
	storedPagePath,
} from "./reextract-source.js";

/** The run folder's list of the source's targets that had no stored page to read (no record each). */
export const MISSING_PAGES_FILE = "missing-pages.txt";

/** What a stopped re-extraction says: it is not resumed, it is run again. */
const STOPPED_MESSAGE = "stop requested: the re-extraction stopped; run it again";

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
	/** How long pages being read may finish after a stop, milliseconds. @default 30000 */
	readonly gracePeriodMs?: number;
	/** Scrubbed from records and run.log. */
	readonly secrets?: readonly string[];
	readonly logger?: Logger;
	/** The new run's id. @default from the start time */
	readonly runId?: string;
	/** Page worker threads. @default the page pool's (`defaultPageThreads`) */
	readonly threads?: number;
	/** The job's lock, taken by the caller before the run folder; else taken here (and given back at the end). */
	readonly lock?: RunLock;
	/** The lease of the lock taken here (without `lock`). @default 30 s, the machine's name */
	readonly lockLease?: LockLease;
	/** A second signal ends the process at once: summary.json is then written as it stands. */
	readonly lastWords?: LastWords;
	/** How the entry point spells the options a refusal names (`--run`, `run`). @default CLI_WORDS */
	readonly words?: OptionWords;
}

/**
 * A new run of the job from stored pages (docs/guides/extraction.md, "Re-extraction and data contracts"): every record of the source that has
 * its page kept (`content: files`) is read again with the job file's current `extract:` in the page
 * pool, and written through the one record path with `credits_used` 0 — nothing is sent to the service.
 * The source is read as a stream (a run's results.jsonl front to back, or the store's latest records
 * run by run) with a few pages in flight per worker, so memory does not grow with the page count.
 *
 * It is a run on the run's parts: the job's lock and its fence on every write, the stop controller
 * (a signal, a lost lease, a failed write), the task queue, and `finishRun` for the summary, the
 * contract's verdict, the promotion and the report. The records keep their page's fetch times
 * (`started_at`, `finished_at`): freshness still counts from the fetch, and the store's "latest" (the
 * later finish wins; on a tie the later fold) takes them over the records they were read from. Throws
 * `UsageError` (no such run, nothing to read with) before the run folder is made.
 */
export async function reextractRun(options: ReextractOptions): Promise<RunJobResult> {
	const { job, history } = options;
	const plan = job.extraction?.plan ?? null;
	if (!plan || plan.fields.length === 0)
		throw new UsageError(`${job.displayFile}: no \`extract:\` fields to read the stored pages with`);
	const jobDir = jobOutputDir(options.outRoot, job.name);
	const sourceDir =
		options.from === "latest" ? null : sourceRunDir(jobDir, options.from, job.name, options.outRoot, options.words);
	if (sourceDir === null && history.size === 0)
		throw new UsageError(`no records of job ${job.name} under ${options.outRoot}: nothing to re-extract`);
	if (sourceDir !== null) {
		// A damaged source is said before anything is written, with what repairs it (the caller names the command).
		const jsonl = join(sourceDir, RUN_FILES.jsonl);
		const corrupt = findCorruptLines(jsonl);
		if (corrupt.count > 0) throw new CorruptResultsError(jsonl, corrupt.lines, corrupt.count);
	}
	// No page kept anywhere in the source: an empty run that says success would hide why nothing was read.
	if (!sourceHasStoredPage(jobDir, history, sourceDir)) throw noStoredPagesError(job, options.from);
	const startedAt = Date.now();
	const runId = options.runId ?? newRunId(new Date(startedAt));
	// A re-extraction writes a run folder and the job's store like a run: under the job's lock, as a run.
	const lock = options.lock ?? lockForReextraction(options.outRoot, job.name, runId, options.lockLease);
	if (!options.lock) warnIfTookOver(lock, options.logger);
	try {
		const runDir = createRunFolder(options.outRoot, job.name, runId);
		return await readStoredPages({ ...options, plan, jobDir, sourceDir, runId, runDir, lock, startedAt });
	} finally {
		if (!options.lock) lock.release();
	}
}

/** Why a source with no stored page cannot be re-extracted, and what keeps pages for the next time. */
function noStoredPagesError(job: Job, from: string): UsageError {
	const source = from === "latest" ? `the latest records of job ${job.name}` : `run ${from} of job ${job.name}`;
	const why =
		job.output.content === "files"
			? "its runs kept no page file (they ran before output.content was files, or no target was fetched ok)"
			: `the job keeps no page files (output.content: ${job.output.content}): re-extraction reads the pages a run kept with output.content: files`;
	return new UsageError(
		`nothing to re-extract: ${source} ${from === "latest" ? "have" : "has"} no stored page; ${why}. ${job.output.content === "files" ? "Run" : `Set \`output: {content: files}\` in ${job.displayFile}, run`} the job again to keep its pages, then extract reads them with any later extract: for 0 credits`,
	);
}

interface OpenedReextraction extends ReextractOptions {
	readonly plan: ExtractPlan;
	readonly jobDir: string;
	readonly sourceDir: string | null;
	readonly runId: string;
	readonly runDir: string;
	readonly lock: RunLock;
	readonly startedAt: number;
}

/** The run itself, in its new folder: every stored page of the source read, written and finished. */
async function readStoredPages(options: OpenedReextraction): Promise<RunJobResult> {
	const { job, runDir } = options;
	const parts = await openReextractionParts(options);
	const { stops, stats, missing, fill } = parts;
	const threads = options.threads ?? defaultPageThreads();
	const pool = await createPagePool({
		timeoutMs: job.pageTimeoutMs,
		threads,
		onError: (error) =>
			parts.log.warn({ event: "page_pool_error", error: error.message }, `page pool: ${error.message}`),
	});
	const failures: unknown[] = [];
	// As many pages wait as the pool has workers, twice over: the rest of the source stays unread meanwhile.
	const queue = createTaskQueue({ concurrency: threads * 2, onError: (error) => failures.push(error) });
	stops.onStop(() => queue.clear());
	const progress: SourceProgress = {
		newestSource: options.sourceDir === null ? "" : basename(options.sourceDir),
		seen: 0,
		read: false,
	};
	const summarize = (reason: string | null) => reextractionSummary(options, parts, progress, reason, threads);
	// A second signal: the process ends now; the summary is written as it stands (never promoted).
	const removeLastWord =
		options.lastWords?.add(() => {
			if (stops.leaseLost) return "the job's lock was taken over: this run's folder is another process's now";
			stats.abandoned += queue.pending;
			const summary = summarize(stops.reason ?? "interrupted");
			if (fill) summary.extract = fill.summary();
			writeSummary(join(runDir, RUN_FILES.summary), summary);
			return `summary.json written in ${runDir}`;
		}) ?? (() => undefined);
	try {
		await readSource(options, parts, { pool, queue, progress });
	} catch (error) {
		// The source could not be read to its end: the run ends as an internal error, its summary says so.
		failures.push(error);
	}
	await queue.onIdle();
	// Ctrl-C after the last page went to a worker, every page read within the grace period: complete.
	if (progress.read && stats.done >= progress.seen && stops.finishedDespiteSignal())
		parts.log.info({ event: "run_complete_despite_stop" }, "every page has its record: the re-extraction is complete");
	stops.close();
	stops.guardOutput(() => missing.close());
	const result = await finishRun({
		...parts,
		runDir,
		summarize,
		failures,
		journal: null,
		pagePool: pool,
		crawler: null,
		discovered: null,
		deselected: 0,
		// Nothing is paid in a re-extraction: no target has a cost.
		budget: { dearest: 0 },
		freshness: false,
		heldBack: true,
		history: options.history,
		browser: null,
		filesClosed: removeLastWord,
		kind: "re-extraction",
		...(options.logger ? { logger: options.logger } : {}),
	});
	// A bug (not a page's failure): said as one, after the folder says where the re-extraction stopped.
	if (failures.length > 0) throw failures[0];
	return result;
}

/** How far the source has been read: the newest run read from, pages handed out, and whether it ended. */
interface SourceProgress {
	newestSource: string;
	seen: number;
	read: boolean;
}

/** run.log, the stop controller and the record side (sinks, changes, fill, contract, report) of the new folder. */
async function openReextractionParts(options: OpenedReextraction) {
	const { job, history, runId, runDir } = options;
	// Kept out of "latest" until it ends within the job's contract (history/contract-state.ts).
	writeContractState(runDir, "pending");
	const runLog = createRunLog(join(runDir, RUN_FILES.log), options.secrets ?? []);
	const log = runLog.log;
	log.info(
		{ event: "run_start", run_id: runId, job: job.name, reextracted_from: options.from },
		"re-extraction started",
	);
	const stops = createStopController({
		signal: options.signal,
		lock: options.lock,
		log,
		signalMessage: STOPPED_MESSAGE,
		...(options.gracePeriodMs !== undefined ? { gracePeriodMs: options.gracePeriodMs } : {}),
		...(options.logger ? { logger: options.logger } : {}),
	});
	const { jsonl, sinks } = openRecordSinks(job, runDir);
	const changes = createChangeTracker(history, runDir, true);
	const fill = await createRunFillStats(job, null);
	const contract = job.contract ? createContractCheck(job.contract) : null;
	const stats = createRunStatistics();
	const report = createReportCollector(options.startedAt);
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
		// The same lease fence as a run's records: a folder taken over is not written to.
		fence: stops,
	});
	const missing = createMissingList(runDir);
	const pages = createPageStore(runDir);
	return { runLog, log, stops, sinks, changes, fill, contract, stats, report, write, missing, pages };
}
type ReextractionParts = Awaited<ReturnType<typeof openReextractionParts>>;

/** Every stored page of the source to the page pool, a page at a time as the queue has room; missing ones listed. */
async function readSource(
	options: OpenedReextraction,
	parts: ReextractionParts,
	reading: {
		readonly pool: Awaited<ReturnType<typeof createPagePool>>;
		readonly queue: ReturnType<typeof createTaskQueue>;
		readonly progress: SourceProgress;
	},
): Promise<void> {
	const { job, history } = options;
	const { stops, pages, write, missing } = parts;
	const { pool, queue, progress } = reading;
	const planOf = planChooser(await extractPlansOf(job, options.plan, options.signal), parts.log, options.logger);
	const readOne = async (entry: SourceEntry, pagePath: string) => {
		const record = await reextracted(entry.record, pagePath, planOf(entry.record), job, pool.run, stops.inflight);
		if (record === null) return;
		stops.guardOutput(() => {
			record.content_path = pages.share(record.id, pagePath, extname(pagePath).slice(1) || "html");
			write(record, null);
		});
	};
	const noteMissing = (id: string, url: string, reason: string) =>
		stops.guardOutput(() => missing.add(id, url, reason));
	for (const entry of sourceEntries(options.jobDir, history, options.sourceDir, noteMissing)) {
		if (stops.stopping) break;
		const source = basename(entry.runDir);
		if (source > progress.newestSource) progress.newestSource = source;
		const pagePath = storedPagePath(entry);
		if (pagePath === null) {
			noteMissing(entry.record.id, entry.record.url, missingReason(entry.record));
			continue;
		}
		progress.seen += 1;
		queue.add(() => readOne(entry, pagePath));
		await queue.onSizeLessThan(1);
	}
	progress.read = !stops.stopping;
}

/** The re-extraction's summary as it stands: the source it read, the pages missing, the changes. */
function reextractionSummary(
	options: OpenedReextraction,
	parts: ReextractionParts,
	progress: SourceProgress,
	reason: string | null,
	threads: number,
): RunSummary {
	const { stats, missing, changes } = parts;
	const summary = buildSummary(stats, {
		job: options.job.name,
		runId: options.runId,
		resumed: false,
		stopReason: reason,
		survey: { total: reason === null ? stats.done : progress.seen, duplicates: 0, skippedRows: 0 },
		maxCredits: null,
		rateLimitPauses: 0,
		concurrency: threads,
		startedMs: options.startedAt,
		finishedMs: Date.now(),
	});
	// Stopped before the source's end: the pages it has left are not known (it is read as a stream), and
	// the pages handed out so far are not the total ("1 target" left of a 400-page run stopped at 25).
	if (reason !== null && !progress.read) summary.targets = { ...summary.targets, total: null, remaining: null };
	// Nothing was fetched: the records' durations are the source run's fetches, not this run's, so it has no
	// latency, as a run whose targets were all fresh.
	summary.latency_ms = { p50: null, p95: null };
	summary.reextracted_from = progress.newestSource || options.from;
	if (options.from === "latest") summary.reextracted_latest = true;
	summary.missing_pages = missing.count;
	summary.changes = { ...changes.counts };
	return summary;
}

/**
 * Each page with the fields it was fetched to be read with (a target's or its source's own `extract`);
 * a crawl's pages whose seed had its own are read with the job's, said once.
 */
function planChooser(
	plans: Awaited<ReturnType<typeof extractPlansOf>>,
	log: Logger,
	logger: Logger | undefined,
): (record: ResultRecord) => ExtractPlan {
	let unmatchedWarned = false;
	return (record) => {
		if (plans.crawledPagesUnmatched && (record.depth ?? 0) > 0 && !unmatchedWarned) {
			unmatchedWarned = true;
			const message =
				"seeds of this crawl set their own extract: pages found from them are read with the job's own fields (a record does not say which seed found it)";
			log.warn({ event: "extract_override_unmatched" }, message);
			logger?.warn({}, message);
		}
		return plans.planOf(record.id);
	};
}

/** missing-pages.txt, opened at its first line: one target without a stored page a line. */
function createMissingList(runDir: string) {
	let file: ReturnType<typeof openAppendFile> | null = null;
	let count = 0;
	return {
		get count() {
			return count;
		},
		add(id: string, url: string, reason: string) {
			file ??= openAppendFile(join(runDir, MISSING_PAGES_FILE));
			file.append(`${oneLine(id)}\t${oneLine(url)}\t${reason}\n`);
			count += 1;
		},
		close() {
			file?.close();
		},
	};
}

/** A value on one line of missing-pages.txt (tabs and newlines would cut it). */
function oneLine(text: string): string {
	return String(text).replace(/[\t\r\n]+/g, " ");
}
