import { basename, dirname, resolve } from "node:path";
import type { Logger } from "pino";
import {
	checkOptions,
	checkPathArgument,
	LIBRARY_WORDS,
	type OptionKinds,
	ScrapejobError,
	UsageError,
} from "../common/index.js";
import { formatProblem, loadJob, SourceScanStoppedError } from "../job/index.js";
import type { RunSummary } from "../output/index.js";
import { CorruptResultsError, type ProgressSnapshot, ResumeError } from "../run/index.js";
import { type PrepareContext, prepareRuns } from "./prepare-runs.js";
import { checkResumeOnlyOptions, checkRunOptions, durationOption } from "./run-option-checks.js";
import { releasePlannedRuns } from "./run-plan.js";
import { runPlannedJob } from "./run-planned.js";
import { NoScraperAccessError } from "./scraper-access.js";
import { connectService } from "./service-connection.js";

/** Options of `runJobFile`: the flags of `scrapejob run`, plus what only code can pass (a signal, a progress callback). */
export interface RunJobFileOptions {
	/**
	 * Run against an in-process emulator and demo site instead of the service (the job may name the
	 * site as `${SCRAPEJOB_DEMO_SITE}`), as `--sandbox`. @default false
	 */
	readonly sandbox?: boolean;
	/** Root folder of results: `<out>/<job>/<run-id>/`, relative to `cwd`, as `--out`. @default "output" */
	readonly out?: string;
	/** Continue the job's latest incomplete run (`true`) or the given run id, as `--resume [RUN_ID]`. */
	readonly resume?: boolean | string;
	/**
	 * As `--continue`: resume the job's newest run (of this `shard`) when it is unfinished, else start a
	 * new run; a complete run is never reopened. Not with `resume` or `retryFailed` (`UsageError`).
	 */
	readonly continue?: boolean;
	/**
	 * With `resume` (or `continue`): accept a job whose targets changed (changed targets run as new), as
	 * `--force`. Without either, `UsageError`: it would start a new run, paid for in full.
	 */
	readonly force?: boolean;
	/**
	 * With `resume` (or `continue`): move lines of results.jsonl that are not records aside, as `--repair`.
	 * Without either, `UsageError`: it would start a new run, paid for in full.
	 */
	readonly repair?: boolean;
	/** As `--max-credits`: a new run's budget, or a resumed run's new one (above what it spent). @default the job's `max_credits`; on a resume, the run's own */
	readonly maxCredits?: number;
	/** As `--concurrency`: in-flight fetches (never above the account's limit). */
	readonly concurrency?: number;
	/** As `--freshness`: a duration (`24h`; `0` fetches all). @default the job's `freshness` */
	readonly freshness?: string;
	/**
	 * As `--outage-timeout`: how long the service may be down (unreachable, or 5xx to everything) before
	 * the run stops with `stopped_reason: service_unavailable`; a duration (`10m`). @default the job's `outage_timeout`
	 */
	readonly outageTimeout?: string;
	/** As `--retry-failed [RUN_ID]`: only the targets whose latest record failed. */
	readonly retryFailed?: boolean | string;
	/** As `--shard I/N` (`auto/N` reads JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX). */
	readonly shard?: string;
	/**
	 * As `--accept RUN_ID`: before the run, promote that run of the job, held back by its data contract,
	 * to "latest" (throws `UsageError` for a run that is not there or not complete).
	 */
	readonly accept?: string;
	/** As `--notify URL`: POST the summary there at the end. */
	readonly notify?: string;
	/**
	 * As `--metrics FILE`: the run's metrics in the Prometheus text format, written atomically every 10 s
	 * and at the end (relative to `cwd`). @default the job's `metrics:`
	 */
	readonly metrics?: string;
	/**
	 * As `--healthcheck URL`: GET `URL/start` at the start, `URL` on success, `URL/fail` otherwise (each
	 * within 10 s; never changes the result; never logged). @default the job's `healthcheck:`
	 */
	readonly healthcheck?: string;
	/** As `--task-poll-ms`: the first wait between polls of a task, ms (grows to 10×). @default 1,000 */
	readonly taskPollMs?: number;
	/** As `--grace-period`: how long in-flight fetches may finish after `signal` aborts, ms. @default 30,000 */
	readonly gracePeriodMs?: number;
	/**
	 * Abort to stop: no new fetches, in-flight ones finish; the summary says `complete: false`. Aborted
	 * before the first fetch (already aborted, or while the sources are read or the account looked up),
	 * it throws `SourceScanStoppedError`: nothing was sent.
	 */
	readonly signal?: AbortSignal;
	/**
	 * As `--fleet URL`: work as one worker of the job's fleet run, coordinated through PostgreSQL at that
	 * address (`postgres://…`, a secret: never written to a file or a message); any number of workers, in
	 * this process or others, on any hosts, share the targets, the budget and the concurrency limit
	 * (docs/guides/fleet.md). The result's `fleet` says where the whole fleet run stands. Not with
	 * `resume`, `repair`, `shard`, `accept` or a `retryFailed` run id (`UsageError`; `retryFailed: true`
	 * is a new fleet run of the fleet's failed targets). @default `SCRAPEJOB_FLEET_URL` of `env`, else of
	 * the `config` file; none: a local run
	 */
	readonly fleet?: string;
	/**
	 * As `--fleet-run NAME`: join or open the fleet run of that name; when it is complete already,
	 * `ResumeError` says so (nothing is sent). Needs `fleet` (or `SCRAPEJOB_FLEET_URL`).
	 * @default the job's newest unfinished fleet run, else a new one
	 */
	readonly fleetRun?: string;
	/**
	 * Called as each target finishes (and once more when a crawl completes, its `total` then equal to
	 * `done`: the pages it knew of but had no record to fetch, such as a redirect's landing, drop out). A throw from it does not stop the run (its fetches are paid for):
	 * it is not called again, and `runJobFile` throws that error once the run has ended, its records and
	 * summary.json written.
	 */
	readonly onProgress?: (snapshot: ProgressSnapshot) => void;
	/**
	 * Where the run's warnings go (a pino logger), the job file's too (duplicate targets, skipped source
	 * rows: what `scrapejob run` prints as `file:line:col warning: …`). @default nowhere (run.log in the
	 * run folder has the run's)
	 */
	readonly logger?: Logger;
	/**
	 * Where keys, addresses and the run's settings come from (`SCRAPEJOB_ACCOUNT_KEY`,
	 * `SCRAPEJOB_FLEET_URL`, `SCRAPEJOB_LOCK_LEASE_MS`, `OTEL_EXPORTER_OTLP_ENDPOINT`, …), and `${VAR}` in
	 * the job file. @default process.env
	 */
	readonly env?: NodeJS.ProcessEnv;
	/** A `KEY=VALUE` file of those variables, as `--config`. */
	readonly config?: string;
	/** Base of relative paths (the job file, `out`, `config`). @default process.cwd() */
	readonly cwd?: string;
}

