import { setMaxListeners } from "node:events";
import { basename, dirname, join } from "node:path";
import type { Logger } from "pino";
import { type BodySpill, MAX_RESET_SECONDS, type ScraperClient, type ScraperHeaders } from "../api/index.js";
import type { BrowserServiceAccess } from "../browser/index.js";
import { createUrlKeys } from "../crawl/index.js";
import { createPagePool, type PageTaskResult, PageTooComplexError } from "../extract/index.js";
import {
	createChangeTracker,
	type JobHistory,
	promotedSummaries,
	readContractState,
	writeContractState,
} from "../history/index.js";
import { type Job, streamTargetBatches, type Target } from "../job/index.js";
import {
	createCsvSink,
	createJsonlSink,
	createPageStore,
	createRecordScrubber,
	createRunLog,
	csvColumnsFor,
	newRunId,
	OutputError,
	type RecordSink,
	type ResultRecord,
	RUN_FILES,
	type RunSummary,
	writeSummary,
} from "../output/index.js";
import { createReportCollector, rebuildReport } from "../report/index.js";
import {
	type Clock,
	createTaskQueue,
	creditCostRange,
	errorMessage,
	formatDuration,
	type LastWords,
	sleep as realSleep,
	redactSecrets,
	type Sleep,
	systemClock,
} from "../shared/index.js";
import { createSessionLimiter, fetchBrowserTarget } from "./browser-target.js";
import { BASELINE_RUNS, createContractCheck } from "./contract-check.js";
import { addCrawlSummary, crawlerFor, serviceSitemapFetch, storedPageHtml, unshardedJob } from "./crawl-hook.js";
import { createCreditBudget } from "./credit-budget.js";
import { addDiscoverySummary, type DiscoveredTargets, discoverTargets, withDiscovered } from "./discovery-sources.js";
import { addExtraction, createRunFillStats, isHtmlResult, pageWorkOf } from "./extract-record.js";
import { type FetchResult, type FetchTargetDeps, fetchTarget } from "./fetch-target.js";
import { createHostGate, type HostGate } from "./host-gate.js";
import { lockJobOutput, warnIfTookOver } from "./job-lock.js";
import { openJournal } from "./journal.js";
import { openRun, type RunSelection } from "./open-run.js";
import { createOutageMonitor } from "./outage-monitor.js";
import { createRecordWriter } from "./record-writer.js";
import { fetchedRecord } from "./result-record.js";
import type { PriorProgress } from "./resume-state.js";
import type { RunLock } from "./run-lock.js";
import { buildSummary, type CarriedFigures, createRunStatistics } from "./run-statistics.js";
import { checkScraperHealth, type HealthReading } from "./scraper-health.js";
import { createSendGate } from "./send-gate.js";
import { watchShardPeers } from "./shard-peers.js";
import { createSharedKeyConcurrency } from "./shared-key-concurrency.js";
import type { TargetSurvey } from "./survey-targets.js";
import { DEFAULT_TASK_POLL, type TaskPollOptions } from "./task-poller.js";

/**
 * Page bodies past this size leave memory on their way in when nothing reads them (see `bodySpill`):
 * a fetch then holds at most about this much, whatever `max_body_mb` allows.
 */
const SPILL_AFTER_BYTES = 1024 * 1024;
/** The run folder's directory of spilled row keys (removed when the feed ends; stale ones at the next start). */
const FEED_KEYS_DIR = "target-keys";
/** Row keys the duplicate check holds in memory: ~4 MB; a million rows spill three times. */
const FEED_KEYS_IN_MEMORY = 262_144;

/** Why a run stopped before every target had a record. */
export type StopReason =
	| "interrupted"
	| "unauthorized"
	| "insufficient_credits"
	| "forbidden"
	| "invalid_source"
	/** The service stayed unreachable (or 5xx to everything) longer than `outage_timeout`. */
	| "service_unavailable"
	/** `max_credits` reached: the next target's worst case no longer fits. */
	| "budget_exhausted"
	/** The output could not be written (disk full, read-only): nothing more is sent. */
	| "output_failed"
	/** Another process took the job's lock over (this one's lease ran out): nothing more is sent or written. */
	| "lease_lost"
	/** The run completed but broke its data contract: its records are not promoted to "latest" (exit 1). */
	| "contract_failed";

