import { basename, dirname, join } from "node:path";
import type { Logger } from "pino";
import type { ScraperHeaders } from "../../api/index.js";
import {
	type Clock,
	createTaskQueue,
	isoTime,
	type OptionWords,
	type Sleep,
	type TaskQueue,
} from "../../common/index.js";
import type { SitemapFetch } from "../../crawl/index.js";
import { createPagePool, type FillStats } from "../../extract/index.js";
import {
	createChangeTracker,
	type JobHistory,
	type PreviousRecords,
	readContractState,
	writeContractState,
} from "../../history/index.js";
import type { Job } from "../../job/index.js";
import { type CarriedBreaker, createPageStore, RUN_FILES, type RunSummary, writeSummary } from "../../output/index.js";
import { createReportCollector } from "../../report/index.js";
import { type BreakerEvents, type Breakers, createBreakers } from "../economics/breaker.js";
import type { RunEconomics } from "../economics/run-economics.js";
import type { TargetSurvey } from "../feed/survey-targets.js";
import { fleetCrawlFor } from "../fleet/fleet-crawl.js";
import type { FleetCoordination } from "../fleet/fleet-worker.js";
import type { CreditBudget } from "../flow/credit-budget.js";
import { watchOutages } from "../flow/outage-watch.js";
import { createQueueConcurrency, type QueueConcurrency } from "../flow/queue-concurrency.js";
import type { HealthReading } from "../flow/scraper-health.js";
import { createSendGate, type SendGate } from "../flow/send-gate.js";
import { createSharedKeyConcurrency } from "../flow/shared-key-concurrency.js";
import type { StopController } from "../flow/stop-controller.js";
import type { LockLease } from "../locks/run-lock.js";
import { type ShardPeers, shardsEndedDuring, watchShardPeers } from "../locks/shard-peers.js";
import { createContractCheck } from "../records/contract-check.js";
import { openRecordSinks } from "../records/record-writer.js";
import {
	buildSummary,
	createRunStatistics,
	type RunFigures,
	type RunStatistics,
	runFigures,
} from "../records/run-statistics.js";
import { crawlerFor, serviceSitemapFetch } from "../target/crawl-hook.js";
import { createRunFillStats } from "../target/extract-record.js";
import { type FetchTargetDeps, fetchTarget } from "../target/fetch-target.js";
import { type BreakerChange, type Journal, openJournal } from "../target/journal.js";
import { createFetchDeps, reserveOrStop } from "../target/target-runner.js";
import { DEFAULT_TASK_POLL } from "../target/task-poller.js";
import type { OpenedRun } from "./open-run.js";
import type { RunJobOptions } from "./run-job.js";

/**
 * The parts `runJob` assembles a run from, each built by one function here: where records go, how
 * many fetches fly at once, the breakers. Kept apart so the run's assembly reads as a list of parts.
 */

/**
 * Everything a record passes on its way to the files: the journal, the sinks, change tracking (against
 * the job's store, or a fleet's earlier runs), the fill rates, the data contract, the page store, the
 * statistics and the report. A resumed run picks up its earlier records' counts.
 */
export async function openRecordParts(input: {
	readonly job: Job;
	readonly opened: OpenedRun;
	/** The job's store; null for a fleet worker (its records are the fleet's). */
	readonly history: JobHistory | null;
	/** Where change tracking finds previous records, when not the store (a fleet's). */
	readonly previous: PreviousRecords | null;
	readonly startedAt: number;
}) {
	const { job, opened, history } = input;
	const { runId, runDir, prior } = opened;
	const journal = openJournal(join(runDir, RUN_FILES.journal));
	journal.session(runId, prior !== null);
	const { jsonl, sinks } = openRecordSinks(job, runDir);
	const historyRun = history ? history.runIndex(basename(runDir)) : 0;
	// Incremental runs: each ok record is compared with the target's previous one.
	const previous = input.previous ?? history;
	const changes = previous ? createChangeTracker(previous, runDir, Boolean(job.extraction)) : null;
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
	const report = prior === null ? createReportCollector(input.startedAt) : null;
	return { journal, jsonl, sinks, historyRun, changes, fill, contract, heldBack, pages, stats, report };
}

/**
 * How many fetches fly at once and when they may go: shards sharing a key split its limit
 * (shared-key-concurrency.ts), the queue's concurrency follows the service's answers, and the send gate
 * holds every send through a 429's window — a fleet worker's for the whole fleet.
 */