/** Each option of `runJobFile` and the kind of value it takes: the names a call may use, from its interface. */
const RUN_JOB_FILE_OPTIONS = {
	sandbox: "boolean",
	out: "string",
	resume: "boolean|string",
	continue: "boolean",
	force: "boolean",
	repair: "boolean",
	maxCredits: "number",
	concurrency: "number",
	freshness: "string",
	outageTimeout: "string",
	retryFailed: "boolean|string",
	shard: "string",
	accept: "string",
	notify: "string",
	metrics: "string",
	healthcheck: "string",
	taskPollMs: "number",
	gracePeriodMs: "number",
	signal: "signal",
	fleet: "string",
	fleetRun: "string",
	onProgress: "function",
	logger: "logger",
	env: "object",
	config: "string",
	cwd: "string",
} as const satisfies OptionKinds<RunJobFileOptions>;

/** The run's `summary.json`, with where its files are (as `run --json` prints it). */
export interface RunJobFileResult extends RunSummary {
	/** The run folder. */
	readonly run_dir: string;
	/** `report.html`, or null when it could not be written. */
	readonly report: string | null;
}

export { NoScraperAccessError };

/** What `--retry-failed` says when no target's latest record failed. */
export function nothingToRetry(jobName: string): string {
	return `${jobName}: no target's latest record failed: nothing to retry (no run folder was made)`;
}