export interface ProgressSnapshot {
	readonly done: number;
	readonly total: number;
	readonly ok: number;
	readonly failed: number;
	readonly skipped: number;
	readonly creditsUsed: number;
	readonly retries: number;
	readonly inFlight: number;
	/** Records written in this session (a resumed run's `done` includes the earlier sessions'): for rates. */
	readonly sessionDone: number;
	/** While the service holds every send: why, and for how long still (null: until probes get an answer). */
	readonly paused: { readonly reason: "rate_limited" | "service_unavailable"; readonly leftMs: number | null } | null;
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
	/**
	 * `--max-credits`: the credit budget of a new run, or the replacement budget of a resumed one (above
	 * what it spent). Without it a new run takes the job's `max_credits` and a resumed one the budget kept
	 * in its run.json. No fetch starts whose worst-case cost would not fit.
	 */
	readonly maxCredits?: number;
	/** How a new run chose its targets (freshness, `--retry-failed`): kept in run.json for its resumes. */
	readonly selection?: RunSelection;
	/** Continue this run folder instead of starting a new one. */
	readonly resumeDir?: string;
	/** With `resumeDir`: accept a job whose targets changed (changed targets run as new). */
	readonly force?: boolean;
	/** With `resumeDir`: move lines of results.jsonl that are not records aside (their targets run again). */
	readonly repair?: boolean;
	/** A crawl's URL keys held in memory before older ones spill to disk. @default 1,000,000 */
	readonly crawlKeysInMemory?: number;
	/** Keys of the source rows read (the duplicate check) held in memory before older ones spill. @default 262,144 */
	readonly feedKeysInMemory?: number;
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
	/** The job's history (incremental runs): records are stamped with `content_hash` and `change` against it. */
	readonly history?: JobHistory;
	/** How long an outage may last before the run stops (`service_unavailable`), ms. @default 600000 */
	readonly outageTimeoutMs?: number;
	readonly clock?: Clock;
	readonly sleep?: Sleep;
	readonly random?: () => number;
	/** fdatasync interval for results and journal, milliseconds. @default 1000 */
	readonly syncIntervalMs?: number;
	readonly method?: "GET" | "POST";
	/**
	 * The remote browser service, for `browser_session:` targets (GET /public/browser, read by the caller).
	 * `readCredits` reads the browser credits again at the end: the summary reports what the run used.
	 */
	readonly browser?: BrowserServiceAccess & {
		readonly creditsBefore: number | null;
		readCredits(): Promise<number | null>;
	};
	/** The job's lock, taken by the caller before any request (the CLI does); else runJob takes it first. */
	readonly lock?: RunLock;
	/** Id of a new run (the one named in `lock`); default: from the start time. */
	readonly runId?: string;
	/** A second signal ends the process at once: the runner's last word writes summary.json as it stands. */
	readonly lastWords?: LastWords;
}

export interface RunJobResult {
	readonly summary: RunSummary;
	readonly runDir: string;
	readonly stopReason: StopReason | null;
	/** Why it stopped, in words (for the terminal even with --quiet when the output failed). */
	readonly stopMessage: string | null;
	/** `report.html` in the run folder; null when it could not be written (the run's outcome stands). */
	readonly reportPath: string | null;
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
	// Lock, then the free health check, then the run folder: a run that loses the lock or whose key is
	// refused has sent nothing (or only the health check) and leaves no folder behind.
	const newId = options.runId ?? newRunId(new Date(startedAt));
	const lock =
		options.lock ?? lockJobOutput(options.outRoot, job.name, options.resumeDir ? basename(options.resumeDir) : newId);
	if (!options.lock) warnIfTookOver(lock, options.logger);
	try {
		const health = await checkScraperHealth(options.client, options.signal);
		const opened = await openRun({
			job,
			survey,
			outRoot: options.outRoot,
			resumeDir: options.resumeDir,
			force: options.force === true,
			repair: options.repair === true,
			startedAt,
			logger: options.logger,
			lock,
			runId: newId,
			...(options.maxCredits !== undefined ? { maxCredits: options.maxCredits } : {}),
			...(options.selection ? { selection: options.selection } : {}),
		});
		return await execute(
			opened.runId,
			opened.runDir,
			opened.prior,
			opened.resumeTasks,
			health,
			opened.carried,
			opened.maxCredits,
		);
	} finally {
		if (!options.lock) lock.release();
	}

