import { setMaxListeners } from "node:events";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import PQueue from "p-queue";
import type { Logger } from "pino";
import type { ScraperClient, ScraperHeaders } from "../api/index.js";
import { type Job, streamTargets, type Target } from "../job/index.js";
import {
	createCsvSink,
	createJsonlSink,
	createPageStore,
	createRunDir,
	createRunLog,
	extensionFor,
	jobOutputDir,
	newRunId,
	openAppendFile,
	type RecordSink,
	type ResultRecord,
	RUN_FILES,
	type RunSummary,
	writeSummary,
} from "../output/index.js";
import {
	type Clock,
	creditCostRange,
	errorMessage,
	sleep as realSleep,
	ScrapejobError,
	type Sleep,
	systemClock,
} from "../shared/index.js";
import { createCreditBudget } from "./credit-budget.js";
import { type FetchResult, type FetchTargetDeps, fetchTarget } from "./fetch-target.js";
import { openJournal, readJournalTasks } from "./journal.js";
import { csvCatchUp, type PriorProgress, readPriorProgress } from "./resume-state.js";
import { acquireRunLock } from "./run-lock.js";
import { createRunStatistics } from "./run-statistics.js";
import { createSendGate } from "./send-gate.js";
import type { TargetSurvey } from "./survey-targets.js";
import { DEFAULT_TASK_POLL, type TaskPollOptions } from "./task-poller.js";

/** Why a run stopped before every target had a record. */
export type StopReason = "interrupted" | "unauthorized" | "insufficient_credits" | "forbidden";

export class ResumeError extends ScrapejobError {
	constructor(message: string) {
		super("SCRAPEJOB_USAGE", message);
	}
}

export interface ProgressSnapshot {
	readonly done: number;
	readonly total: number;
	readonly ok: number;
	readonly failed: number;
	readonly skipped: number;
	readonly creditsUsed: number;
	readonly retries: number;
	readonly inFlight: number;
}

export interface RunJobOptions {
	readonly job: Job;
	readonly survey: TargetSurvey;
	readonly client: ScraperClient;
	/** The account's concurrency (or the job's lower number): in-flight fetches never exceed it. */
	readonly concurrency: number;
	/** Start at 1 in flight and grow to `X-RateLimit-Limit` (when only a scraper key is known). */
	readonly adaptiveConcurrency?: boolean;
	/** Root of output folders: `<outRoot>/<job>/<run-id>/`. */
	readonly outRoot: string;
	/** Hard budget; no fetch starts whose worst-case cost would not fit. */
	readonly maxCredits: number | null;
	/** Continue this run folder instead of starting a new one. */
	readonly resumeDir?: string;
	/** With `resumeDir`: accept a job whose targets changed (changed targets run as new). */
	readonly force?: boolean;
	/** Stop request (SIGINT/SIGTERM): nothing new starts; in-flight work gets `gracePeriodMs`. */
	readonly signal: AbortSignal;
	/** How long in-flight fetches may finish after a stop, milliseconds. @default 30000 */
	readonly gracePeriodMs?: number;
	readonly taskPoll?: Partial<TaskPollOptions>;
	/** Secrets scrubbed from `run.log`. */
	readonly secrets: readonly string[];
	/** Events for the terminal (stderr); `run.log` gets its own logger. */
	readonly logger?: Logger;
	readonly onProgress?: (snapshot: ProgressSnapshot) => void;
	readonly clock?: Clock;
	readonly sleep?: Sleep;
	readonly random?: () => number;
	/** fdatasync interval for results and journal, milliseconds. @default 1000 */
	readonly syncIntervalMs?: number;
	readonly method?: "GET" | "POST";
}

export interface RunJobResult {
	readonly summary: RunSummary;
	readonly runDir: string;
	readonly stopReason: StopReason | null;
}

interface RunMeta {
	run_id: string;
	job_name: string;
	job_file: string;
	job_fingerprint: string;
	targets_digest: string;
	total: number;
	created_at: string;
}

function budgetSkippedRecord(target: Target, at: string, remaining: number | null): ResultRecord {
	return {
		id: target.id,
		url: target.url,
		status: "skipped",
		http_status: null,
		error: "budget_exhausted",
		message: "not fetched: its worst-case cost would exceed max_credits",
		mode_requested: target.params.mode ?? "auto",
		mode_used: null,
		credits_used: 0,
		credits_remaining: remaining,
		attempts: 0,
		task_id: null,
		started_at: at,
		finished_at: at,
		duration_ms: 0,
		bytes: 0,
		content_path: null,
	};
}