/** What a fleet worker says when the fleet run it names (`--fleet-run`) is complete already. */
export function fleetRunComplete(jobName: string, fleetRun: string): string {
	return `${jobName}: fleet run ${fleetRun} is complete, nothing to do`;
}

/**
 * Run one job file to the end (or until `signal` aborts) and return its summary: `scrapejob run FILE`
 * with the same options, through the same code (`runPlannedJob`): validate, take the job's lock,
 * connect, select (freshness, retry-failed, shard), fetch, write the run folder and the history,
 * notify. Every throw below comes before anything is paid for, except a throw of `onProgress`'s own.
 * A `resume` whose run is already complete throws `ResumeError` saying so (the CLI prints it and exits
 * 0). `runExitCode(summary)` is the exit code `scrapejob run` ends with for the summary returned.
 *
 * @throws
 * - {@link JobValidationError} the job file is invalid (every problem, with its line and column).
 * - {@link UsageError} an option `runJobFile` does not have (a misspelt name) or of the wrong kind (`sandbox:
 *   "yes"`, an `onProgress` that is not a function), an option the CLI's parser refuses, no key ({@link MissingKeyError}), a saved id the
 *   account lacks ({@link UnknownSavedIdError}), an `accept` of a run that is not held back.
 * - {@link ResumeError} nothing to resume, a `maxCredits` at or below what the run spent; with `nothingToDo`
 *   set when there is nothing left to do (the CLI's exit 0).
 * - {@link CorruptResultsError} a `resume` whose results.jsonl holds lines that are not records
 *   (`repair: true` moves them aside).
 * - {@link LockHeldError} / {@link LayoutConflictError} another run of the job holds its lock; {@link
 *   LockPathError} the lock path is not a file.
 * - {@link OutputError} the run folder or the job's store cannot be written ({@link NativeModuleError} when
 *   the store's driver does not load).
 * - {@link ServiceError} the service refused the key; {@link NetworkError} it cannot be reached; {@link
 *   ScraperNotFoundError} / {@link AccountApiNotFoundError} an address answers but not as the service;
 *   {@link NoScraperAccessError} the account has no scraper access.
 * - {@link FleetDatabaseError} / {@link FleetSchemaTooNewError} with `fleet`: the database fails, or its
 *   tables are newer than this scrapejob.
 * - {@link SourceScanStoppedError} `signal` aborted before the first fetch (nothing was sent).
 */