	async function execute(
		runId: string,
		runDir: string,
		prior: PriorProgress | null,
		resumeTasks: ReadonlyMap<string, string>,
		health: HealthReading,
		carried: CarriedFigures | null,
		maxCredits: number | null,
	): Promise<RunJobResult> {
		const runLog = createRunLog(join(runDir, RUN_FILES.log), options.secrets);
		const log = runLog.log;
		const journal = openJournal(join(runDir, RUN_FILES.journal));
		journal.session(runId, prior !== null);
		// results.jsonl is always written: it is the record of truth `--resume` reads.
		const jsonl = createJsonlSink(join(runDir, RUN_FILES.jsonl));
		const sinks: RecordSink[] = [jsonl];
		// Incremental runs: each ok record is compared with the target's previous one (history).
		const history = options.history ?? null;
		const historyRun = history ? history.runIndex(basename(runDir)) : 0;
		const changes = history ? createChangeTracker(history, runDir, Boolean(job.extraction)) : null;
		if (job.output.formats.includes("csv")) {
			const columns = csvColumnsFor({ data: job.extraction?.dataColumns, carry: job.extraction?.carry });
			sinks.push(
				createCsvSink(join(runDir, RUN_FILES.csv), {
					bom: job.output.csvBom === true,
					columns,
					maxCell: job.output.csvMaxCell,
				}),
			);
		}
		const fill = await createRunFillStats(job, prior ? join(runDir, RUN_FILES.jsonl) : null);
		// The data contract: field rules per record as written, the job's checks once the run completes.
		const contract = job.contract ? createContractCheck(job.contract) : null;
		if (contract && prior) await contract.replay(join(runDir, RUN_FILES.jsonl));
		// With a contract the run's records go into "latest" only once it has completed within it: until
		// then its folder says `pending` (contract.json), and the store's every open leaves it out.
		const heldBack =
			contract !== null && history !== null && (prior === null || readContractState(runDir)?.state === "pending");
		if (heldBack && prior === null) writeContractState(runDir, "pending");
		const pages = job.output.content === "files" ? createPageStore(runDir) : null;
		pages?.removeUnfinished();
		const stats = prior?.statistics ?? createRunStatistics();
		// A resumed run's earlier records are on disk only: its report is rebuilt from the folder instead.
		const report = prior === null ? createReportCollector(startedAt) : null;
		const budget = createCreditBudget(maxCredits, stats.creditsUsed);
		const gate = createSendGate(clock, sleep, {
			// Each 429 window in run.log, with its length: the report marks them on its timeline.
			onPause: (pauseMs) => {
				log.warn({ event: "pause", reason: "rate_limited", pause_ms: pauseMs }, "paused by the service (429)");
				if (sharedKey) queue.concurrency = sharedKey.rateLimited();
			},
		});
		// Shards sharing a key split its limit and grow into free slots (AIMD: shared-key-concurrency.ts).
		const peers = job.shard && job.shard.count > 1 ? watchShardPeers(dirname(runDir), job.shard, runId) : null;
		const sharedKey =
			job.shard && peers && !options.adaptiveConcurrency
				? createSharedKeyConcurrency({
						limit: options.concurrency,
						shard: job.shard,
						liveShards: peers.live,
						idleShards: peers.idle,
						clock,
					})
				: null;
		const failures: unknown[] = [];
		const queue = createTaskQueue({
			concurrency: options.adaptiveConcurrency ? 1 : (sharedKey?.concurrency ?? options.concurrency),
			// A task that throws is a bug: the run ends with it as an internal error.
			onError: (error) => failures.push(error),
		});
		// Targets parked for a host's politeness (host-gate.ts) wait outside the queue: idle is both empty.
		let hosts: HostGate | null = null;
		const idle = async () => {
			for (;;) {
				await queue.onIdle();
				if (hosts === null || hosts.parked === 0) return;
				await hosts.parkedBelow(hosts.parked);
			}
		};
		const crawler = crawlerFor(
			job,
			runDir,
			prior?.done ?? null,
			() => stopReason !== null,
			serviceSitemapFetch({
				fetch: (id, params, spill) => fetchTarget(id, params, fetchDeps, null, spill),
				reserve: (worstCase) => reserveOrStop(worstCase),
				budget,
				stop: (reason, message) => stop(reason, message),
			}),
			options.crawlKeysInMemory,
			peers,
		);
		// A resumed crawl's robots.txt and sitemap credits of earlier sessions are spent already.
		if (crawler) budget.commit(0, crawler.summary().sitemap_credits);
		// Pages that `extract:` or `crawl:` read are parsed in worker threads, bounded by `page_timeout`.
		const pagePool = job.extraction || crawler ? await createPagePool({ timeoutMs: job.pageTimeoutMs }) : null;
		const maxDepth = job.crawl?.maxDepth ?? 0;
		/**
		 * What the page pool reads from a fetched page (fields, links), or why it could not (past
		 * `page_timeout` or its worker's memory: `page_too_complex`). Off this thread: the run's timers,
		 * signals and other targets go on meanwhile.
		 */
		const readPage = async (
			target: Target,
			result: FetchResult,
		): Promise<{ read?: PageTaskResult; tooComplex?: string; abandoned?: true }> => {
			const wantsLinks = crawler !== null && target.crawl !== undefined && target.crawl.depth < maxDepth;
			const work = pagePool ? pageWorkOf(target, result, wantsLinks) : null;
			if (!work || !pagePool) return {};
			try {
				return { read: await pagePool.run(work, inflight.signal) };
			} catch (error) {
				if (error instanceof PageTooComplexError) return { tooComplex: error.message };
				// A stop past its grace period ends the page's worker too: the fetch is abandoned like any in flight.
				if (inflight.signal.aborted) return { abandoned: true };
				throw error;
			}
		};
		/** A fresh crawled page's links, read from its stored page in the page pool; no fetch, no record. */
		const followStoredPage = async (target: Target) => {
			const html = storedPageHtml(target, job.maxBodyBytes);
			if (html === null || !pagePool || !crawler) return;
			const wantsLinks = target.crawl !== undefined && target.crawl.depth < maxDepth;
			let links: readonly string[] | null = null;
			if (wantsLinks) {
				try {
					links =
						(await pagePool.run({ html, url: target.url, plan: null, links: true }, inflight.signal)).links ?? null;
				} catch {
					// Too complex or stopped: the page stays fresh, its links unread.
					return;
				}
			}
			guardOutput(() => crawler.pageFetched(target, links));
		};
		/** The record of a page the pool gave up on: failed, its page file kept (`content: files`). */
		const markTooComplex = (record: ResultRecord, message: string) => {
			record.status = "failed";
			record.error = "page_too_complex";
			record.message = message;
			delete record.data;
		};

		// The duplicate check of the rows read: past `feedKeysInMemory` keys, older ones go to sorted files
		// in the run folder with ~1.5 bytes a row left in memory (at a million rows: ~5 MB, not 16).
		const feedKeys = createUrlKeys({
			dir: join(runDir, FEED_KEYS_DIR),
			inMemory: options.feedKeysInMemory ?? FEED_KEYS_IN_MEMORY,
		});
		const inflight = new AbortController();
		// Every in-flight request listens on this one signal; that is by design, not a leak.
		setMaxListeners(0, inflight.signal);
		const taskPoll: TaskPollOptions = { ...DEFAULT_TASK_POLL, deadlineMs: job.taskTimeoutMs, ...options.taskPoll };
		let stopReason: StopReason | null = null;
		let stopMessage: string | null = null;
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
			stopMessage = message;
			queue.clear();
			// The crawl stops waiting for pages to settle: the ones just cleared never will.
			crawler?.wake();
			// run.log is the folder's too: a run that lost its lease writes not even its stop there.
			if (reason !== "lease_lost") log.warn({ event: "run_stopping", reason }, message);
			options.logger?.warn({ reason }, message);
			// Nothing in flight can be kept once the output failed or the folder is another process's:
			// those fetches end now (abandoned, counted), not after a grace period.
			if (reason === "output_failed" || reason === "lease_lost") {
				inflight.abort(new Error(message));
				return;
			}
			const grace = options.gracePeriodMs ?? 30_000;
			graceTimer = setTimeout(() => inflight.abort(new Error("grace period over")), grace);
			graceTimer.unref();
		};
		const onSignal = () => stop("interrupted", "stop requested: no new fetches; in-flight ones may finish");
		if (options.signal.aborted) onSignal();
		else options.signal.addEventListener("abort", onSignal, { once: true });

