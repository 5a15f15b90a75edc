import { basename, dirname, join } from "node:path";
import type { Logger } from "pino";
import type { BodySpill, ScraperClient } from "../api/index.js";
import type { BrowserServiceAccess } from "../browser/index.js";
import {
	type Clock,
	createTaskQueue,
	createUrlKeys,
	type LastWords,
	sleep as realSleep,
	type Sleep,
	systemClock,
} from "../common/index.js";
import { createPagePool } from "../extract/index.js";
import { createChangeTracker, type JobHistory, readContractState, writeContractState } from "../history/index.js";
import type { Job } from "../job/index.js";
import {
	createPageStore,
	createRecordScrubber,
	createRunLog,
	newRunId,
	type PageStore,
	RUN_FILES,
	writeSummary,
} from "../output/index.js";
import { createReportCollector } from "../report/index.js";
import { type BreakerEvents, createBreakers } from "./breaker.js";
import { createSessionLimiter } from "./browser-target.js";
import { createContractCheck } from "./contract-check.js";
import { crawlerFor, serviceSitemapFetch } from "./crawl-hook.js";
import { createCreditBudget } from "./credit-budget.js";
import { createRunFillStats } from "./extract-record.js";
import { type FeedOutcome, feedTargets, hostGateFor, whenIdle } from "./feeder.js";
import { fetchTarget } from "./fetch-target.js";
import { finishRun, type RunJobResult } from "./finish-run.js";
import { fleetCrawlFor } from "./fleet-crawl.js";
import { createFleetCoordination, type FleetWorkerSetup } from "./fleet-worker.js";
import { lockJobOutput, warnIfTookOver } from "./job-lock.js";
import { openJournal } from "./journal.js";
import { type OpenedRun, openRun, type RunSelection } from "./open-run.js";
import { watchOutages } from "./outage-watch.js";
import { createPaidAnswers } from "./paid-answers.js";
import { createQueueConcurrency } from "./queue-concurrency.js";
import { createRecordWriter, openRecordSinks } from "./record-writer.js";
import { createRunEconomics } from "./run-economics.js";
import type { LockLease, RunLock } from "./run-lock.js";
import { createProgressReporter, type ProgressSnapshot } from "./run-progress.js";
import { buildSummary, createRunStatistics } from "./run-statistics.js";
import { checkScraperHealth, type HealthReading } from "./scraper-health.js";
import { createSendGate } from "./send-gate.js";
import { watchShardPeers } from "./shard-peers.js";
import { createSharedKeyConcurrency } from "./shared-key-concurrency.js";
import { createStopController } from "./stop-controller.js";
import type { TargetSurvey } from "./survey-targets.js";
import { createFetchDeps, createTargetRunner, reserveOrStop } from "./target-runner.js";
import { DEFAULT_TASK_POLL, type TaskPollOptions } from "./task-poller.js";

export type { RunJobResult } from "./finish-run.js";
export type { ProgressSnapshot } from "./run-progress.js";
export type { StopReason } from "./stop-controller.js";

/**
 * Page bodies past this size leave memory on their way in when nothing reads them (see `bodySpill`):
 * a fetch then holds at most about this much, whatever `max_body_mb` allows.
 */
const SPILL_AFTER_BYTES = 1024 * 1024;
/** The run folder's directory of spilled row keys (removed when the feed ends; stale ones at the next start). */
const FEED_KEYS_DIR = "target-keys";
/** Row keys the duplicate check holds in memory: ~4 MB; a million rows spill three times. */
const FEED_KEYS_IN_MEMORY = 262_144;