export async function runJobFile(path: string, options: RunJobFileOptions = {}): Promise<RunJobFileResult> {
	checkPathArgument("runJobFile", path);
	checkOptions("runJobFile", options, RUN_JOB_FILE_OPTIONS);
	if (options.continue && (options.resume !== undefined || options.retryFailed !== undefined))
		throw new UsageError("continue chooses between resuming and a new run itself: not with resume or retryFailed");
	checkResumeOnlyOptions(options, LIBRARY_WORDS);
	checkRunOptions(options);
	const freshnessMs = durationOption("freshness", options.freshness);
	const outageTimeoutMs = durationOption("outageTimeout", options.outageTimeout);
	const cwd = options.cwd ?? process.cwd();
	const signal = options.signal ?? new AbortController().signal;
	if (signal.aborted) throw new SourceScanStoppedError(0, "before it started");
	const notes: string[] = [];
	const context: PrepareContext = {
		env: options.env ?? process.env,
		cwd,
		signal,
		words: LIBRARY_WORDS,
		onNote: (note) => notes.push(note),
	};
	// The sandbox starts first so that jobs can name its demo site; it costs nothing.
	const connection = await connectService(context, {
		sandbox: options.sandbox,
		out: options.out,
		config: options.config,
		fleet: options.fleet,
	});
	try {
		const env = connection.demoSiteUrl ? { ...context.env, SCRAPEJOB_DEMO_SITE: connection.demoSiteUrl } : context.env;
		const loaded = await loadJob(resolve(cwd, path), { env, cwd, signal });
		for (const warning of loaded.warnings) options.logger?.warn({ job: loaded.job.name }, formatProblem(warning));
		// The set-up `scrapejob run` makes, the same: plan, lock, keys, services, secrets.
		const prepared = await prepareRuns(
			[loaded],
			{ ...options, freshnessMs, outageTimeoutMs },
			connection,
			context,
		).catch((error: unknown) => {
			throw stoppedBeforeFirstFetch(error, signal);
		});
		if (!prepared) throw new ResumeError(notes.join(" "), { nothingToDo: true });
		const { planned, services, choices } = prepared;
		const progress = guardedProgress(options.onProgress, options.logger);
		try {
			const outcome = await runPlannedJob(planned[0]!, services, {
				...choices,
				logger: options.logger,
				onStart: () => progress.callback,
			});
			progress.rethrow();
			if (!outcome) throw new SourceScanStoppedError(0);
			if (outcome.skipped === "fleet_complete")
				throw new ResumeError(fleetRunComplete(outcome.job.name, outcome.fleetRun), { nothingToDo: true });
			if (outcome.skipped) throw new ResumeError(nothingToRetry(outcome.job.name), { nothingToDo: true });
			return {
				...outcome.summary,
				run_dir: outcome.runDir,
				report: outcome.reportPath,
			};
		} finally {
			releasePlannedRuns(planned);
		}
	} catch (error) {
		throw withLibraryRepair(error);
	} finally {
		await connection.close();
	}
}

/**
 * A run folder to repair, said as the call that repairs it: the error's own words name the CLI's flag,
 * which a library caller has no use for.
 */
export function withLibraryRepair(error: unknown): unknown {
	if (!(error instanceof CorruptResultsError)) return error;
	const runId = basename(dirname(error.path));
	return error.withHint(`call runJobFile with \`resume: ${JSON.stringify(runId)}, repair: true\``);
}

/**
 * An abort while the account is looked up fails that request; the caller aborted, so it hears what it
 * would hear while the sources were read: a stop before the first fetch (`SourceScanStoppedError`).
 */
function stoppedBeforeFirstFetch(error: unknown, signal: AbortSignal): unknown {
	if (!signal.aborted || !(error instanceof ScrapejobError) || error.code !== "SCRAPEJOB_ABORTED") return error;
	if (error instanceof SourceScanStoppedError) return error;
	return new SourceScanStoppedError(0, "while connecting to the service", { cause: error });
}

/**
 * The caller's progress callback, kept from the run: a throw from it would end the run as an internal
 * error (`complete: false` with every target done). It is called no more after its first throw, which
 * `rethrow` throws once the run has ended.
 */
function guardedProgress(onProgress: RunJobFileOptions["onProgress"], logger: Logger | undefined) {
	let thrown: { error: unknown } | undefined;
	const callback =
		onProgress &&
		((snapshot: ProgressSnapshot) => {
			if (thrown) return;
			try {
				onProgress(snapshot);
			} catch (error) {
				thrown = { error };
				logger?.error({ err: error }, "onProgress threw: it is called no more; the run goes on");
			}
		});
	return {
		callback,
		rethrow() {
			if (thrown) throw thrown.error;
		},
	};
}
