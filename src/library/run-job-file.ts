import { resolve } from "node:path";
import type { Logger } from "pino";
import { parseDuration, UsageError } from "../common/index.js";
import { jobUsesBrowser, loadJob, parseShard, SourceScanStoppedError } from "../job/index.js";
import type { RunSummary } from "../output/index.js";
import { type ProgressSnapshot, ResumeError } from "../run/index.js";
import { connectBrowser } from "./browser-access.js";
import { checkAccept, lockPlannedRuns, planRuns, releasePlannedRuns } from "./run-plan.js";
import { type RunChoices, runPlannedJob } from "./run-planned.js";
import { connectScraper, NoScraperAccessError, savedItemsFor } from "./scraper-access.js";
import { connectService, noKeyError } from "./service-connection.js";

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
	/** With `resume`: accept a job whose targets changed (changed targets run as new), as `--force`. */
	readonly force?: boolean;
	/** With `resume`: move lines of results.jsonl that are not records aside, as `--repair`. */
	readonly repair?: boolean;
	/** As `--max-credits`: a new run's budget, or a resumed run's new one (above what it spent). @default the job's `max_credits`; on a resume, the run's own */
	readonly maxCredits?: number;
	/** As `--concurrency`: in-flight fetches (never above the account's limit). */
	readonly concurrency?: number;
	/** As `--freshness`: a duration (`24h`; `0` fetches all). @default the job's `freshness` */
	readonly freshness?: string;
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
	 * while the sources are still being read (before the first fetch), it throws `SourceScanStoppedError`.
	 */
	readonly signal?: AbortSignal;
	/** Called as each target finishes. */
	readonly onProgress?: (snapshot: ProgressSnapshot) => void;
	/** Where the run's warnings go (a pino logger). @default nowhere (run.log in the run folder has them all) */
	readonly logger?: Logger;
	/** Where keys and addresses come from (`SCRAPEJOB_ACCOUNT_KEY`, …). @default process.env */
	readonly env?: NodeJS.ProcessEnv;
	/** A `KEY=VALUE` file of those variables, as `--config`. */
	readonly config?: string;
	/** Base of relative paths (the job file, `out`, `config`). @default process.cwd() */
	readonly cwd?: string;
}

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

/**
 * Run one job file to the end (or until `signal` aborts) and return its summary: `scrapejob run FILE`
 * with the same options, through the same code (`runPlannedJob`): validate, take the job's lock,
 * connect, select (freshness, retry-failed, shard), fetch, write the run folder and the history,
 * notify. Throws `JobValidationError` (bad job), `LockHeldError` (another run holds the lock),
 * `ResumeError`/`UsageError` (nothing to resume, a budget below what was spent) or a service error
 * (refused key) before anything is paid for. A `resume` whose run is already complete throws
 * `ResumeError` saying so (the CLI prints it and exits 0).
 */
export async function runJobFile(path: string, options: RunJobFileOptions = {}): Promise<RunJobFileResult> {
	if (options.continue && (options.resume !== undefined || options.retryFailed !== undefined))
		throw new UsageError("continue chooses between resuming and a new run itself: not with resume or retryFailed");
	const cwd = options.cwd ?? process.cwd();
	const signal = options.signal ?? new AbortController().signal;
	const freshnessMs = options.freshness === undefined ? undefined : parseDuration(options.freshness);
	if (freshnessMs === null) throw new UsageError(`freshness: ${JSON.stringify(options.freshness)} is not a duration`);
	const context = { env: options.env ?? process.env, cwd, signal };
	// The sandbox starts first so that jobs can name its demo site; it costs nothing.
	const connection = await connectService(context, {
		...(options.sandbox ? { sandbox: true } : {}),
		...(options.config !== undefined ? { config: options.config } : {}),
	});
	try {
		const env = connection.demoSiteUrl ? { ...context.env, SCRAPEJOB_DEMO_SITE: connection.demoSiteUrl } : context.env;
		const loaded = await loadJob(resolve(cwd, path), { env, cwd, signal });
		let job = loaded.job;
		if (options.shard !== undefined) {
			const shard = parseShard(options.shard, context.env);
			if (typeof shard === "string") throw new UsageError(shard);
			job = { ...job, shard };
		}
		const outRoot = resolve(cwd, options.out ?? "output");
		const { planned, notes } = planRuns(
			[{ job, counts: options.shard === undefined ? loaded.counts : null }],
			outRoot,
			options.resume,
			options.repair === true,
			options.continue === true,
		);
		const plan = planned[0];
		if (!plan) throw new ResumeError(notes.join(" "));
		checkAccept(planned, outRoot, options.accept);
		// The lock before the first request: a run that loses it has sent nothing.
		lockPlannedRuns(planned, outRoot);
		try {
			if (!connection.config.accountKey && !connection.config.scraperKey) throw noKeyError();
			const scraper = await connectScraper(context, connection);
			if (scraper.access && scraper.access.concurrency < 1) {
				throw new NoScraperAccessError("the account's scraper concurrency is 0; nothing was sent");
			}
			const browser = jobUsesBrowser(job) ? await connectBrowser(context, connection) : undefined;
			const secrets = [
				connection.config.accountKey,
				connection.config.scraperKey,
				scraper.secret,
				browser?.key,
				options.healthcheck ?? job.healthcheck,
			].filter((key): key is string => Boolean(key));
			const choices: RunChoices = {
				outRoot,
				signal,
				...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
				...(options.maxCredits !== undefined ? { maxCredits: options.maxCredits } : {}),
				...(freshnessMs !== undefined ? { freshnessMs } : {}),
				...(options.retryFailed !== undefined ? { retryFailed: options.retryFailed } : {}),
				...(options.force ? { force: true } : {}),
				...(options.repair ? { repair: true } : {}),
				...(options.notify !== undefined ? { notifyUrl: options.notify } : {}),
				...(options.accept !== undefined ? { accept: options.accept } : {}),
				...(options.metrics !== undefined ? { metricsFile: resolve(cwd, options.metrics) } : {}),
				...(options.healthcheck !== undefined ? { healthcheck: options.healthcheck } : {}),
				env: context.env,
				...(options.gracePeriodMs !== undefined ? { gracePeriodMs: options.gracePeriodMs } : {}),
				...(options.taskPollMs !== undefined ? { taskPollMs: options.taskPollMs } : {}),
				...(options.logger ? { logger: options.logger } : {}),
				...(options.onProgress ? { onStart: () => options.onProgress } : {}),
			};
			const outcome = await runPlannedJob(
				plan,
				{
					clientFor: scraper.clientFor,
					accountConcurrency: scraper.access?.concurrency ?? null,
					access: scraper.access,
					secrets,
					browser,
					savedItems: savedItemsFor(scraper),
				},
				choices,
			);
			if (!outcome) throw new SourceScanStoppedError(0);
			if (outcome.skipped) throw new ResumeError(nothingToRetry(job.name));
			return {
				...outcome.summary,
				run_dir: outcome.runDir,
				report: outcome.reportPath,
			};
		} finally {
			releasePlannedRuns(planned);
		}
	} finally {
		await connection.close();
	}
}
