import { basename, join } from "node:path";
import type { Logger } from "pino";
import type { BodySpill, ScraperClient } from "../../api/index.js";
import type { BrowserServiceAccess } from "../../browser/index.js";
import {
	type Clock,
	checkOptions,
	createUrlKeys,
	errorMessage,
	type LastWords,
	LIBRARY_WORDS,
	type OptionKinds,
	type OptionWords,
	sleep as realSleep,
	type Sleep,
	systemClock,
} from "../../common/index.js";
import type { Crawler } from "../../crawl/index.js";
import type { JobHistory } from "../../history/index.js";
import type { Job } from "../../job/index.js";
import {
	createRecordScrubber,
	createRunLog,
	newRunId,
	type PageStore,
	type ResultRecord,
	RUN_FILES,
	writeSandboxRun,
} from "../../output/index.js";
import { createRunEconomics } from "../economics/run-economics.js";
import { type FeedOutcome, feedTargets, hostGateFor, whenIdle } from "../feed/feeder.js";
import type { TargetSurvey } from "../feed/survey-targets.js";
import { createFleetCoordination, type FleetCoordination, type FleetWorkerSetup } from "../fleet/fleet-worker.js";
import { createCreditBudget } from "../flow/credit-budget.js";
import type { HostGate } from "../flow/host-gate.js";
import { checkScraperHealth, type HealthReading } from "../flow/scraper-health.js";
import { createStopController } from "../flow/stop-controller.js";
import { lockJobOutput, warnIfTookOver } from "../locks/job-lock.js";
import type { LockLease, RunLock } from "../locks/run-lock.js";
import { createRecordWriter } from "../records/record-writer.js";
import { createProgressReporter, type ProgressSnapshot } from "../records/run-progress.js";
import { createSessionLimiter } from "../target/browser-target.js";
import { createPaidAnswers } from "../target/paid-answers.js";
import { createTargetRunner } from "../target/target-runner.js";
import type { TaskPollOptions } from "../target/task-poller.js";
import { finishRun, type RunJobResult } from "./finish-run.js";
import { noteConfigFile, type OpenedRun, openRun, type RunSelection, readRunSelection } from "./open-run.js";
import {
	createFetching,
	createFlowControl,
	createRunBreakers,
	figuresOf,
	fleetLeftOut,
	lastWordOf,
	openCrawl,
	openRecordParts,
	startRun,
	summarizerOf,
	withOutcomes,
} from "./run-parts.js";

export type { StopReason } from "../flow/stop-controller.js";
export type { ProgressSnapshot } from "../records/run-progress.js";
export type { RunJobResult } from "./finish-run.js";

/**
 * Page bodies past this size leave memory on their way in when nothing reads them (see `bodySpill`):
 * a fetch then holds at most about this much, whatever `max_body_mb` allows.
 */
const SPILL_AFTER_BYTES = 1024 * 1024;
/** The run folder's directory of spilled row keys (removed when the feed ends; stale ones at the next start). */
const FEED_KEYS_DIR = "target-keys";
/** Row keys the duplicate check holds in memory: ~4 MB; a million rows spill three times. */
const FEED_KEYS_IN_MEMORY = 262_144;
/** A fleet worker's feed (its claims) ends with no discovery total and no source error of its own. */
const FLEET_FED: FeedOutcome = { discovered: null, feedError: null };

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
	/**
	 * fdatasync interval for results and journal, milliseconds; the journal's figures line (what a resume
	 * of a killed process carries) goes with the first sync two seconds after the last. @default 1000
	 */
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
	/** `--sandbox`'s demo site address: the run folder says so (`sandbox.json`), for the commands printed for it later. */
	readonly sandboxDemoSite?: string;
	/** The `--config` file the service's keys came from (absolute): run.json keeps it for `merge`'s commands. */
	readonly configFile?: string;
	/**
	 * How the entry point spells the options its messages name (stop messages, refusals): the CLI passes
	 * its flags. @default LIBRARY_WORDS
	 * @internal
	 */
	readonly words?: OptionWords;
}

/** Each option of `runJob` and the kind of value it takes: the names a call may use, from its interface. */
const RUN_JOB_OPTIONS = {
	job: "object",
	survey: "object",
	client: "object",
	concurrency: "number",
	adaptiveConcurrency: "boolean",
	outRoot: "string",
	maxCredits: "number",
	selection: "object",
	resumeDir: "string",
	force: "boolean",
	repair: "boolean",
	crawlKeysInMemory: "number",
	feedKeysInMemory: "number",
	signal: "signal",
	gracePeriodMs: "number",
	taskPoll: "object",
	secrets: "any",
	logger: "logger",
	onProgress: "function",
	history: "object",
	outageTimeoutMs: "number",
	clock: "function",
	sleep: "function",
	random: "function",
	syncIntervalMs: "number",
	method: "string",
	browser: "object",
	lock: "object",
	lockLease: "object",
	runId: "string",
	lastWords: "object",
	fleet: "object",
	runsDir: "string",
	sandboxDemoSite: "string",
	configFile: "string",
	words: "object",
} as const satisfies OptionKinds<RunJobOptions>;