		gate.observe(health.rateLimitRemaining);
		if (health.failure !== null) {
			log.warn({ event: "health_failed", error: health.failure }, "health check failed; starting anyway");
		}

		/**
		 * A write error on the output (full disk, read-only folder) stops the run at once: every further
		 * fetch would be paid for and lost. In-flight fetches finish and are counted as abandoned.
		 */
		let outputFailure: OutputError | null = null;
		/** The lock was taken over: the folder is another process's now, not one more byte is written to it. */
		let leaseLost = false;
		lock.onLost?.((holder) => {
			leaseLost = true;
			stop(
				"lease_lost",
				`lease lost: ${holder.pid > 0 ? `pid ${holder.pid} on ${holder.host} took the job's lock over` : "the job's lock was taken over and released by another process"} (this run's heartbeat was older than the lease); nothing more is sent or written here`,
			);
		});
		/** An output failure stops the run; anything else is a bug, thrown on. */
		const outputFailed = (error: unknown) => {
			if (!(error instanceof OutputError)) throw error;
			outputFailure = error;
			log.error({ event: "output_failed", path: error.path }, error.message);
			stop("output_failed", error.message);
		};
		/**
		 * Whether this run may append to its folder now: the output has not failed, and the lease is
		 * certainly still ours (fencing: asked before each append, free while the heartbeat is recent).
		 */
		const mayWrite = () => !outputFailure && !leaseLost && lock.isHeld();
		const guardOutput = <T>(work: () => T): T | undefined => {
			if (!mayWrite()) return undefined;
			try {
				return work();
			} catch (error) {
				outputFailed(error);
				return undefined;
			}
		};

		const syncTimer = setInterval(() => {
			guardOutput(() => {
				for (const sink of sinks) sink.sync();
				journal.sync();
				crawler?.sync();
			});
		}, options.syncIntervalMs ?? 1000);
		syncTimer.unref();

