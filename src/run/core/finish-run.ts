import { basename, join } from "node:path";
import type { Logger } from "pino";
import { errorMessage } from "../../common/index.js";
import type { Crawler } from "../../crawl/index.js";
import type { FillStats, PagePool } from "../../extract/index.js";
import { type ChangeTracker, type JobHistory, writeContractState } from "../../history/index.js";
import {
	type ContractVerdict,
	OutputError,
	type RecordSink,
	RUN_FILES,
	type RunSummary,
	writeSummary,
} from "../../output/index.js";
import { type ReportCollector, rebuildReport } from "../../report/index.js";
import { forecastReport } from "../economics/forecast.js";
import { addDiscoverySummary, type DiscoveredTargets } from "../feed/discovery-sources.js";
import type { CreditBudget } from "../flow/credit-budget.js";
import type { StopController, StopReason } from "../flow/stop-controller.js";
import { type ContractCheck, judgeCompletedRun } from "../records/contract-check.js";
import { addCrawlSummary } from "../target/crawl-hook.js";
import type { Journal } from "../target/journal.js";

/** What a finished run returns: its summary, folder, why it stopped and its report. */
export interface RunJobResult {
	readonly summary: RunSummary;
	readonly runDir: string;
	readonly stopReason: StopReason | null;
	/** Why it stopped, in words (for the terminal even with --quiet when the output failed). */
	readonly stopMessage: string | null;
	/** `report.html` in the run folder; null when it could not be written (the run's outcome stands). */
	readonly reportPath: string | null;
	/**
	 * The dearest target of the job or this run, in worst-case credits (0 when none): after a budget stop,
	 * what each target left may need for a resume to finish.
	 */
	readonly dearestTarget: number;
}

export interface FinishParts {
	readonly runDir: string;
	readonly stops: StopController;
	/** The run's summary as it stands, with this stop reason. */
	readonly summarize: (reason: string | null) => RunSummary;
	/** Bugs thrown by the run's tasks: the run ends with the first as an internal error. */
	readonly failures: readonly unknown[];
	/** Every sink, results.jsonl included. */
	readonly sinks: readonly RecordSink[];
	/** The task journal; null for a re-extraction (nothing is sent, so nothing is journalled). */
	readonly journal: Pick<Journal, "close"> | null;
	readonly pagePool: PagePool | null;
	readonly crawler: Crawler | null;
	readonly discovered: DiscoveredTargets | null;
	/** Targets the run left out on purpose (fresh ones, the not-failed ones of `--retry-failed`). */
	readonly deselected: number;
	/** The budget's ledger: its dearest target goes to the result (RunJobResult.dearestTarget). */
	readonly budget: Pick<CreditBudget, "dearest">;
	/** Whether the job has `freshness` (the summary then counts fresh targets). */
	readonly freshness: boolean;
	readonly fill: FillStats | null;
	readonly changes: ChangeTracker | null;
	readonly contract: ContractCheck | null;
	/**
	 * The run's records wait for its end before they go into "latest": promoted then if it completed
	 * within its contract (or has none), else held.
	 */
	readonly heldBack: boolean;
	readonly history: JobHistory | null;
	readonly report: ReportCollector | null;
	/** The browser service's credits after the run, when it has `browser_session:` targets. */
	readonly browser: { readonly creditsBefore: number | null; readCredits(): Promise<number | null> } | null;
	/** Called once the files are closed: a second signal before then still writes summary.json (`lastWords`). */
	readonly filesClosed: () => void;
	/** run.log: closed here, after its last line. */
	readonly runLog: { readonly log: Logger; close(): void };
	/** The terminal's logger. */
	readonly logger?: Logger;
	/** What ended, in run.log and a broken contract's words. @default "run" */
	readonly kind?: "run" | "re-extraction";
}

/**
 * The end of a run, once nothing is in flight: the files closed, the summary built (with its crawl,
 * discovery, extraction, change and browser figures), the contract judged (a run that breaks it is held
 * out of "latest"), the history saved, summary.json written, then report.html. A run that lost its lease
 * writes none of these: the folder is another process's.
 */