/**
 * Run one job to the end, or until stopped. Records are written as targets finish, each exactly once;
 * the journal makes the run resumable at any byte. Throws only for set-up problems (lock, resume), and
 * `UsageError` for an option it does not have (a misspelt name), before anything is sent.
 */
export async function runJob(options: RunJobOptions): Promise<RunJobResult> {
	checkOptions("runJob", options, RUN_JOB_OPTIONS);
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
			runsDir: options.runsDir,
			maxCredits: options.maxCredits,
			selection: options.selection,
			words: options.words ?? LIBRARY_WORDS,
		});
		if (options.sandboxDemoSite !== undefined) writeSandboxRun(opened.runDir, options.sandboxDemoSite);
		if (options.configFile !== undefined) noteConfigFile(opened.runDir, options.configFile);
		return await execute({ options, job, survey, opened, health, lock, startedAt, clock, sleep, random });
	} finally {
		if (!options.lock) lock.release();
	}
}

/** What every part of a run is built from: the caller's options and the run folder opened for it. */
interface RunContext {
	readonly options: RunJobOptions;
	readonly job: Job;
	readonly survey: TargetSurvey;
	readonly opened: OpenedRun;
	readonly health: HealthReading;
	readonly lock: RunLock;
	readonly startedAt: number;
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly random: () => number;
}

/** The opened run's parts, built in order (each side needs the one before), fed, and concluded. */
async function execute(context: RunContext): Promise<RunJobResult> {
	const records = await openRecordSide(context);
	try {
		const fetching = await openFetchSide(context, records);
		const running = openRunnerSide(context, records, fetching);
		const fed = await feedRun(context, records, fetching, running);
		return await concludeRun(context, { records, fetching, running }, fed);
	} catch (error) {
		// An error no stop handles ends the run: run.log keeps its last lines and the error, which say why,
		// unless the folder is another process's now (the lease lost: nothing more is written there).
		const mine = !records.stops.leaseLost;
		if (mine) records.log.error({ event: "run_failed", error: errorMessage(error) }, "the run ended on an error");
		records.runLog.close({ flush: mine });
		throw error;
	}
}

/** run.log, the fleet's coordination (or none), the record files, the budget and the one stop controller. */
async function openRecordSide(context: RunContext) {
	const { options, job, opened, lock, startedAt, clock, sleep } = context;
	const runLog = createRunLog(join(opened.runDir, RUN_FILES.log), options.secrets);
	const log = runLog.log;
	// The fleet's coordination parts (fleet-worker.ts) in place of the local ones, chosen here once.
	const fleet = options.fleet
		? createFleetCoordination(options.fleet, { job, clock, sleep, log, tracksChanges: true })
		: null;
	// A fleet worker's records are the fleet's (PostgreSQL): the job's local store does not see them.
	const history = options.fleet ? null : (options.history ?? null);
	const records = await openRecordParts({
		job,
		opened,
		history,
		previous: fleet?.previousRecords ?? null,
		startedAt,
	});
	const budget = fleet?.budget ?? createCreditBudget(opened.maxCredits, records.stats.creditsUsed);
	// Signals, the lease, outages, the budget, failed writes: one stop reason, one grace period.
	const stops = createStopController({
		signal: options.signal,
		gracePeriodMs: options.gracePeriodMs,
		lock,
		log,
		logger: options.logger,
		words: options.words ?? LIBRARY_WORDS,
	});
	return { runLog, log, fleet, history, records, budget, stops };
}
type RecordSide = Awaited<ReturnType<typeof openRecordSide>>;