		const progress = () => {
			options.onProgress?.({
				done: stats.done,
				// A crawl's total grows as it discovers pages: never shown below what is done.
				total: Math.max(survey.total, stats.done),
				ok: stats.byStatus.ok,
				failed: stats.byStatus.failed,
				skipped: stats.byStatus.skipped,
				creditsUsed: stats.creditsUsed,
				retries: stats.retries,
				inFlight: queue.pending,
				sessionDone: stats.sessionDone,
				paused: pauseState(),
			});
		};
		const pauseState = (): ProgressSnapshot["paused"] => {
			const reason = gate.pauseReason();
			if (reason === null) return null;
			const left = gate.pausedUntil - clock();
			return { reason, leftMs: reason === "rate_limited" && left > 0 ? left : null };
		};
		// Nothing is written while the service holds every send: the display is told once a second instead.
		const pauseTicker = setInterval(() => {
			if (gate.pauseReason() !== null) progress();
		}, 1000);
		pauseTicker.unref();

		/** The one record path (record-writer.ts): no record or journal line reaches a file by another route. */
		const write = createRecordWriter({
			scrub: createRecordScrubber(options.secrets),
			changes,
			fill,
			contract,
			jsonl,
			sinks,
			history: heldBack ? null : history,
			historyRun,
			stats,
			report,
			onWritten: progress,
		});

		/**
		 * The record of a fetched target, built and written; undefined when the output has failed or the
		 * lease was lost (checked again after the page pool's answer: nothing is written past either).
		 */
		const writeFetched = async (
			target: Target,
			result: Extract<FetchResult, { kind: "ok" | "failed" }>,
			charged: number,
			started: number,
		): Promise<ResultRecord | undefined> => {
			if (!mayWrite()) return undefined;
			const page = await readPage(target, result);
			if (page.abandoned || !mayWrite()) return undefined;
			try {
				// Links go to the frontier before the record is written: a crash between the two loses nothing.
				if (crawler && result.kind === "ok" && isHtmlResult(target, result))
					crawler.pageFetched(target, page.read?.links ?? null, result.finalUrl);
				const record = addExtraction(
					fetchedRecord(target, result, charged, started, clock(), content),
					target,
					result,
					job,
					page.read,
				);
				if (page.tooComplex !== undefined) markTooComplex(record, page.tooComplex);
				write(record, record.status === "ok" && result.kind === "ok" ? (result.spilled ?? result.body) : null);
				return record;
			} catch (error) {
				outputFailed(error);
				return undefined;
			}
		};

		/** The limit the service reports (`X-RateLimit-Limit`): what a learned run's summary gives as its concurrency. */
		let learnedLimit: number | null = null;
		const onHeaders = (headers: ScraperHeaders) => {
			stats.creditsSeen(headers.creditsRemaining);
			if (headers.rateLimitLimit !== undefined) learnedLimit = headers.rateLimitLimit;
			// Learned concurrency (scraper key only): one more slot per answer, up to the service's limit.
			if (options.adaptiveConcurrency && headers.rateLimitLimit !== undefined) {
				const ceiling = Math.min(options.concurrency, headers.rateLimitLimit);
				if (queue.concurrency < ceiling) queue.concurrency += 1;
				else if (queue.concurrency > ceiling) queue.concurrency = Math.max(1, ceiling);
			} else if (sharedKey) {
				queue.concurrency = sharedKey.answered(headers.rateLimitLimit, headers.rateLimitRemaining);
			}
		};

		const settleBudget = () => {
			const waiters = budgetWaiters;
			budgetWaiters = [];
			for (const wake of waiters) wake();
		};

		/**
		 * The worst case did not fit: while other fetches hold reservations, wait for them to settle (they
		 * often cost less than booked) and try again. False when it can no longer fit.
		 */
		const waitForBudget = async (worstCase: number): Promise<boolean> => {
			for (;;) {
				if (budget.reserved === 0 || stopReason) return false;
				await new Promise<void>((resolve) => budgetWaiters.push(resolve));
				if (budget.tryReserve(worstCase)) return true;
			}
		};

		/** Book a fetch's worst case, or stop the run (`budget_exhausted`) when it can no longer fit. */
		const reserveOrStop = async (worstCase: number): Promise<boolean> => {
			if (budget.tryReserve(worstCase) || (await waitForBudget(worstCase))) return true;
			stop(
				"budget_exhausted",
				`stopping: max_credits ${budget.limit} reached (${budget.spent} spent; the next fetch may cost ${worstCase}); continue with --resume --max-credits <larger>`,
			);
			return false;
		};

		const content = { mode: job.output.content, pages };
		const browser = options.browser;
		const sessions = browser ? createSessionLimiter(browser) : null;