/** Everything `runJob` needs: a loaded job, its survey, a scraper client, a run folder and a lock. The library's `runJobFile` assembles them. */
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
	/** Called with where the run stands, as records are written and each second of a pause. */
	readonly onProgress?: (snapshot: ProgressSnapshot) => void;
	/** The job's history (incremental runs): records are stamped with `content_hash` and `change` against it. */
	readonly history?: JobHistory;
	/** How long an outage may last before the run stops (`service_unavailable`), ms. @default 600000 */
	readonly outageTimeoutMs?: number;
	readonly clock?: Clock;
	readonly sleep?: Sleep;
	/** The backoff's jitter, in [0, 1) (tests fix it). @default Math.random */
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
		/** The browser credits now, or null when they cannot be read. */
		readCredits(): Promise<number | null>;
	};
	/** The job's lock, taken by the caller before any request (the CLI does); else runJob takes it first. */
	readonly lock?: RunLock;
	/**
	 * The lease and host name of the job's lock (the one runJob takes, without `lock`) and of the other
	 * shards' locks it reads (SCRAPEJOB_LOCK_LEASE_MS, SCRAPEJOB_HOSTNAME). @default 30 s, the machine's name
	 */
	readonly lockLease?: LockLease;
	/** Id of a new run (the one named in `lock`); default: from the start time. */
	readonly runId?: string;
	/** A second signal ends the process at once: the runner's last word writes summary.json as it stands. */
	readonly lastWords?: LastWords;
	/**
	 * Work as one worker of a fleet run (`run --fleet`): targets, budget, concurrency, politeness and the
	 * task journal are the fleet's, in PostgreSQL; the run folder is this worker's own.
	 */
	readonly fleet?: FleetWorkerSetup;
	/** Where the run folder goes. @default `<outRoot>/<job>/` */
	readonly runsDir?: string;
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
		options.lock ??
		lockJobOutput(
			options.outRoot,
			job.name,
			options.resumeDir ? basename(options.resumeDir) : newId,
			".lock",
			options.lockLease,
		);
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
			...(options.runsDir !== undefined ? { runsDir: options.runsDir } : {}),
			...(options.maxCredits !== undefined ? { maxCredits: options.maxCredits } : {}),
			...(options.selection ? { selection: options.selection } : {}),
		});
		return await execute(opened, health);
	} finally {
		if (!options.lock) lock.release();
	}

	async function execute(opened: OpenedRun, health: HealthReading): Promise<RunJobResult> {
		const { runId, runDir, prior, resumeTasks, resumePaid, carried, maxCredits } = opened;
		const runLog = createRunLog(join(runDir, RUN_FILES.log), options.secrets);
		const log = runLog.log;
		const journal = openJournal(join(runDir, RUN_FILES.journal));
		journal.session(runId, prior !== null);
		const { jsonl, sinks } = openRecordSinks(job, runDir);
		// A fleet worker's records are the fleet's (PostgreSQL): the job's local store does not see them.
		const history = options.fleet ? null : (options.history ?? null);
		const historyRun = history ? history.runIndex(basename(runDir)) : 0;
		// The fleet's coordination parts (fleet-worker.ts) in place of the local ones, chosen here once.
		const fleet = options.fleet
			? createFleetCoordination(options.fleet, { job, clock, sleep, log, tracksChanges: true })
			: null;
		// Incremental runs: each ok record is compared with the target's previous one (the job's store, or
		// the fleet's earlier runs).
		const previousRecords = fleet?.previousRecords ?? history;
		const changes = previousRecords ? createChangeTracker(previousRecords, runDir, Boolean(job.extraction)) : null;
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
		const budget = fleet?.budget ?? createCreditBudget(maxCredits, stats.creditsUsed);
		// Signals, the lease, outages, the budget, failed writes: one stop reason, one grace period.
		const stops = createStopController({
			signal: options.signal,
			...(options.gracePeriodMs !== undefined ? { gracePeriodMs: options.gracePeriodMs } : {}),
			lock,
			log,
			...(options.logger ? { logger: options.logger } : {}),
		});

		// Shards sharing a key split its limit and grow into free slots (shared-key-concurrency.ts).
		const peers =
			job.shard && job.shard.count > 1
				? watchShardPeers(dirname(runDir), job.shard, runId, { lease: options.lockLease ?? {} })
				: null;
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
		const concurrency = createQueueConcurrency({
			concurrency: options.concurrency,
			adaptive: options.adaptiveConcurrency === true,
			sharedKey,
		});
		const failures: unknown[] = [];
		const queue = createTaskQueue({
			concurrency: concurrency.initial,
			// A task that throws is a bug: the run ends with it as an internal error.
			onError: (error) => failures.push(error),
		});
		const gate = createSendGate(clock, sleep, {
			// Each 429 window in run.log, with its length: the report marks them on its timeline.
			onPause: (pauseMs) => {
				log.warn({ event: "pause", reason: "rate_limited", pause_ms: pauseMs }, "paused by the service (429)");
				queue.concurrency = concurrency.rateLimited(queue.concurrency);
				fleet?.paused(pauseMs);
			},
		});
		gate.observe(health.rateLimitRemaining);
		// Another worker's 429 pauses this one's sends too (a 429 is the key's, not the worker's).
		fleet?.watchPause((ms) => gate.pause(ms));
		if (health.failure !== null) {
			log.warn({ event: "health_failed", error: health.failure }, "health check failed; starting anyway");
		}
		const outage = watchOutages({
			gate,
			client: options.client,
			stops,
			clock,
			sleep,
			timeoutMs: options.outageTimeoutMs ?? job.outageTimeoutMs,
			log,
			...(options.logger ? { logger: options.logger } : {}),
		});
		const fetchDeps = createFetchDeps({
			client: options.client,
			gate,
			outage,
			job,
			stops,
			journal,
			stats,
			taskPoll: { ...DEFAULT_TASK_POLL, deadlineMs: job.taskTimeoutMs, ...options.taskPoll },
			method: options.method ?? "POST",
			clock,
			sleep,
			random,
			secrets: options.secrets,
			onHeaders: (headers) => {
				stats.creditsSeen(headers.creditsRemaining);
				queue.concurrency = concurrency.answered(headers, queue.concurrency);
				fleet?.rateLimitSeen(headers.rateLimitLimit);
			},
			...(fleet ? { onTask: fleet.taskStarted } : {}),
			log,
			...(options.logger ? { logger: options.logger } : {}),
		});
		const fetchSitemap = serviceSitemapFetch({
			fetch: (id, params, spill) => fetchTarget(id, params, fetchDeps, null, spill),
			reserve: (worstCase) => reserveOrStop(budget, stops, worstCase),
			budget,
			stop: (reason, message) => stops.stop(reason, message),
			outputFailed: (error) => stops.outputFailed(error),
		});
		const warnCrawl = (message: string) => {
			log.warn({ event: "crawl_bound" }, message);
			options.logger?.warn({ reason: "crawl_bound" }, message);
		};
		// A fleet worker's crawl hands links to the fleet's frontier (fleet-crawl.ts); a local one keeps its own.
		const crawler =
			fleet && job.crawl
				? await fleetCrawlFor({ ...job, crawl: job.crawl }, fleet, {
						runDir,
						fetchSitemap,
						warn: warnCrawl,
						isStopping: () => stops.stopping,
					})
				: crawlerFor(
						job,
						runDir,
						prior?.done ?? null,
						() => stops.stopping,
						fetchSitemap,
						options.crawlKeysInMemory,
						peers,
						warnCrawl,
						undefined,
						options.lockLease?.leaseMs,
					);
		// A resumed crawl's robots.txt and sitemap credits of earlier sessions are spent already.
		if (crawler) budget.commit(0, crawler.summary().sitemap_credits);
		stops.onStop(() => {
			queue.clear();
			// The crawl stops waiting for pages to settle: the ones just cleared never will.
			crawler?.wake();
		});
		// Pages that `extract:` or `crawl:` read are parsed in worker threads, bounded by `page_timeout`.
		const pagePool =
			job.extraction || crawler || (job.blockSignatures?.css.length ?? 0) > 0
				? await createPagePool({ timeoutMs: job.pageTimeoutMs })
				: null;

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

		const syncTimer = setInterval(() => {
			stops.guardOutput(() => {
				for (const sink of sinks) sink.sync();
				journal.sync();
				crawler?.sync();
			});
		}, options.syncIntervalMs ?? 1000);
		syncTimer.unref();
		const progress = createProgressReporter({
			stats,
			// A crawl's total is the pages it knows of (seeds and links found, up to max_pages): it grows.
			total: crawler ? () => knownPages(crawler.summary()) : () => survey.total,
			inFlight: () => queue.pending,
			gate,
			clock,
			...(options.onProgress ? { onProgress: options.onProgress } : {}),
		});

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
			onWritten: progress.report,
			fence: stops,
			...(fleet ? { targetFence: fleet.mayWrite, onRecord: fleet.written } : {}),
		});
		const browser = options.browser ?? null;
		// The per-domain paid-failure breakers (docs/behaviour.md, "Breakers"): said in run.log and on the terminal.
		// A fleet's are rows in its database, shared by every worker.
		const breakerEvents: BreakerEvents = {
			onOpen: (open) => {
				const message = `breaker open for ${open.domain}: ${open.reason}; its remaining targets are parked (${fleet ? "--continue" : "--resume"} takes them)`;
				log.warn({ event: "breaker_open", domain: open.domain, reason: open.reason }, message);
				options.logger?.warn({ domain: open.domain }, message);
			},
			onClose: (domain) => {
				log.info({ event: "breaker_closed", domain }, `breaker closed for ${domain}: the probe was useful`);
				options.logger?.info({ domain }, `breaker closed for ${domain}: the probe was useful`);
			},
		};
		const breakers = !job.breaker
			? null
			: fleet
				? fleet.useBreakers(job.breaker, breakerEvents)
				: createBreakers(job.breaker, clock, breakerEvents);
		// `mode: adaptive` and the forecast: what the job's store remembers of modes and costs (run-economics.ts).
		const economics = createRunEconomics(job, history, options.logger);
		const runner = createTargetRunner({
			job,
			stops,
			budget,
			journal,
			write,
			stats,
			fetchDeps,
			crawler,
			pagePool,
			content: { mode: job.output.content, pages },
			resumeTasks: fleet?.tasks ?? resumeTasks,
			resumePaid,
			paidAnswers: createPaidAnswers(runDir),
			bodySpill: bodySpillFor(job, crawler, pages),
			browser: browser ? { access: browser, sessions: createSessionLimiter(browser) } : null,
			clock,
			sleep,
			random,
			breakers,
			economics,
			log,
		});

		const summarize = (reason: string | null) =>
			buildSummary(stats, {
				job: job.name,
				runId,
				resumed: prior !== null,
				stopReason: reason,
				survey,
				maxCredits,
				rateLimitPauses: gate.pauses,
				concurrency: concurrency.reported(queue.concurrency),
				startedMs: startedAt,
				finishedMs: clock(),
				...(carried ? { carried } : {}),
			});
		const summarizeWithBreakers = (reason: string | null) => {
			const summary = summarize(reason);
			const open = breakers?.open() ?? [];
			if (open.length > 0) summary.breakers = open;
			const fleetSummary = fleet?.ended;
			if (fleet && fleetSummary) {
				// A worker's session is complete when the fleet run is: its targets are the fleet's.
				summary.fleet = fleetSummary;
				summary.complete = reason === null && fleet.complete;
			}
			economics.finish(summary, runId, summary.finished_at);
			return summary;
		};
		// A second signal: the process ends now. Records are on disk already; the summary is written as it
		// stands (synchronous, about a millisecond), counting every fetch in flight as abandoned.
		const lastWord = () => {
			if (stops.leaseLost) return "the job's lock was taken over: this run's folder is another process's now";
			const inFlight = queue.pending;
			stats.abandoned += inFlight;
			const summary = summarize(stops.reason ?? "interrupted");
			if (fill) summary.extract = fill.summary();
			writeSummary(join(runDir, RUN_FILES.summary), summary);
			return `summary.json written in ${runDir}${inFlight > 0 ? `; ${inFlight === 1 ? "1 fetch" : `${inFlight} fetches`} in flight abandoned (the service may still charge them)` : ""}`;
		};
		// The process's own hooks are the CLI's (bin.ts): a library caller that wants the same word passes `lastWords`.
		const removeLastWord = options.lastWords?.add(lastWord) ?? (() => undefined);

		// A fleet's politeness is in its claims (each host's clock is a row): no gate of this worker's own.
		const hosts = fleet ? null : hostGateFor(job, queue, crawler, clock, sleep);
		const feed = async (): Promise<FeedOutcome> => {
			if (!fleet) return feedTargets(feedParts);
			await fleet.feed({ queue, runner, stops, concurrency: options.concurrency });
			return { discovered: null, feedError: null };
		};
		const feedParts = {
			job,
			client: options.client,
			runDir,
			queue,
			hosts,
			crawler,
			done: prior?.done ?? null,
			stops,
			budget,
			// The duplicate check of the rows read: past `feedKeysInMemory` keys, older ones go to sorted files
			// in the run folder with ~1.5 bytes a row left in memory (at a million rows: ~5 MB, not 16).
			feedKeys: createUrlKeys({
				dir: join(runDir, FEED_KEYS_DIR),
				inMemory: options.feedKeysInMemory ?? FEED_KEYS_IN_MEMORY,
			}),
			concurrency: options.concurrency,
			runner,
			log,
			...(options.logger ? { logger: options.logger } : {}),
		};
		const { discovered, feedError } = await feed();
		await whenIdle(queue, hosts);
		await fleet?.close();
		outage.close();
		peers?.close();
		if (feedError !== null) stops.conclude("invalid_source", null);
		// Ctrl-C after the last target went out, its fetch finished in the grace period: nothing is left for
		// --resume, so the run is complete (not "INCOMPLETE, 0 remaining: finish with --resume", exit 130).
		// A crawl's or a discovery source's total is not the survey's: those keep the stop.
		if (!crawler && discovered === null && stats.done >= survey.total && stops.finishedDespiteSignal())
			log.info({ event: "run_complete_despite_stop" }, "every target has its record: the run is complete");
		stops.close();
		clearInterval(syncTimer);
		progress.close();
		return finishRun({
			runDir,
			stops,
			summarize: summarizeWithBreakers,
			failures,
			sinks,
			journal,
			pagePool,
			crawler,
			discovered,
			deselected: survey.deselected,
			budget,
			freshness: job.freshnessMs > 0,
			fill,
			changes,
			contract,
			heldBack,
			history,
			report,
			browser,
			filesClosed: removeLastWord,
			runLog,
			...(options.logger ? { logger: options.logger } : {}),
		});
	}
}

/**
 * Where a large page goes instead of memory: to its file (`content: files`) or nowhere but its size and
 * hash (`content: none`) — unless extraction or the crawler must read it.
 */
function bodySpillFor(job: Job, crawler: unknown, pages: PageStore | null): BodySpill | undefined {
	const pagesNobodyReads =
		!job.extraction && !crawler && (job.blockSignatures?.css.length ?? 0) === 0 && job.output.content !== "inline";
	return pagesNobodyReads ? { afterBytes: SPILL_AFTER_BYTES, open: () => pages?.openBody() ?? null } : undefined;
}

/** A crawl's pages known so far: every URL found in scope, no more than `max_pages` will be fetched. */
function knownPages(crawl: { readonly discovered: number; readonly max_pages: number }): number {
	return Math.min(crawl.discovered, crawl.max_pages);
}