export function createFlowControl(input: {
	readonly job: Job;
	readonly runDir: string;
	readonly runId: string;
	readonly concurrency: number;
	readonly adaptiveConcurrency: boolean;
	readonly lockLease: LockLease | undefined;
	readonly health: HealthReading;
	/** The key's free slots now, asked for free (the health check): how a shard re-learns them after a quiet spell. */
	readonly freeSlots: () => Promise<number | undefined>;
	readonly fleet: FleetCoordination | null;
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly log: Logger;
	/** The caller's logger (the terminal): told when a shard starts waiting for its turn on the key. */
	readonly logger?: Logger | undefined;
}) {
	const { job, fleet, clock, log } = input;
	// A shard waiting for its turn on the key gets no answer to learn it from: each read of the peers' locks asks.
	let onPeersRead: (() => void) | null = null;
	const peers =
		job.shard && job.shard.count > 1
			? watchShardPeers(dirname(input.runDir), job.shard, input.runId, {
					lease: input.lockLease ?? {},
					onRead: () => onPeersRead?.(),
				})
			: null;
	const sharedKey =
		job.shard && peers && !input.adaptiveConcurrency
			? createSharedKeyConcurrency({
					limit: input.concurrency,
					shard: job.shard,
					liveShards: peers.live,
					idleShards: peers.idle,
					endedShards: shardsEndedDuring(input.runDir, job.shard),
					clock,
				})
			: null;
	const concurrency = createQueueConcurrency({
		concurrency: input.concurrency,
		adaptive: input.adaptiveConcurrency,
		sharedKey,
	});
	const failures: unknown[] = [];
	const queue = createTaskQueue({
		concurrency: concurrency.initial,
		// A task that throws is a bug: the run ends with it as an internal error.
		onError: (error) => failures.push(error),
	});
	// The queue's slots as the key's answers, its 429s and (for a shard) its turn among the others say.
	let waitingTurn = false;
	const setSlots = (next: number) => {
		if (next === 0 && !waitingTurn) {
			const message =
				"waiting for a turn on the key: more shards are busy than it has slots; this one sends once an earlier one ends or runs out of work";
			log.info({ event: "share_wait", shard: `${job.shard?.index}/${job.shard?.count}` }, message);
			input.logger?.info({ shard: `${job.shard?.index}/${job.shard?.count}` }, message);
		}
		// Nothing in flight then keeps the process alive: the reads that end the wait do.
		if (waitingTurn !== (next === 0)) peers?.keepAlive(next === 0);
		waitingTurn = next === 0;
		queue.concurrency = next;
	};
	if (queue.concurrency === 0) setSlots(0);
	if (sharedKey) onPeersRead = () => setSlots(concurrency.peersRead(queue.concurrency));
	const answered = (headers: ScraperHeaders) => setSlots(concurrency.answered(headers, queue.concurrency));
	const gate = createSendGate(clock, input.sleep, {
		// Shards share the key: slots heard free go to the others while this one is quiet (a crawl shard
		// waiting for links), so it asks again before sending rather than into a 429's pause.
		...(sharedKey ? { probeSlots: input.freeSlots, probeAfterMs: 250 } : {}),
		// Each 429 window in run.log, with its length: the report marks them on its timeline.
		onPause: (pauseMs) => {
			log.warn({ event: "pause", reason: "rate_limited", pause_ms: pauseMs }, "paused by the service (429)");
			setSlots(concurrency.rateLimited(queue.concurrency));
			fleet?.paused(pauseMs);
		},
	});
	gate.observe(input.health.rateLimitRemaining);
	// Another worker's 429 pauses this one's sends too (a 429 is the key's, not the worker's).
	fleet?.watchPause((ms) => gate.pause(ms));
	if (input.health.failure !== null) {
		log.warn({ event: "health_failed", error: input.health.failure }, "health check failed; starting anyway");
	}
	return { peers, concurrency, queue, failures, gate, answered, waitingTurn: () => waitingTurn };
}

/**
 * The per-domain paid-failure breakers (docs/behaviour.md, "Breakers"), said in run.log and on the
 * terminal, and each change journalled (`journal`) so a resume of a killed process still knows them; a
 * fleet's are rows in its database, shared by every worker. Null with `breaker: false`.
 */