		const outageTimeoutMs = options.outageTimeoutMs ?? job.outageTimeoutMs;
		const outage = createOutageMonitor({
			gate,
			probe: (signal) => options.client.health(AbortSignal.any([signal, inflight.signal])),
			clock,
			sleep,
			timeoutMs: outageTimeoutMs,
			onOutage: () => {
				log.warn(
					{ event: "pause", reason: "service_unavailable", outage: true },
					"the service looks down: every send paused while /scraper/health is probed",
				);
				options.logger?.warn(
					{ reason: "service_unavailable" },
					"the service looks down: all fetches paused, probing /scraper/health",
				);
			},
			onRecovered: (outageMs) => {
				log.warn(
					{ event: "pause", reason: "service_unavailable", pause_ms: outageMs, recovered: true },
					"the service answers again: sends resumed",
				);
				options.logger?.warn(
					{ outage_ms: outageMs },
					`the service answers again after ${formatDuration(outageMs)}: fetches resumed`,
				);
			},
			onTimeout: (outageMs) => {
				log.warn({ event: "pause", reason: "service_unavailable", pause_ms: outageMs }, "outage_timeout passed");
				stop(
					"service_unavailable",
					`stopping: the service has been unreachable for ${formatDuration(outageMs)} (outage_timeout ${formatDuration(outageTimeoutMs)}); the targets it failed have no record: finish with --resume`,
				);
			},
		});
		let resetCapWarned = false;