/** Concurrency, the send gate, fetching with its outage watch, and the crawler with its page pool. */
async function openFetchSide(context: RunContext, side: RecordSide) {
	const { options, job, opened, health, clock, sleep, random } = context;
	const { log, fleet, records, budget, stops } = side;
	const { runDir, runId, prior } = opened;
	const flow = createFlowControl({
		job,
		runDir,
		runId,
		concurrency: options.concurrency,
		adaptiveConcurrency: options.adaptiveConcurrency === true,
		lockLease: options.lockLease,
		health,
		freeSlots: async () => (await options.client.health(options.signal)).headers.rateLimitRemaining,
		fleet,
		clock,
		sleep,
		log,
		logger: options.logger,
	});
	const { queue } = flow;
	const fetching = createFetching({
		options,
		job,
		gate: flow.gate,
		stops,
		journal: records.journal,
		stats: records.stats,
		budget,
		fleet,
		onAnswer: (headers, sentAt) => {
			flow.answered(headers);
			fleet?.rateLimitSeen(headers.rateLimitLimit, sentAt);
		},
		clock,
		sleep,
		random,
		log,
	});
	const crawl = await openCrawl({
		options,
		job,
		runDir,
		done: prior?.done ?? null,
		fleet,
		peers: flow.peers,
		fetchSitemap: fetching.fetchSitemap,
		stops,
		queue,
		budget,
		log,
	});
	return { ...flow, ...fetching, ...crawl };
}
type FetchSide = Awaited<ReturnType<typeof openFetchSide>>;

/** After each record written: the fleet's copy, and a crawl's count of pages. */
function recordWritten(
	fleet: Pick<FleetCoordination, "written"> | null,
	crawler: Pick<Crawler, "pageRecorded"> | null,
) {
	return (record: ResultRecord) => {
		fleet?.written(record);
		crawler?.pageRecorded();
	};
}