const BINARY_TYPES = /png|jpe?g|pdf|octet-stream|image\//i;

function oneLine(text: string): string {
	return text.replace(/[\r\n]+/g, " ").slice(0, 2000);
}

/**
 * Run one job to the end, or until stopped. Records are written as targets finish, each exactly once;
 * the journal makes the run resumable at any byte. Throws only for set-up problems (lock, resume).
 */
export async function runJob(options: RunJobOptions): Promise<RunJobResult> {
	const { job, survey } = options;
	const clock = options.clock ?? systemClock;
	const sleep = options.sleep ?? realSleep;
	const random = options.random ?? Math.random;
	const startedAt = clock();
	const jobDir = jobOutputDir(options.outRoot, job.name);

	// --- run folder, lock, and what earlier sessions did -------------------------------------------
	let runId: string;
	let runDir: string;
	let prior: PriorProgress | null = null;
	const resumeTasks = new Map<string, string>();
	if (options.resumeDir) {
		runDir = options.resumeDir;
		const meta = JSON.parse(readFileSync(join(runDir, RUN_FILES.meta), "utf8")) as RunMeta;
		runId = meta.run_id;
		if (meta.targets_digest !== survey.digest && !options.force) {
			throw new ResumeError(
				`the job's targets changed since run ${runId} started (${meta.total} then, ${survey.total} now); resume with --force to run changed targets as new, or start a new run without --resume`,
			);
		}
	} else {
		runId = newRunId(new Date(startedAt));
		runDir = "";
	}
	const lock = acquireRunLock(ensureDir(jobDir), runId);
	if (lock.tookOver) {
		options.logger?.warn(
			{ lock: lock.path, previous: lock.tookOver },
			`took over the lock of a run that is no longer running (pid ${lock.tookOver.pid}, run ${lock.tookOver.run_id})`,
		);
	}
	try {
		if (options.resumeDir) {
			prior = await readPriorProgress(join(runDir, RUN_FILES.jsonl));
			const journalled = await readJournalTasks(join(runDir, RUN_FILES.journal));
			for (const [id, taskId] of journalled.tasks) if (!prior.done.has(id)) resumeTasks.set(id, taskId);
			if (job.output.formats.includes("csv")) {
				const missing = csvCatchUp(join(runDir, RUN_FILES.csv), prior.lastRecord);
				if (missing) {
					const csv = openAppendFile(join(runDir, RUN_FILES.csv));
					csv.append(missing);
					csv.close();
				}
			}
		} else {
			runDir = createRunDir(options.outRoot, job.name, runId);
			const meta: RunMeta = {
				run_id: runId,
				job_name: job.name,
				job_file: job.file,
				job_fingerprint: job.fingerprint,
				targets_digest: survey.digest,
				total: survey.total,
				created_at: new Date(startedAt).toISOString(),
			};
			writeFileSync(join(runDir, RUN_FILES.meta), `${JSON.stringify(meta, null, 2)}\n`);
		}
		return await execute(runId, runDir, prior, resumeTasks);
	} finally {
		lock.release();
	}

	async function execute(
		runId: string,
		runDir: string,
		prior: PriorProgress | null,
		resumeTasks: Map<string, string>,
	): Promise<RunJobResult> {
		const runLog = createRunLog(join(runDir, RUN_FILES.log), options.secrets);
		const log = runLog.log;
		const journal = openJournal(join(runDir, RUN_FILES.journal));
		journal.session(runId, prior !== null);
		// results.jsonl is always written: it is the record of truth `--resume` reads.
		const sinks: RecordSink[] = [createJsonlSink(join(runDir, RUN_FILES.jsonl))];
		if (job.output.formats.includes("csv")) sinks.push(createCsvSink(join(runDir, RUN_FILES.csv)));
		const pages = job.output.content === "files" ? createPageStore(runDir) : null;
		const stats = createRunStatistics(prior);
		const budget = createCreditBudget(options.maxCredits, prior?.creditsUsed ?? 0);
		const gate = createSendGate(clock, sleep);
		const queue = new PQueue({ concurrency: options.adaptiveConcurrency ? 1 : options.concurrency });
		const inflight = new AbortController();
		// Every in-flight request listens on this one signal; that is by design, not a leak.
		setMaxListeners(0, inflight.signal);
		const taskPoll: TaskPollOptions = { ...DEFAULT_TASK_POLL, deadlineMs: job.taskTimeoutMs, ...options.taskPoll };
		let stopReason: StopReason | null = null;
		let inFlight = 0;
		let graceTimer: NodeJS.Timeout | undefined;
		let budgetWaiters: Array<() => void> = [];

		log.info(
			{
				event: "run_start",
				run_id: runId,
				job: job.name,
				targets: survey.total,
				concurrency: options.concurrency,
				resumed: prior !== null,
				done_before: prior?.done.size ?? 0,
				pending_tasks: resumeTasks.size,
			},
			"run started",
		);

		const stop = (reason: StopReason, message: string) => {
			if (stopReason) return;
			stopReason = reason;
			queue.clear();
			log.warn({ event: "run_stopping", reason }, message);
			options.logger?.warn({ reason }, message);
			const grace = options.gracePeriodMs ?? 30_000;
			graceTimer = setTimeout(() => inflight.abort(new Error("grace period over")), grace);
			graceTimer.unref();
		};
		const onSignal = () => stop("interrupted", "stop requested: no new fetches; in-flight ones may finish");
		if (options.signal.aborted) onSignal();
		else options.signal.addEventListener("abort", onSignal, { once: true });

		const syncTimer = setInterval(() => {
			for (const sink of sinks) sink.sync();
			journal.sync();
		}, options.syncIntervalMs ?? 1000);
		syncTimer.unref();

		const progress = () => {
			options.onProgress?.({
				done: stats.done,
				total: survey.total,
				ok: stats.byStatus.ok,
				failed: stats.byStatus.failed,
				skipped: stats.byStatus.skipped,
				creditsUsed: stats.creditsUsed,
				retries: stats.retries,
				inFlight,
			});
		};

		const write = (record: ResultRecord) => {
			for (const sink of sinks) sink.write(record);
			stats.recordFinished(record);
			progress();
		};

		const onHeaders = (headers: ScraperHeaders) => {
			stats.creditsSeen(headers.creditsRemaining);
			// Learned concurrency (scraper key only): one more slot per answer, up to the service's limit.
			if (options.adaptiveConcurrency && headers.rateLimitLimit !== undefined) {
				const ceiling = Math.min(options.concurrency, headers.rateLimitLimit);
				if (queue.concurrency < ceiling) queue.concurrency += 1;
				else if (queue.concurrency > ceiling) queue.concurrency = Math.max(1, ceiling);
			}
		};

		const settleBudget = () => {
			const waiters = budgetWaiters;
			budgetWaiters = [];
			for (const wake of waiters) wake();
		};

		/** Book the worst case; while other fetches hold reservations, wait for them to settle and retry. */
		const reserve = async (worstCase: number): Promise<boolean> => {
			for (;;) {
				if (budget.tryReserve(worstCase)) return true;
				if (budget.reserved === 0 || stopReason) return false;
				await new Promise<void>((resolve) => budgetWaiters.push(resolve));
			}
		};

		const toRecord = (
			target: Target,
			result: Extract<FetchResult, { kind: "ok" | "failed" }>,
			started: number,
		): ResultRecord => {
			const finished = clock();
			const record: ResultRecord = {
				id: target.id,
				url: target.url,
				status: result.kind,
				http_status: result.httpStatus,
				error: result.kind === "failed" ? result.error : null,
				message: result.kind === "failed" ? oneLine(result.message) : null,
				mode_requested: target.params.mode ?? "auto",
				mode_used: result.modeUsed,
				credits_used: result.creditsUsed,
				credits_remaining: result.creditsRemaining,
				attempts: result.attempts,
				task_id: result.taskId,
				started_at: new Date(started).toISOString(),
				finished_at: new Date(finished).toISOString(),
				duration_ms: finished - started,
				bytes: result.kind === "ok" ? result.body.length : 0,
				content_path: null,
			};
			if (result.kind === "ok" && job.output.content !== "none") {
				if (pages) {
					record.content_path = pages.save(
						target.id,
						result.body,
						extensionFor(result.contentType, target.params.content),
					);
				} else {
					const binary =
						BINARY_TYPES.test(result.contentType ?? "") ||
						target.params.content === "screenshot" ||
						target.params.content === "pdf";
					record.content = binary ? result.body.toString("base64") : result.body.toString("utf8");
				}
			}
			return record;
		};

		// One set of dependencies for every fetch: nothing per target but the target itself.
		const fetchDeps: FetchTargetDeps = {
			client: options.client,
			gate,
			clock,
			sleep,
			random,
			retry: job.retry,
			taskPoll,
			signal: inflight.signal,
			method: options.method ?? "POST",
			isStopping: () => stopReason !== null,
			onHeaders,
			onTaskId: (targetId, taskId) => {
				journal.task(targetId, taskId);
				stats.taskCreated();
				log.info({ event: "task", id: targetId, task_id: taskId }, "fetch continues as a task");
			},
			onRetry: (targetId, kind) => {
				stats.retried();
				log.info({ event: "retry", id: targetId, kind }, "retrying");
			},
		};

		const runTarget = async (target: Target) => {
			if (stopReason) return;
			const worstCase = creditCostRange(target.params).max;
			if (!(await reserve(worstCase))) {
				if (stopReason) return;
				write(budgetSkippedRecord(target, new Date(clock()).toISOString(), stats.creditsRemaining));
				return;
			}
			const started = clock();
			inFlight += 1;
			journal.started(target.id);
			let result: FetchResult;
			try {
				result = await fetchTarget(target.id, target.params, fetchDeps, resumeTasks.get(target.id) ?? null);
			} finally {
				inFlight -= 1;
			}
			switch (result.kind) {
				case "ok":
				case "failed": {
					budget.commit(worstCase, result.creditsUsed);
					settleBudget();
					const record = toRecord(target, result, started);
					write(record);
					if (record.status === "failed") {
						log.info(
							{
								event: "target_failed",
								id: target.id,
								error: record.error,
								http_status: record.http_status,
								attempts: record.attempts,
							},
							record.message ?? "failed",
						);
					}
					return;
				}
				case "aborted":
					budget.release(worstCase);
					settleBudget();
					stop(result.reason, `stopping: ${result.message}`);
					return;
				case "abandoned":
					budget.release(worstCase);
					settleBudget();
					return;
				default: {
					const unreachable: never = result;
					throw new Error(`unhandled result ${JSON.stringify(unreachable)}`);
				}
			}
		};

		// --- feed the queue with back-pressure: never more than a few targets per slot waiting -------------
		const failures: unknown[] = [];
		for await (const target of streamTargets(job)) {
			if (stopReason) break;
			if (prior?.done.has(target.id)) continue;
			if (queue.size >= options.concurrency * 2) await queue.onSizeLessThan(options.concurrency * 2);
			if (stopReason) break;
			queue.add(() => runTarget(target)).catch((error: unknown) => failures.push(error));
		}
		await queue.onIdle();
		clearTimeout(graceTimer);
		clearInterval(syncTimer);
		options.signal.removeEventListener("abort", onSignal);
		if (failures.length > 0) {
			log.error({ event: "internal_error", error: errorMessage(failures[0]) }, "internal error while running targets");
		}

		for (const sink of sinks) await sink.close();
		journal.close();
		const finishedAt = clock();
		const done = stats.done;
		const complete = stopReason === null && done >= survey.total && failures.length === 0;
		const wallMs = finishedAt - startedAt;
		const summary: RunSummary = {
			job: job.name,
			run_id: runId,
			complete,
			stopped_reason: stopReason ?? (failures.length ? `internal error: ${errorMessage(failures[0])}` : null),
			targets: {
				total: survey.total,
				done,
				remaining: Math.max(0, survey.total - done),
				by_status: { ...stats.byStatus },
				duplicates: survey.duplicates,
				skipped_rows: survey.skippedRows,
			},
			credits: {
				used: stats.creditsUsed,
				by_mode: { ...stats.creditsByMode },
				remaining: stats.creditsRemaining,
				max_credits: options.maxCredits,
			},
			retries: stats.retries,
			rate_limit_pauses: gate.pauses,
			tasks: {
				created: stats.tasks.created,
				completed: stats.tasks.completed,
				failed: stats.tasks.failed,
				left_pending: Math.max(
					0,
					stats.tasks.created - stats.tasks.completed - stats.tasks.failed - (prior?.tasks ?? 0),
				),
			},
			errors_by_kind: { ...stats.errorsByKind },
			started_at: new Date(startedAt).toISOString(),
			finished_at: new Date(finishedAt).toISOString(),
			wall_ms: wallMs,
			throughput_per_s: wallMs > 0 ? (stats.sessionDone * 1000) / wallMs : 0,
			latency_ms: { p50: stats.latency.quantile(0.5), p95: stats.latency.quantile(0.95) },
			concurrency: options.concurrency,
			resumed_from: prior ? runId : null,
		};
		writeSummary(join(runDir, RUN_FILES.summary), summary);
		log.info(
			{ event: "run_end", complete, stopped_reason: summary.stopped_reason, done, credits_used: summary.credits.used },
			"run ended",
		);
		runLog.close();
		return { summary, runDir, stopReason };
	}
}

function ensureDir(dir: string): string {
	mkdirSync(dir, { recursive: true });
	return dir;
}