		// One set of dependencies for every fetch: nothing per target but the target itself.
		const fetchDeps: FetchTargetDeps = {
			client: options.client,
			gate,
			outage,
			maxBodyBytes: job.maxBodyBytes,
			onResetCapped: () => {
				if (resetCapWarned) return;
				resetCapWarned = true;
				const message = `a 429 asked to wait more than ${MAX_RESET_SECONDS} s; waiting ${MAX_RESET_SECONDS} s (the cap) instead`;
				log.warn({ event: "reset_capped", cap_s: MAX_RESET_SECONDS }, message);
				options.logger?.warn({ cap_s: MAX_RESET_SECONDS }, message);
			},
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
				// A task id echoing a key is written redacted (the resume then fetches again rather than leak it).
				journal.task(targetId, redactSecrets(taskId, options.secrets));
				stats.taskCreated();
				log.info({ event: "task", id: targetId, task_id: taskId }, "fetch continues as a task");
			},
			onRetry: (targetId, kind) => {
				log.info({ event: "retry", id: targetId, kind }, "retrying");
			},
		};

		/** A `browser_session:` target: a fresh remote-browser session (browser credits: not in the budget). */
		const runBrowserTarget = async (target: Target & { browserSession: NonNullable<Target["browserSession"]> }) => {
			const started = clock();
			if (guardOutput(() => journal.started(target.id)) === undefined && outputFailure) return;
			if (!browser || !sessions) throw new Error("a browser_session target needs the browser service's access");
			const { result, evaluated } = await fetchBrowserTarget(target, {
				access: browser,
				sessions,
				retry: job.retry,
				clock,
				sleep,
				random,
				signal: inflight.signal,
				isStopping: () => stopReason !== null,
				onRetry: fetchDeps.onRetry,
			});
			if (result.kind === "aborted") {
				stop(result.reason, `stopping: ${result.message}`);
				return;
			}
			if (result.kind === "abandoned") return;
			// `extract:` reads the final page's HTML, as for a scraper fetch (shared/design.md, browser jobs).
			const page = await readPage(target, result);
			if (page.abandoned) return;
			const record = addExtraction(
				fetchedRecord(target, result, result.creditsUsed ?? 0, started, clock(), content),
				target,
				result,
				job,
				page.read,
			);
			if (page.tooComplex !== undefined) markTooComplex(record, page.tooComplex);
			if (evaluated.length > 0)
				record.data = { ...record.data, evaluate: evaluated.length === 1 ? evaluated[0] : evaluated };
			guardOutput(() => write(record, result.kind === "ok" ? result.body : null));
		};

		/**
		 * Where a large page goes instead of memory: to its file (`content: files`) or nowhere but its size
		 * and hash (`content: none`) — unless extraction or the crawler must read it.
		 */
		const pagesNobodyReads = !job.extraction && !crawler && job.output.content !== "inline";
		const bodySpill: BodySpill | undefined = pagesNobodyReads
			? { afterBytes: SPILL_AFTER_BYTES, dir: pages?.dir ?? null }
			: undefined;

		const runTarget = async (target: Target) => {
			if (stopReason) return;
			if (target.browserSession) return runBrowserTarget(target as Parameters<typeof runBrowserTarget>[0]);
			const worstCase = creditCostRange(target.params).max;
			// No record when it does not fit: the target is left for `--resume --max-credits <larger>`.
			if (!(await reserveOrStop(worstCase))) return;
			const started = clock();
			if (guardOutput(() => journal.started(target.id)) === undefined && outputFailure) {
				budget.release(worstCase);
				settleBudget();
				return;
			}
			const result = await fetchTarget(
				target.id,
				target.params,
				fetchDeps,
				resumeTasks.get(target.id) ?? null,
				bodySpill,
			);
			switch (result.kind) {
				case "ok":
				case "failed": {
					// An ok fetch whose cost went unreported (or came back negative or garbled) is booked at its worst case.
					const charged = result.creditsUsed ?? worstCase;
					budget.commit(worstCase, charged);
					settleBudget();
					const record = await writeFetched(target, result, charged, started);
					if (!record) {
						stats.abandoned += 1;
						return;
					}
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
				case "output_failed":
					// The answer came (and was paid) but its page could not be written: no record, the run stops.
					budget.commit(worstCase, worstCase);
					settleBudget();
					stats.abandoned += 1;
					guardOutput(() => {
						throw new OutputError(result.path, result.cause);
					});
					return;
				case "abandoned":
					budget.release(worstCase);
					settleBudget();
					if (result.taskId) stats.tasks.leftPending += 1;
					// Sent but given up (a stop past its grace period): the service may still charge it.
					if (result.attempts > 0) stats.abandoned += 1;
					return;
				default: {
					const unreachable: never = result;
					throw new Error(`unhandled result ${JSON.stringify(unreachable)}`);
				}
			}
		};

		const summarize = (reason: string | null) =>
			buildSummary(stats, {
				job: job.name,
				runId,
				resumed: prior !== null,
				stopReason: reason,
				survey,
				maxCredits,
				rateLimitPauses: gate.pauses,
				concurrency: options.adaptiveConcurrency
					? Math.min(options.concurrency, learnedLimit ?? queue.concurrency)
					: options.concurrency,
				startedMs: startedAt,
				finishedMs: clock(),
				...(carried ? { carried } : {}),
			});
		// A second signal: the process ends now. Records are on disk already; the summary is written as it
		// stands (synchronous, about a millisecond), counting every fetch in flight as abandoned.
		const lastWord = () => {
			if (leaseLost) return "the job's lock was taken over: this run's folder is another process's now";
			const inFlight = queue.pending;
			stats.abandoned += inFlight;
			const summary = summarize(stopReason ?? "interrupted");
			if (fill) summary.extract = fill.summary();
			writeSummary(join(runDir, RUN_FILES.summary), summary);
			return `summary.json written in ${runDir}${inFlight > 0 ? `; ${inFlight === 1 ? "1 fetch" : `${inFlight} fetches`} in flight abandoned (the service may still charge them)` : ""}`;
		};
		// The process's own hooks are the CLI's (bin.ts): a library caller that wants the same word passes `lastWords`.
		const removeLastWord = options.lastWords?.add(lastWord) ?? (() => undefined);

		// --- feed the queue with back-pressure: never more than a few targets per slot waiting -------------
		// per_host_concurrency, per_host_delay, and a crawl's robots.txt Crawl-delay: one gate per run.
		if (job.perHostConcurrency || job.perHostDelayMs || job.crawl?.robots === "obey") {
			hosts = createHostGate(queue.add, {
				...(job.perHostConcurrency ? { limit: job.perHostConcurrency } : {}),
				delayOf: (host) => Math.max(job.perHostDelayMs ?? 0, crawler?.crawlDelayMs(host) ?? 0),
				clock,
				sleep,
			});
		}
		/** Targets parked for a busy host at most (then the feeder waits): memory stays bounded on a one-host crawl. */
		const parkLimit = Math.max(1024, options.concurrency * 8);
		let discovered: DiscoveredTargets | null = null;
		let feedError: string | null = null;
		try {
			// map: / search: sources are asked once per run (kept in the run folder); their credits count in the budget.
			discovered = await discoverTargets(job, options.client, runDir, inflight.signal);
			if (discovered) budget.commit(0, discovered.credits);
			const targets = withDiscovered(
				// A sharded crawl reads every shard's seeds (its scope and seed options); it fetches only its own.
				streamTargetBatches(crawler && job.shard ? unshardedJob(job) : job, {
					seenKeys: { add: (high, low) => feedKeys.see(high, low) },
				}),
				discovered,
			);
			/** A crawled page's work, which tells the crawler when it has ended (the next depth may be due). */
			const crawled = (target: Target, work: () => Promise<void>) => async () => {
				try {
					await work();
				} finally {
					crawler?.settled(target);
				}
			};
			feed: for await (const batch of crawler ? crawler.targets(targets) : targets) {
				for (const target of batch) {
					if (stopReason) break feed;
					if (prior?.done.has(target.id)) {
						crawler?.settled(target);
						continue;
					}
					// A fresh crawled page: its links from its stored page, nothing fetched, no record.
					if (crawler && target.crawl?.storedPage !== undefined) {
						queue.add(crawled(target, () => followStoredPage(target)));
						continue;
					}
					// Refill in batches: wait only when twice the concurrency is queued, then until half of it
					// has started, so the wait (a promise and a listener) is paid once per batch, not per target.
					if (queue.size >= options.concurrency * 2) await queue.onSizeLessThan(options.concurrency);
					if (hosts && hosts.parked >= parkLimit) await hosts.parkedBelow(parkLimit / 2);
					if (stopReason) break feed;
					const work = crawler ? crawled(target, () => runTarget(target)) : () => runTarget(target);
					if (hosts) hosts.submit(target.url, work);
					else queue.add(work);
				}
			}
		} catch (error) {
			// A source changed under the run (unreadable, or a bad row): stop feeding; the targets read
			// before the bad row were valid, so they still run.
			feedError = errorMessage(error);
			log.warn({ event: "invalid_source" }, feedError);
			options.logger?.warn({ reason: "invalid_source" }, `no more targets: ${feedError}`);
		} finally {
			feedKeys.close();
		}
		await idle();
		outage.close();
		peers?.close();
		if (feedError !== null && stopReason === null) stopReason = "invalid_source";
		clearTimeout(graceTimer);
		clearInterval(syncTimer);
		clearInterval(pauseTicker);
		options.signal.removeEventListener("abort", onSignal);
		if (failures.length > 0) {
			log.error({ event: "internal_error", error: errorMessage(failures[0]) }, "internal error while running targets");
		}

		for (const sink of sinks) await sink.close();
		await pagePool?.close();
		journal.close();
		crawler?.close();
		removeLastWord();
		if (leaseLost) {
			// Summary, history and report belong to the process that holds the folder now.
			runLog.close();
			return { summary: summarize(stopReason), runDir, stopReason, stopMessage, reportPath: null };
		}
		const internalError = failures.length ? `internal error: ${errorMessage(failures[0])}` : null;
		const summary = summarize(stopReason ?? internalError);
		if (browser) {
			const after = await browser.readCredits().catch(() => null);
			summary.browser_credits_used =
				browser.creditsBefore !== null && after !== null ? Math.max(0, browser.creditsBefore - after) : null;
		}
		if (job.freshnessMs > 0) summary.targets.fresh = survey.deselected;
		addCrawlSummary(summary, crawler);
		addDiscoverySummary(summary, discovered);
		if (fill) summary.extract = fill.summary();
		if (changes) summary.changes = { ...changes.counts };
		if (contract && summary.complete && stopReason === null) {
			const verdict = contract.judge(
				summary,
				promotedSummaries(dirname(runDir), basename(runDir), BASELINE_RUNS),
				survey.deselected,
			);
			summary.contract = verdict;
			if (!verdict.passed) {
				stopReason = "contract_failed";
				summary.stopped_reason = stopReason;
				stopMessage = `the run broke its data contract: its records are not promoted to latest (${verdict.broken.map((rule) => rule.message).join("; ")})`;
				log.warn({ event: "contract_failed", broken: verdict.broken.length }, stopMessage);
				options.logger?.warn({ reason: stopReason }, stopMessage);
			}
			if (heldBack && history) {
				guardOutput(() =>
					writeContractState(runDir, verdict.passed ? "passed" : "held", verdict.passed ? undefined : verdict.broken),
				);
				if (verdict.passed) {
					try {
						history.foldRun(basename(runDir));
					} catch (error) {
						// The next open folds it in from results.jsonl: it passed, so nothing holds it back.
						options.logger?.warn({ error: errorMessage(error) }, "could not promote the run in the job's history");
					}
				}
			}
		}
		if (changes) {
			guardOutput(() => changes.close());
			try {
				history?.save();
			} catch (error) {
				// The history is rebuilt from the run folders next time: nothing is lost.
				options.logger?.warn(
					{ error: errorMessage(error) },
					"could not save the job's history; it is rebuilt next run",
				);
			}
		}
		try {
			writeSummary(join(runDir, RUN_FILES.summary), summary);
		} catch (error) {
			outputFailure ??= new OutputError(join(runDir, RUN_FILES.summary), error);
			stopReason ??= "output_failed";
		}
		log.info(
			{
				event: "run_end",
				complete: summary.complete,
				stopped_reason: summary.stopped_reason,
				done: summary.targets.done,
				credits_used: summary.credits.used,
			},
			"run ended",
		);
		runLog.close();
		let reportPath: string | null = null;
		try {
			reportPath = report ? await report.write(runDir, summary) : await rebuildReport(runDir);
		} catch (error) {
			options.logger?.warn({ error: errorMessage(error) }, "could not write report.html");
		}
		return { summary, runDir, stopReason, stopMessage, reportPath };
	}
}