/** The run's start in its files, its progress, the one record path, and the target runner over them all. */
function openRunnerSide(context: RunContext, side: RecordSide, fetching: FetchSide) {
	const { options, job, survey, opened, startedAt, clock, sleep, random } = context;
	const { log, fleet, history, records, budget, stops } = side;
	const { crawler, pagePool, queue, gate, concurrency, waitingTurn } = fetching;
	const { runDir, runId } = opened;
	const { journal, sinks, fill, pages, stats } = records;
	const figures = figuresOf({ stats, opened, gate, startedAt });
	const syncTimer = startRun({ log, opened, job, survey, options, stops, sinks, journal, crawler, figures, clock });
	const progress = createProgressReporter({
		stats,
		// A crawl's total is the pages it knows of (seeds and links found, up to max_pages): it grows.
		total: crawler ? () => knownPages(crawler.summary()) : () => survey.total,
		inFlight: () => queue.pending,
		gate,
		waitingTurn,
		clock,
		onProgress: options.onProgress,
		superseded: opened.superseded,
	});
	/** The one record path (record-writer.ts): no record or journal line reaches a file by another route. */
	const write = createRecordWriter({
		...records,
		scrub: createRecordScrubber(options.secrets),
		history: records.heldBack ? null : history,
		onWritten: progress.report,
		fence: stops,
		...(fleet ? { targetFence: fleet.mayWrite } : {}),
		// A crawl's record is a page's (its robots.txt and sitemap fetches and redirects' landings have none).
		...(fleet || crawler ? { onRecord: recordWritten(fleet, crawler) } : {}),
	});
	const browser = options.browser ?? null;
	const breakers = createRunBreakers(
		job,
		fleet,
		clock,
		{ log, logger: options.logger, words: stops.words },
		opened.carried?.openBreakers,
		(change) => stops.guardOutput(() => records.journal.breaker(change)),
	);
	// `mode: adaptive` and the forecast: what the job's store remembers of modes and costs (run-economics.ts).
	// A `--retry-failed` run's costs are its failures': they do not stand for the job's next full run.
	const retry = (options.selection ?? readRunSelection(opened.runDir))?.retry_failed ?? false;
	const economics = createRunEconomics(job, history, {
		logger: options.logger,
		retryingFailures: retry !== false,
		shared: fleet?.sharedModes,
		carried: opened.resumeModes,
		...(fleet ? {} : { onLearned: (mode) => stops.guardOutput(() => records.journal.learned(mode)) }),
	});
	const runner = createTargetRunner({
		job,
		stops,
		budget,
		journal,
		write,
		stats,
		fetchDeps: fetching.fetchDeps,
		crawler,
		pagePool,
		content: { mode: job.output.content, pages },
		resumeTasks: fleet?.tasks ?? opened.resumeTasks,
		resumePaid: opened.resumePaid,
		resumeCharged: opened.resumeCharged,
		resumeClimbs: opened.resumeClimbs,
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
	fetching.sitemapRetry.judge = runner.chargedRetry;
	const summarize = summarizerOf({ stats, job, opened, survey, gate, concurrency, queue, startedAt, clock });
	const summarizeAll = (reason: string | null) =>
		withOutcomes(summarize(reason), reason, { breakers, fleet, economics, runId, listed: listedTargets(job, survey) });
	const summaryWord = lastWordOf({ runDir, stops, queue, stats, fill, summarize });
	// Then run.log's last second, batched: a second Ctrl-C's exit would drop it (all of a short run's log).
	const lastWord = () => {
		const phrase = summaryWord();
		side.runLog.flush();
		return phrase;
	};
	// The process's own hooks are the CLI's (bin.ts): a library caller that wants the same word passes `lastWords`.
	const removeLastWord = options.lastWords?.add(lastWord) ?? (() => undefined);
	return { syncTimer, progress, browser, runner, summarizeAll, removeLastWord };
}
type RunnerSide = ReturnType<typeof openRunnerSide>;

/** Targets into the queue: a fleet worker's claims, or the job's sources read here (with their duplicate check). */
async function feedRun(
	context: RunContext,
	side: RecordSide,
	fetching: FetchSide,
	running: RunnerSide,
): Promise<FeedOutcome & { readonly hosts: HostGate | null }> {
	const { options, job, survey, opened, clock, sleep } = context;
	const { log, fleet, budget, stops } = side;
	const { queue, crawler } = fetching;
	const { runner } = running;
	if (fleet) {
		// A fleet's politeness is in its claims (each host's clock is a row): no gate of this worker's own.
		await fleet.feed({ queue, runner, stops, concurrency: options.concurrency });
		return { ...FLEET_FED, hosts: null };
	}
	const hosts = hostGateFor(job, queue, crawler, clock, sleep, stops.stopped);
	const fed = await feedTargets({
		job,
		client: options.client,
		runDir: opened.runDir,
		queue,
		hosts,
		crawler,
		done: opened.prior?.done ?? null,
		stops,
		budget,
		// The duplicate check of the rows read: past `feedKeysInMemory` keys, older ones go to sorted files
		// in the run folder with ~1.5 bytes a row left in memory (at a million rows: ~5 MB, not 16).
		feedKeys: createUrlKeys({
			dir: join(opened.runDir, FEED_KEYS_DIR),
			inMemory: options.feedKeysInMemory ?? FEED_KEYS_IN_MEMORY,
		}),
		witness: survey.witness ?? null,
		concurrency: options.concurrency,
		runner,
		log,
		logger: options.logger,
	});
	return { ...fed, hosts };
}

/** The job's listed targets: null for a crawl or a discovery source, whose runs count the pages they find. */
function listedTargets(job: Job, survey: TargetSurvey): number | null {
	return job.crawl || (job.discovery?.length ?? 0) > 0 ? null : survey.total;
}

/** Wait for what is in flight, close every part, and write the run's outcome (finish-run.ts). */
async function concludeRun(
	context: RunContext,
	parts: { readonly records: RecordSide; readonly fetching: FetchSide; readonly running: RunnerSide },
	fed: FeedOutcome & { readonly hosts: HostGate | null },
): Promise<RunJobResult> {
	const { options, job, survey, opened } = context;
	const { log, fleet, history, records, budget, stops, runLog } = parts.records;
	const { queue, crawler, pagePool, outage, peers, failures } = parts.fetching;
	const { syncTimer, progress, browser, summarizeAll, removeLastWord } = parts.running;
	const { discovered, feedError } = fed;
	await whenIdle(queue, fed.hosts);
	await fleet?.close();
	outage.close();
	peers?.close();
	if (feedError !== null) stops.conclude("invalid_source", null);
	// Ctrl-C after the last target went out, its fetch finished in the grace period: nothing is left for
	// --resume, so the run is complete (not "INCOMPLETE, 0 remaining: finish with --resume", exit 130).
	// A crawl's or a discovery source's total is not the survey's: those keep the stop.
	const doneHere = records.stats.done - opened.superseded;
	if (!crawler && discovered === null && doneHere >= survey.total && stops.finishedDespiteSignal())
		log.info({ event: "run_complete_despite_stop" }, "every target has its record: the run is complete");
	stops.close();
	clearInterval(syncTimer);
	progress.close();
	const result = await finishRun({
		...records,
		runDir: opened.runDir,
		stops,
		summarize: summarizeAll,
		failures,
		pagePool,
		crawler,
		discovered,
		deselected: fleet ? (fleetLeftOut(fleet, listedTargets(job, survey)) ?? 0) : survey.deselected,
		// A budget stop's hint books every target left at the dearest the job holds, not only at the
		// dearest the run reached: listed cheap targets first would otherwise ask a resume for too little.
		budget: { dearest: Math.max(budget.dearest, survey.dearest) },
		freshness: job.freshnessMs > 0,
		history,
		browser,
		filesClosed: removeLastWord,
		runLog,
		logger: options.logger,
	});
	// Complete is known once the summary is: a crawl's last snapshot then drops the pages with no record.
	if (crawler) progress.finish(result.summary.complete);
	return result;
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