export function createRunBreakers(
	job: Job,
	fleet: FleetCoordination | null,
	clock: Clock,
	loggers: { readonly log: Logger; readonly logger: Logger | undefined; readonly words: OptionWords },
	carried: readonly CarriedBreaker[] = [],
	journal: ((change: BreakerChange) => void) | null = null,
): Breakers | null {
	const { log, logger, words } = loggers;
	if (!job.breaker) return null;
	const { fingerprint } = job;
	const events: BreakerEvents = {
		onOpen: (open) => {
			const message = `breaker open for ${open.domain}: ${open.reason}; its remaining targets are parked (${fleet ? words.continueOn : words.resumeOn} takes them)`;
			log.warn({ event: "breaker_open", domain: open.domain, reason: open.reason }, message);
			logger?.warn({ domain: open.domain }, message);
			if (!fleet) {
				const { domain, opened_at, reason } = open;
				journal?.({ e: "breaker", domain, open: true, opened_at, reason, fingerprint });
			}
		},
		onClose: (domain) => {
			log.info({ event: "breaker_closed", domain }, `breaker closed for ${domain}: the probe was useful`);
			logger?.info({ domain }, `breaker closed for ${domain}: the probe was useful`);
			if (!fleet) journal?.({ e: "breaker", domain, open: false, fingerprint });
		},
	};
	if (fleet) return fleet.useBreakers(job.breaker, events);
	const { coolDownMs } = job.breaker;
	for (const open of carried) {
		const message = `breaker still open for ${open.domain} (an earlier session's): its targets stay parked until ${isoTime(open.openedMs + coolDownMs)}, then one goes as the probe`;
		log.warn({ event: "breaker_carried", domain: open.domain, opened_at: isoTime(open.openedMs) }, message);
		logger?.warn({ domain: open.domain }, message);
	}
	return createBreakers(job.breaker, clock, events, carried);
}

/**
 * How targets are fetched: the outage watch over the service, the fetch's dependencies (the client,
 * the gate, the journal of tasks, the statistics), and the fetch of a crawl's sitemaps and robots.txt
 * (paid from the same budget).
 */
export function createFetching(input: {
	readonly options: Pick<RunJobOptions, "client" | "outageTimeoutMs" | "taskPoll" | "method" | "secrets" | "logger">;
	readonly job: Job;
	readonly gate: SendGate;
	readonly stops: StopController;
	readonly journal: Journal;
	readonly stats: RunStatistics;
	readonly budget: CreditBudget;
	readonly fleet: FleetCoordination | null;
	/** Each answer's headers (and when its fetch was sent): the queue's concurrency follows them. */
	readonly onAnswer: (headers: ScraperHeaders, sentAt: number) => void;
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly random: () => number;
	readonly log: Logger;
}) {
	const { options, job, gate, stops, stats, budget, fleet, clock, sleep, log } = input;
	const logger = options.logger ? { logger: options.logger } : {};
	const outage = watchOutages({
		gate,
		client: options.client,
		stops,
		clock,
		sleep,
		timeoutMs: options.outageTimeoutMs ?? job.outageTimeoutMs,
		log,
		...logger,
	});
	const fetchDeps = createFetchDeps({
		client: options.client,
		gate,
		outage,
		job,
		stops,
		journal: input.journal,
		stats,
		taskPoll: { ...DEFAULT_TASK_POLL, deadlineMs: job.taskTimeoutMs, ...options.taskPoll },
		method: options.method ?? "POST",
		clock,
		sleep,
		random: input.random,
		secrets: options.secrets,
		onHeaders: (headers, sentAt) => {
			stats.creditsSeen(headers.creditsRemaining);
			input.onAnswer(headers, sentAt);
		},
		...(fleet ? { onTask: fleet.taskStarted, beforeSend: fleet.slotBelowLimit, maySend: fleet.maySend } : {}),
		log,
		...logger,
	});
	// A sitemap's charges are booked as the crawl's (crawl-hook.ts), never journalled as a target's. Its
	// retry after a charged failure is judged as a target's is (the budget, the breaker, the paid-failures
	// stop), by the target runner once it exists (`sitemapRetry.judge`).
	const sitemapRetry: { judge: FetchTargetDeps["chargedRetry"] } = { judge: undefined };
	const sitemapDeps: FetchTargetDeps = {
		...fetchDeps,
		onCharged: undefined,
		chargedRetry: (...args) => sitemapRetry.judge?.(...args) ?? true,
	};
	const fetchSitemap = serviceSitemapFetch({
		fetch: (id, params, spill) => fetchTarget(id, params, sitemapDeps, null, spill),
		reserve: (worstCase) => reserveOrStop(budget, stops, worstCase),
		budget,
		stop: (reason, message) => stops.stop(reason, message),
		outputFailed: (error) => stops.outputFailed(error),
	});
	return { outage, fetchDeps, fetchSitemap, sitemapRetry };
}

/**
 * The summary as the run ends: the breakers still open, a fleet worker's view of the whole fleet (its
 * session is complete when the fleet run is), and what adaptive mode and the forecast learnt.
 */