export async function finishRun(parts: FinishParts): Promise<RunJobResult> {
	const { runDir, stops, summarize, failures, runLog, logger, changes, history } = parts;
	const log = runLog.log;
	if (failures.length > 0) {
		log.error({ event: "internal_error", error: errorMessage(failures[0]) }, "internal error while running targets");
	}
	await closeFiles(parts);
	parts.filesClosed();
	if (stops.leaseLost) {
		// Summary, history and report belong to the process that holds the folder now.
		runLog.close();
		return {
			summary: summarize(stops.reason),
			runDir,
			stopReason: stops.reason,
			stopMessage: stops.message,
			reportPath: null,
			dearestTarget: parts.budget.dearest,
		};
	}
	const internalError = failures.length ? `internal error: ${errorMessage(failures[0])}` : null;
	const summary = await summaryOf(parts, summarize(stops.reason ?? internalError));
	// Only a run that completed is judged and promoted: a stopped one stays `pending`, out of "latest".
	const finished = summary.complete && stops.reason === null;
	const verdict = parts.contract && finished ? judgeContract(parts, summary, stops) : null;
	if (parts.heldBack && history && finished) promote(parts, history, verdict);
	if (changes) {
		stops.guardOutput(() => changes.close());
		try {
			history?.save();
		} catch (error) {
			// The history is rebuilt from the run folders next time: nothing is lost.
			logger?.warn({ error: errorMessage(error) }, "could not save the job's history; it is rebuilt next run");
		}
	}
	summary.stop_message = stops.message;
	if (summary.stopped_reason === "budget_exhausted") summary.credits.dearest_target = parts.budget.dearest;
	try {
		writeSummary(join(runDir, RUN_FILES.summary), summary);
	} catch (error) {
		const failure = new OutputError(join(runDir, RUN_FILES.summary), error);
		stops.conclude("output_failed", failure.message);
	}
	log.info(
		{
			event: "run_end",
			complete: summary.complete,
			stopped_reason: summary.stopped_reason,
			done: summary.targets.done,
			credits_used: summary.credits.used,
		},
		`${parts.kind ?? "run"} ended`,
	);
	runLog.close();
	let reportPath: string | null = null;
	try {
		reportPath = parts.report ? await parts.report.write(runDir, summary) : await rebuildReport(runDir);
	} catch (error) {
		logger?.warn({ error: errorMessage(error) }, "could not write report.html");
	}
	return {
		summary,
		runDir,
		stopReason: stops.reason,
		stopMessage: stops.message,
		reportPath,
		dearestTarget: parts.budget.dearest,
	};
}

/**
 * Close every file the run holds, each even when one before it failed. A failed last flush (a full disk,
 * an NFS or EFS mount reporting a lost write-back) ends the run as an output failure, with its summary
 * written; anything else is a bug, thrown once every file is closed.
 */
async function closeFiles(parts: FinishParts): Promise<void> {
	const closers: ReadonlyArray<() => unknown> = [
		...parts.sinks.map((sink) => () => sink.close()),
		() => parts.pagePool?.close(),
		() => parts.journal?.close(),
		() => parts.crawler?.close(),
	];
	let bug: unknown = null;
	for (const close of closers) {
		try {
			await close();
		} catch (error) {
			if (error instanceof OutputError) parts.stops.outputFailed(error);
			else bug ??= error;
		}
	}
	if (bug !== null) throw bug;
}

/** The run's summary with what its parts add: browser credits, fresh targets, crawl, discovery, extraction, changes. */
async function summaryOf(parts: FinishParts, summary: RunSummary): Promise<RunSummary> {
	if (parts.browser) {
		const { creditsBefore } = parts.browser;
		const after = await parts.browser.readCredits().catch(() => null);
		summary.browser_credits_used = creditsBefore !== null && after !== null ? Math.max(0, creditsBefore - after) : null;
	}
	if (parts.freshness) summary.targets.fresh = parts.deselected;
	addCrawlSummary(summary, parts.crawler);
	addDiscoverySummary(summary, parts.discovered);
	paidOutsideForecast(summary, (parts.crawler?.sessionSitemapCredits() ?? 0) + (parts.discovered?.sessionCredits ?? 0));
	if (parts.fill) summary.extract = parts.fill.summary();
	if (parts.changes) summary.changes = { ...parts.changes.counts };
	return summary;
}

/**
 * `summary.forecast` is of the session's target records, the credits line of every credit. What the
 * session paid besides — robots.txt, sitemaps, map/search calls (`calls`), charges of targets left
 * without a record — is known once paid, not forecast: it goes into expected (and its interval) and
 * spent alike, so spent is all the session paid and the error stays the targets' own.
 */
function paidOutsideForecast(summary: RunSummary, calls: number): void {
	const { forecast, session } = summary;
	if (!forecast || !session) return;
	const paid = session.credits_used + calls;
	const outside = paid - forecast.spent;
	if (outside <= 0) return;
	const { expected, low, high } = forecast;
	summary.forecast = forecastReport({ expected: expected + outside, low: low + outside, high: high + outside }, paid);
}

/** A completed run held back from "latest": its contract state written, and promoted when it passed. */
function promote(parts: FinishParts, history: JobHistory, verdict: ContractVerdict | null): void {
	const passed = verdict?.passed ?? true;
	parts.stops.guardOutput(() =>
		writeContractState(parts.runDir, passed ? "passed" : "held", passed ? undefined : verdict?.broken),
	);
	if (!passed) return;
	try {
		history.foldRun(basename(parts.runDir));
	} catch (error) {
		// The next open folds it in from results.jsonl: it passed, so nothing holds it back.
		parts.logger?.warn({ error: errorMessage(error) }, "could not promote the run in the job's history");
	}
}

/** The contract's verdict on a completed run; a broken one becomes the run's stop reason, in run.log and on the terminal. */
function judgeContract(parts: FinishParts, summary: RunSummary, stops: StopController): ContractVerdict | null {
	if (!parts.contract) return null;
	const { verdict, brokenMessage } = judgeCompletedRun(
		parts.contract,
		summary,
		parts.runDir,
		parts.deselected,
		parts.kind ?? "run",
	);
	if (brokenMessage !== null) {
		stops.conclude("contract_failed", brokenMessage);
		parts.runLog.log.warn({ event: "contract_failed", broken: verdict.broken.length }, brokenMessage);
		parts.logger?.warn({ reason: "contract_failed" }, brokenMessage);
	}
	return verdict;
}