export function withOutcomes(
	summary: RunSummary,
	reason: string | null,
	parts: {
		readonly breakers: Breakers | null;
		readonly fleet: FleetCoordination | null;
		readonly economics: RunEconomics;
		readonly runId: string;
		/** The job's listed targets (null for a crawl or a discovery source, whose totals are the pages found). */
		readonly listed: number | null;
	},
): RunSummary {
	const open = parts.breakers?.open() ?? [];
	// Always said while the breaker is on, empty when none is open: "no breaker open" reads the same as one closed.
	if (parts.breakers) summary.breakers = open;
	// Parked targets have no record, and a crawl's or a discovery source's count has no total to miss them by:
	// the run is not complete, so `--resume` / `--continue` take them.
	if (open.some((breaker) => breaker.parked > 0)) summary.complete = false;
	const { fleet } = parts;
	const fleetSummary = fleet?.ended;
	if (fleet && fleetSummary) {
		summary.fleet = fleetSummary;
		summary.complete = reason === null && fleet.complete;
		// What is left is the fleet's to do, not this worker's share of the job's targets.
		summary.targets.remaining = summary.complete ? 0 : fleet.left;
		// The fleet run's targets, as a local run counts its own: those its loading left out are not among them.
		const leftOut = fleetLeftOut(fleet, parts.listed);
		if (leftOut !== null && summary.targets.total !== null) summary.targets.total -= leftOut;
	}
	parts.economics.finish(summary, parts.runId, summary.finished_at);
	return summary;
}

/**
 * The listed targets a complete fleet run's loading left out on purpose (fresh ones, or those
 * `--retry-failed` did not take): the job's listed targets less those the fleet run held. Null while the
 * run is not complete, or when the database could not say. A crawl or a discovery source (give `listed`
 * null: their runs hold pages the job does not list) gets the seeds the loading left out as fresh.
 */
export function fleetLeftOut(fleet: FleetCoordination, listed: number | null): number | null {
	const ended = fleet.ended;
	if (!fleet.complete || fleet.left === null || ended === null || ended.targets === null) return null;
	// A crawl's seeds are not counted ahead: what the loading left out as fresh is the database's count.
	if (listed === null) return fleet.fresh;
	const { queued, leased, done, failed, parked = 0 } = ended.targets;
	return Math.max(0, listed - (queued + leased + done + failed + parked));
}

/**
 * A second signal: the process ends now. Records are on disk already; the summary is written as it
 * stands (synchronous, about a millisecond), counting every fetch in flight as abandoned.
 */
export function lastWordOf(parts: {
	readonly runDir: string;
	readonly stops: StopController;
	readonly queue: TaskQueue;
	readonly stats: RunStatistics;
	readonly fill: Pick<FillStats, "summary"> | null;
	readonly summarize: (reason: string | null) => RunSummary;
}): () => string {
	const { runDir, stops, queue, stats, fill } = parts;
	return () => {
		if (stops.leaseLost) return "the job's lock was taken over: this run's folder is another process's now";
		const inFlight = queue.pending;
		stats.abandoned += inFlight;
		const summary = parts.summarize(stops.reason ?? "interrupted");
		if (fill) summary.extract = fill.summary();
		writeSummary(join(runDir, RUN_FILES.summary), summary);
		return `summary.json written in ${runDir}${inFlight > 0 ? `; ${inFlight === 1 ? "1 fetch" : `${inFlight} fetches`} in flight abandoned (the service may still charge them)` : ""}`;
	};
}

/**
 * The crawl, when the job has one — a fleet worker's hands links to the fleet's frontier
 * (fleet-crawl.ts), a local one keeps its own — and the page pool, when pages are read (extraction, a
 * crawl's links, CSS block signatures): worker threads bounded by `page_timeout`.
 */
export async function openCrawl(input: {
	readonly options: Pick<RunJobOptions, "crawlKeysInMemory" | "lockLease" | "logger">;
	readonly job: Job;
	readonly runDir: string;
	/** A resumed run's targets with records. */
	readonly done: Parameters<typeof crawlerFor>[2];
	readonly fleet: FleetCoordination | null;
	readonly peers: ShardPeers | null;
	readonly fetchSitemap: SitemapFetch;
	readonly stops: StopController;
	readonly queue: TaskQueue;
	readonly budget: CreditBudget;
	readonly log: Logger;
}) {
	const { options, job, runDir, fleet, fetchSitemap, stops, budget, log } = input;
	const warn = (message: string) => {
		log.warn({ event: "crawl_bound" }, message);
		options.logger?.warn({ reason: "crawl_bound" }, message);
	};
	const isStopping = () => stops.stopping;
	const crawler =
		fleet && job.crawl
			? await fleetCrawlFor({ ...job, crawl: job.crawl }, fleet, { runDir, fetchSitemap, warn, isStopping })
			: crawlerFor(
					job,
					runDir,
					input.done,
					isStopping,
					fetchSitemap,
					options.crawlKeysInMemory,
					input.peers,
					warn,
					undefined,
					options.lockLease?.leaseMs,
				);
	// A resumed crawl's robots.txt and sitemap credits of earlier sessions are spent already.
	if (crawler) budget.commit(0, crawler.summary().sitemap_credits);
	stops.onStop(() => {
		input.queue.clear();
		// The crawl stops waiting for pages to settle: the ones just cleared never will.
		crawler?.wake();
	});
	const pagePool =
		job.extraction || crawler || (job.blockSignatures?.css.length ?? 0) > 0
			? await createPagePool({
					timeoutMs: job.pageTimeoutMs,
					onError: (error) =>
						log.warn({ event: "page_pool_error", error: error.message }, `page pool: ${error.message}`),
				})
			: null;
	return { crawler, pagePool };
}

/**
 * How often the journal gets a figures line, ms: a process killed before its summary loses at most this
 * much of its wall time, pauses and balance, and a week-long run's journal grows by a few MB a day.
 */
const FIGURES_EVERY_MS = 2000;

/**
 * The run starts: its first line in run.log, and the timer that syncs the results, the journal and the
 * crawl's files to disk every `syncIntervalMs` (a crash loses at most that much of what was written),
 * writing the run's figures into the journal first, at most every `FIGURES_EVERY_MS`.
 */
export function startRun(input: {
	readonly log: Logger;
	readonly opened: OpenedRun;
	readonly job: Job;
	readonly survey: { readonly total: number | null };
	readonly options: Pick<RunJobOptions, "concurrency" | "syncIntervalMs">;
	readonly stops: StopController;
	readonly sinks: readonly { sync(): void }[];
	readonly journal: Journal;
	readonly crawler: { sync(): void } | null;
	/** The run's figures at a time (`figuresOf`). */
	readonly figures: (nowMs: number) => RunFigures;
	readonly clock: Clock;
}): NodeJS.Timeout {
	const { opened, stops, sinks, journal, crawler, clock } = input;
	input.log.info(
		{
			event: "run_start",
			run_id: opened.runId,
			job: input.job.name,
			targets: input.survey.total,
			concurrency: input.options.concurrency,
			resumed: opened.prior !== null,
			done_before: opened.prior?.done.size ?? 0,
			pending_tasks: opened.resumeTasks.size,
		},
		"run started",
	);
	let figuresAt = Number.NEGATIVE_INFINITY;
	const syncTimer = setInterval(() => {
		stops.guardOutput(() => {
			const now = clock();
			if (now - figuresAt >= FIGURES_EVERY_MS) {
				figuresAt = now;
				journal.figures(input.figures(now), now);
			}
			for (const sink of sinks) sink.sync();
			journal.sync();
			crawler?.sync();
		});
	}, input.options.syncIntervalMs ?? 1000);
	syncTimer.unref();
	return syncTimer;
}

/** The run's figures that no record holds at a time: the earlier sessions' and this one's so far. */
export function figuresOf(input: {
	readonly stats: RunStatistics;
	readonly opened: OpenedRun;
	readonly gate: SendGate;
	readonly startedAt: number;
}): (nowMs: number) => RunFigures {
	const { stats, opened, gate, startedAt } = input;
	return (nowMs) =>
		runFigures(stats, opened.carried ?? undefined, { rateLimitPauses: gate.pauses, startedMs: startedAt, nowMs });
}

/** The run's summary as it stands, with a stop reason (null: not stopped). */
export function summarizerOf(input: {
	readonly stats: RunStatistics;
	readonly job: Job;
	readonly opened: OpenedRun;
	readonly survey: TargetSurvey;
	readonly gate: SendGate;
	readonly concurrency: QueueConcurrency;
	readonly queue: TaskQueue;
	readonly startedAt: number;
	readonly clock: Clock;
}): (reason: string | null) => RunSummary {
	const { stats, opened, gate, concurrency, queue, clock } = input;
	return (reason) =>
		buildSummary(stats, {
			job: input.job.name,
			runId: opened.runId,
			resumed: opened.prior !== null,
			stopReason: reason,
			survey: input.survey,
			maxCredits: opened.maxCredits,
			rateLimitPauses: gate.pauses,
			concurrency: concurrency.reported(queue.concurrency),
			startedMs: input.startedAt,
			finishedMs: clock(),
			...(opened.carried ? { carried: opened.carried } : {}),
			superseded: opened.superseded,
		});
}
