import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import type { Logger } from "pino";
import type { SavedItemsClient, ScraperAccess, ScraperClient } from "../api/index.js";
import { CLI_WORDS, jsonlLines, type LastWords, type OptionWords, UsageError } from "../common/index.js";
import { endWorker } from "../fleet/index.js";
import { type FailedCrawledPage, type JobHistory, openJobHistory, type TargetHistory } from "../history/index.js";
import {
	type Job,
	jobUsesBrowser,
	type RetryCrawl,
	shardBalanceWarning,
	shardSuffix,
	type TargetCounts,
	withLiteralTargetIds,
} from "../job/index.js";
import { jobOutputDir, newRunId, parseRecordLine } from "../output/index.js";
import {
	type FleetJoinOptions,
	joinFleetRun,
	type LockLease,
	notifyRunEnd,
	type ProgressSnapshot,
	type RunJobOptions,
	type RunJobResult,
	type RunSelection,
	readRunDigest,
	readRunSelection,
	resolveConcurrency,
	runHasLiteralTargetIds,
	runJob,
	runRedirectLandings,
	surveyTargets,
	type TargetSurvey,
	targetsDigest,
} from "../run/index.js";
import type { RunBrowserAccess } from "./browser-access.js";
import { pingHealthcheck } from "./healthcheck.js";
import { openMetricsFile, previousLastSuccess } from "./metrics-file.js";
import { pushOtlpMetrics } from "./otlp-push.js";
import { summarySucceeded } from "./run-exit-code.js";
import { applySnapshot, applySummary, initialMetrics, type RunMetrics } from "./run-metrics.js";
import type { PlannedRun } from "./run-plan.js";
import { checkSavedIds } from "./saved-ids.js";

/** What a run fetches with: learned once per command, shared by every job it runs. */
export interface RunServices {
	/** The scraper client a job fetches with, on at most its concurrency's sockets. */
	clientFor(connections: number): ScraperClient;
	/** The account's concurrency; null when only a scraper key is known (learned from the service). */
	readonly accountConcurrency: number | null;
	/** The account's scraper access record (credits), when it was read. */
	readonly access: ScraperAccess | null;
	/**
	 * Secrets scrubbed from every file and message of the run: the keys, the health ping URLs and the
	 * fleet URL's forms — all of them: the run adds none (`prepareRuns` computes the list once).
	 */
	readonly secrets: readonly string[];
	/** The browser service, when a job has `browser_session:` targets. */
	readonly browser: RunBrowserAccess | undefined;
	/** The account's saved schemes, configs and storage: the ids a job names are checked against them. */
	readonly savedItems?: SavedItemsClient;
	/** The fleet's database (`run --fleet`, SCRAPEJOB_FLEET_URL): each job runs as one worker of its fleet run. */
	readonly fleet?: { readonly url: string; readonly schema?: string };
	/** `--sandbox`'s demo site address (its runs' folders say they were sandbox runs). */
	readonly sandboxDemoSite?: string;
	/** The `--config` file the keys came from (absolute): kept in run.json for the commands printed later. */
	readonly configFile?: string;
}

/**
 * The choices of one `scrapejob run` (its flags) or one `runJobFile` call (its options): one plan,
 * one code path (docs/guides/library.md).
 */
export interface RunChoices {
	/** Root folder of results: `<outRoot>/<job>/<run-id>/` (absolute). */
	readonly outRoot: string;
	/** How the entry point spells the options its messages name. @default CLI_WORDS */
	readonly words?: OptionWords;
	/** In-flight fetches (never above the account's limit). @default the job's `concurrency` */
	readonly concurrency?: number;
	/** Credit budget: a new run's, or a resumed run's replacement (above what it spent). @default the job's, or the one the resumed run kept */
	readonly maxCredits?: number;
	/** Skip targets whose latest ok record is younger, ms (0 fetches all). @default the job's `freshness` */
	readonly freshnessMs?: number;
	/** Only the targets whose latest record failed: across the job's runs (`true`), or in this run id. */
	readonly retryFailed?: boolean | string;
	/** With a resume: accept changed targets (they run as new). */
	readonly force?: boolean;
	/** With a resume: move lines of results.jsonl that are not records aside. */
	readonly repair?: boolean;
	/** After a stop, how long in-flight fetches may finish, ms. @default 30,000 */
	readonly gracePeriodMs?: number;
	/** First wait between task polls, ms (grows to 10×). */
	readonly taskPollMs?: number;
	/** How long the service may be down before the run stops, ms. @default the job's `outage_timeout` */
	readonly outageTimeoutMs?: number;
	/** POST the summary there at the end (the job's `notify:` otherwise). */
	readonly notifyUrl?: string;
	/**
	 * `--accept RUN_ID`: promote that run of the job, held back by its data contract, to "latest" before
	 * this run starts (its records go into the job's history; the later finish still wins per target).
	 */
	readonly accept?: string;
	/**
	 * `run --fleet`: work as one worker of the job's fleet run in PostgreSQL (docs/guides/fleet.md). The
	 * concurrency, budget and run name are the fleet's; `url` is a secret.
	 */
	readonly fleet?: Pick<FleetJoinOptions, "url" | "schema" | "runName" | "leaseMs">;
	/**
	 * The job lock's lease and host name, by which the other shards' locks are judged too (resolved from
	 * SCRAPEJOB_LOCK_LEASE_MS and SCRAPEJOB_HOSTNAME by `prepareRuns`). @default 30 s, the machine's name
	 */
	readonly lockLease?: LockLease;
	/** Told whether `accept` promoted the run (false: it was promoted already). */
	onAccepted?(runId: string, promoted: boolean): void;
	/** A crawl's URL keys held in memory before older ones spill. */
	readonly crawlKeysInMemory?: number;
	/** Prometheus text file of the run's metrics, absolute (the job's `metrics:` otherwise). */
	readonly metricsFile?: string;
	/** Healthchecks.io-style ping URL (the job's `healthcheck:` otherwise); a secret, never logged. */
	readonly healthcheck?: string;
	/**
	 * Where the run's metrics are pushed over OTLP/HTTP at the end (from `OTEL_EXPORTER_OTLP_ENDPOINT`, read
	 * by `prepareRuns`). @default none: no push
	 */
	readonly otlpMetricsUrl?: string | null;
	/** How long one health ping may take, ms. @default 10,000 */
	readonly healthcheckTimeoutMs?: number;
	readonly signal: AbortSignal;
	/** Events (warnings, progress lines for cron). */
	readonly logger?: Logger;
	/** A second signal ends the process at once: the runner's last word writes summary.json as it stands. */
	readonly lastWords?: LastWords;
	/**
	 * Called once the targets are counted, before the first fetch: the job as selected (freshness,
	 * retry-failed), its survey and concurrency. Returns where progress snapshots go, if anywhere.
	 */
	onStart?(start: RunStart): ((snapshot: ProgressSnapshot) => void) | undefined;
	/**
	 * A notify hook or health ping that did not hear, or a metrics file that could not be written: said
	 * even when quiet (a monitor that never hears must not go unnoticed).
	 */
	onNotifyWarning?(message: string): void;
}

export interface RunStart {
	readonly job: Job;
	readonly survey: TargetSurvey;
	readonly concurrency: number;
	readonly adaptive: boolean;
	/** The run folder (it exists once the run has started). */
	readonly runDir: string;
}

/**
 * The run's outcome; `nothing_to_retry` when `--retry-failed` found no target whose latest record
 * failed (no run folder is made); `null` when a stop came while the targets were still being counted
 * (nothing was sent).
 */
export type PlannedRunOutcome =
	| (RunJobResult & { readonly job: Job; readonly skipped?: undefined })
	| { readonly skipped: "nothing_to_retry"; readonly job: Job }
	/** `--fleet` with the name of a fleet run that is complete: nothing to do, nothing sent. */
	| { readonly skipped: "fleet_complete"; readonly job: Job; readonly fleetRun: string }
	| null;

/**
 * One planned job, run the one way: the job's history (freshness, `--retry-failed`, change tracking),
 * the concurrency policy, the count, the run itself, and the notify hook. The lock is the caller's
 * (taken before anything was sent); so is every word printed.
 */
export async function runPlannedJob(
	plan: PlannedRun,
	services: RunServices,
	choices: RunChoices,
): Promise<PlannedRunOutcome> {
	const warn = (message: string) => {
		if (choices.onNotifyWarning) choices.onNotifyWarning(message);
		else choices.logger?.warn(message);
	};
	const healthcheck = choices.healthcheck ?? plan.job.healthcheck;
	const ping = async (kind: "start" | "success" | "fail") => {
		if (healthcheck === undefined) return;
		const problem = await pingHealthcheck(healthcheck, kind, choices.healthcheckTimeoutMs);
		if (problem !== null) warn(problem);
	};
	await ping("start");
	const monitor: RunMonitor = { metrics: null, file: null };
	let outcome: PlannedRunOutcome = null;
	try {
		// Incremental runs: the job's history decides what is fresh and what failed last time.
		const history = openJobHistory(jobOutputDir(choices.outRoot, plan.job.name));
		// A store rebuilt from the run folders (missing, damaged, older layout) says so: nothing is lost.
		for (const warning of history.warnings) choices.logger?.warn({ job: plan.job.name }, warning);
		try {
			if (choices.accept !== undefined) choices.onAccepted?.(choices.accept, history.accept(choices.accept));
			outcome = await runWithHistory(plan, services, choices, history, monitor, warn);
		} finally {
			history.close();
		}
	} finally {
		// Whatever happened (a throw included), the exit code says whether it succeeded; so do the monitors.
		// Nothing to retry is exit 0 (nothing was sent); a stop while counting (null) is not.
		const succeeded = outcome !== null && (outcome.skipped !== undefined || runSucceeded(outcome));
		await finishMonitors(monitor, outcome, succeeded, choices, warn);
		await ping(succeeded ? "success" : "fail");
	}
	return outcome;
}

/**
 * Whether the run ends with exit code 0: it ran to its end (no stop), every target has an ok record,
 * and the required extract fields are filled enough (`summarySucceeded`, the rule `runExitCode` reads).
 */
export function runSucceeded(result: Pick<RunJobResult, "summary" | "stopReason">): boolean {
	return result.stopReason === null && summarySucceeded(result.summary);
}

/** The run's metrics (once the run has started) and the file they are written to. */
interface RunMonitor {
	metrics: RunMetrics | null;
	file: ReturnType<typeof openMetricsFile> | null;
	path?: string;
}

/** The job's in-flight limit: the account's, or the job's (or `--concurrency`) when lower, with its warnings said. */
function concurrencyOf(job: Job, services: RunServices, choices: RunChoices) {
	const wanted = choices.concurrency ?? (job.concurrency === "auto" ? null : job.concurrency);
	const limits = resolveConcurrency({ accountLimit: services.accountConcurrency, wanted });
	for (const warning of limits.warnings) choices.logger?.warn({ job: job.name, limit: limits.ceiling }, warning);
	return limits;
}

/** The run is about to start: the caller's display and the metrics, fed from one progress callback. */
function startProgress(
	monitor: RunMonitor,
	start: RunStart,
	choices: RunChoices,
	warn: (message: string) => void,
	worker = "",
): ((snapshot: ProgressSnapshot) => void) | undefined {
	const shown = choices.onStart?.(start);
	const measured = startMonitors(monitor, start.job, start.concurrency, choices, warn, worker);
	if (shown && measured)
		return (snapshot: ProgressSnapshot) => {
			measured(snapshot);
			shown(snapshot);
		};
	return shown ?? measured;
}

function startMonitors(
	monitor: RunMonitor,
	job: Job,
	concurrency: number,
	choices: RunChoices,
	warn: (message: string) => void,
	worker = "",
): ((snapshot: ProgressSnapshot) => void) | undefined {
	const path = choices.metricsFile ?? job.metricsFile;
	const wantsOtlp = Boolean(choices.otlpMetricsUrl);
	if (path === undefined && !wantsOtlp) return undefined;
	const shard = job.shard ? `${job.shard.index}/${job.shard.count}` : "";
	// Until this run succeeds, the last success stays the one the file recorded (alerts read its age).
	const lastSuccess = path === undefined ? 0 : previousLastSuccess(path, job.name, shard);
	const metrics = initialMetrics(job.name, shard, concurrency, lastSuccess, worker);
	const startedMs = Date.now();
	monitor.metrics = metrics;
	if (path !== undefined) {
		monitor.path = path;
		monitor.file = openMetricsFile({
			path,
			metrics,
			warn,
			refresh: () => {
				metrics.durationSeconds = (Date.now() - startedMs) / 1000;
			},
		});
	}
	return (snapshot) => applySnapshot(metrics, snapshot, Date.now() - startedMs);
}

async function finishMonitors(
	monitor: RunMonitor,
	outcome: PlannedRunOutcome,
	succeeded: boolean,
	choices: RunChoices,
	warn: (message: string) => void,
): Promise<void> {
	const { metrics } = monitor;
	if (!metrics) return;
	const summary = outcome && outcome.skipped === undefined ? outcome.summary : null;
	if (summary) applySummary(metrics, summary);
	metrics.inflight = 0;
	if (succeeded) metrics.lastSuccessSeconds = (summary ? Date.parse(summary.finished_at) : Date.now()) / 1000;
	monitor.file?.close();
	await monitor.file?.write();
	const url = choices.otlpMetricsUrl;
	if (url) {
		const problem = await pushOtlpMetrics(url, metrics);
		if (problem !== null) warn(problem);
	}
}

async function runWithHistory(
	plan: PlannedRun,
	services: RunServices,
	choices: RunChoices,
	history: JobHistory,
	monitor: RunMonitor,
	warn: (message: string) => void,
): Promise<PlannedRunOutcome> {
	if (choices.fleet) return runFleetWorker(plan, services, { ...choices, fleet: choices.fleet }, monitor, warn);
	plan = await continuedOrNew(plan, choices.force === true, warn, choices.words ?? CLI_WORDS);
	// A run started before ids came from each URL's identity is resumed with the ids its records and journal hold.
	if (plan.resumeDir && runHasLiteralTargetIds(plan.resumeDir))
		Object.assign(plan, { job: withLiteralTargetIds(plan.job) });
	const { job, counts, selection, nothingToRetry } = await selectTargets(plan, history, choices);
	if (services.savedItems) await checkSavedIds(job, services.savedItems, choices.signal);
	const limits = concurrencyOf(job, services, choices);
	const concurrency = limits.ceiling;

	const survey = await surveyTargets(job, counts, choices.signal);
	// A stop while validating or counting: nothing was sent, so no empty run folder is left behind.
	if (choices.signal.aborted) return null;
	// Shards split by host that cannot balance (one big host, fewer hosts than shards): say so, and how.
	const imbalance = shardBalanceWarning(survey.hosts, job.shard, job.shardBy);
	if (imbalance) choices.logger?.warn({ job: job.name, shard_balance: true }, `${job.name}: ${imbalance}`);
	// Retrying failures when none failed: nothing to send, and no empty run folder to leave behind.
	const retrying = selection.retry_failed !== false;
	if (retrying && (job.crawl ? nothingToRetry : survey.total === 0)) return { skipped: "nothing_to_retry", job };
	const runDir = plan.resumeDir ?? join(jobOutputDir(choices.outRoot, job.name), plan.runId);
	const onProgress = startProgress(
		monitor,
		{ job, survey, concurrency, adaptive: limits.adaptive, runDir },
		choices,
		warn,
	);
	const result = await runJob({
		...runJobOptionsOf({ plan, services, choices, job, survey, concurrency, onProgress }),
		adaptiveConcurrency: limits.adaptive,
		maxCredits: choices.maxCredits,
		...(plan.resumeDir ? { resumeDir: plan.resumeDir } : { runId: plan.runId, selection }),
		force: choices.force === true,
		repair: choices.repair === true,
		history,
		crawlKeysInMemory: choices.crawlKeysInMemory,
	});
	const notify = choices.notifyUrl ? { ...job.notify, url: choices.notifyUrl } : job.notify;
	if (notify) {
		await notifyRunEnd(notify, result.summary, result.runDir, { warn });
	}
	return { ...result, job };
}

/**
 * What a local run and a fleet worker pass `runJob` alike, from the run's plan, services and choices.
 * Options the caller left out stay undefined: `runJob` reads each with its default.
 */
function runJobOptionsOf(input: {
	readonly plan: PlannedRun;
	readonly services: RunServices;
	readonly choices: RunChoices;
	readonly job: Job;
	readonly survey: TargetSurvey;
	readonly concurrency: number;
	readonly onProgress: RunJobOptions["onProgress"] | null;
}): RunJobOptions {
	const { plan, services, choices, job, concurrency } = input;
	const { taskPollMs } = choices;
	return {
		job,
		survey: input.survey,
		client: services.clientFor(concurrency),
		concurrency,
		outRoot: choices.outRoot,
		lock: plan.lock,
		lockLease: choices.lockLease,
		lastWords: choices.lastWords,
		signal: choices.signal,
		gracePeriodMs: choices.gracePeriodMs,
		taskPoll: taskPollMs === undefined ? undefined : { initialIntervalMs: taskPollMs, maxIntervalMs: taskPollMs * 10 },
		outageTimeoutMs: choices.outageTimeoutMs,
		secrets: services.secrets,
		browser: services.browser && jobUsesBrowser(job) ? services.browser : undefined,
		logger: choices.logger,
		onProgress: input.onProgress ?? undefined,
		words: choices.words ?? CLI_WORDS,
		...(services.sandboxDemoSite !== undefined ? { sandboxDemoSite: services.sandboxDemoSite } : {}),
		...(services.configFile !== undefined ? { configFile: services.configFile } : {}),
	};
}

/**
 * One worker of the job's fleet run: join it (or open it, loading the targets once for every worker),
 * then the one run core with the fleet's coordination parts. Its run folder is its own, under
 * `<job>/fleet/`; the fleet's records are in PostgreSQL.
 */
async function runFleetWorker(
	plan: PlannedRun,
	services: RunServices,
	choices: RunChoices & { readonly fleet: NonNullable<RunChoices["fleet"]> },
	monitor: RunMonitor,
	warn: (message: string) => void,
): Promise<PlannedRunOutcome> {
	const { job } = plan;
	checkFleetJob(job, choices);
	if (services.savedItems) await checkSavedIds(job, services.savedItems, choices.signal);
	const limits = concurrencyOf(job, services, choices);
	const concurrency = limits.ceiling;
	const survey = await surveyTargets(job, plan.counts, choices.signal);
	if (choices.signal.aborted) return null;
	const retryFailed = choices.retryFailed === true;
	const freshnessMs = choices.freshnessMs ?? job.freshnessMs;
	const joined = await joinFleetRun(job, {
		...choices.fleet,
		concurrency,
		freshnessMs,
		retryFailed,
		words: choices.words ?? CLI_WORDS,
		...(choices.maxCredits !== undefined ? { maxCredits: choices.maxCredits } : {}),
	});
	if (joined.outcome === "complete") return { skipped: "fleet_complete", job, fleetRun: joined.run.runName };
	const { setup } = joined;
	try {
		choices.logger?.info(
			{ job: job.name, fleet_run: setup.run.runName, worker: setup.worker.id, joined: joined.outcome },
			`${joined.outcome === "opened" ? "opened" : "joined"} fleet run ${setup.run.runName} as worker ${setup.worker.id}`,
		);
		const runsDir = join(jobOutputDir(choices.outRoot, job.name), "fleet");
		const runDir = join(runsDir, plan.runId);
		const start = { job, survey, concurrency, adaptive: limits.adaptive, runDir };
		const onProgress = startProgress(monitor, start, choices, warn, setup.worker.id);
		// The summary counts what the loading left out as fresh when freshness chose it, as a local run's does.
		const selected = { ...job, freshnessMs: retryFailed ? 0 : freshnessMs };
		const result = await runJob({
			...runJobOptionsOf({ plan, services, choices, job: selected, survey, concurrency, onProgress }),
			runsDir,
			runId: plan.runId,
			fleet: setup,
		});
		const notify = choices.notifyUrl ? { ...job.notify, url: choices.notifyUrl } : job.notify;
		if (notify) await notifyRunEnd(notify, result.summary, result.runDir, { warn });
		return { ...result, job };
	} finally {
		// A worker whose run failed before its coordination closed (which ends it) leaves the live ones too.
		await endWorker(setup.fleet, setup.worker).catch(() => undefined);
		await setup.fleet.close().catch(() => undefined);
	}
}

/**
 * What a fleet run does not do (yet), refused before anything is sent with what to do instead: the
 * contract reads the job's local store, which a fleet's records never enter; `map:` and `search:`
 * sources are the runner's feed, which a fleet's loader does not run. (Freshness and
 * `--retry-failed` are the fleet's own: a new fleet run selects its targets from the job's fleet records.)
 */
export function checkFleetJob(job: Job, choices: Pick<RunChoices, "retryFailed" | "accept" | "words">): void {
	const words = choices.words ?? CLI_WORDS;
	const instead = `run the job without ${words.fleet} for that`;
	// `--retry-failed` alone reads the fleet's records; a run id names a local run folder.
	if (typeof choices.retryFailed === "string")
		throw new UsageError(
			`${words.retryFailed} ${choices.retryFailed} names a local run: with ${words.fleet}, ${words.retryFailed} takes no run id`,
		);
	if (job.contract)
		throw new UsageError(`${job.name}: data contracts hold runs back in the job's local store: ${instead}`);
	// Every worker would ask (and pay) the calls, and the fleet's targets are loaded once from the job's list.
	if (job.discovery?.length)
		throw new UsageError(
			`${job.name}: map: and search: sources are not run by a fleet (its workers would each pay the calls, and fetch nothing they found): ${instead}, or list the URLs they found in a file source`,
		);
	if (job.shard) throw new UsageError(`${words.shard} splits a job between processes itself: not with ${words.fleet}`);
	if (choices.accept !== undefined) throw new UsageError(`${words.accept} promotes a local run: ${instead}`);
}

/**
 * `--continue` on a run whose job's targets changed since it started (a nightly list rewritten): the
 * old run is left unfinished and a new one starts, rather than an error every retry would repeat.
 * With `--force` the old run goes on, its changed targets run as new (as `--resume --force`).
 */
async function continuedOrNew(
	plan: PlannedRun,
	force: boolean,
	warn: (message: string) => void,
	words: OptionWords,
): Promise<PlannedRun> {
	if (!plan.continued || !plan.resumeDir || force) return plan;
	const started = readRunDigest(plan.resumeDir);
	if (started !== null && started === (await targetsDigest(plan.job))) return plan;
	const runId = `${newRunId()}${plan.job.shard ? shardSuffix(plan.job.shard) : ""}`;
	warn(
		`${plan.job.name}: the job's targets changed since run ${plan.runId} started: ${words.continueOn} starts a new run (${runId}) instead`,
	);
	// The lock stays the plan's: it is the job's (and shard's), not the run's.
	return Object.assign(plan, { resumeDir: undefined, runId });
}

/**
 * Freshness and `--retry-failed` as a selection on the job's targets, so counting, the summary's
 * totals and the run itself all see the same targets. A resumed run goes on with the selection it
 * was started with (kept in its run.json) unless told otherwise, and its own records never make a
 * target "fresh" or "not failed": a target this run already did is one of its targets (resume skips it).
 */
/** `--retry-failed RUN_ID` naming no run of the job, in the entry point's words. */
function noRetryRun(choices: Pick<RunChoices, "words" | "outRoot">, retry: string, jobName: string): UsageError {
	return new UsageError(
		`${(choices.words ?? CLI_WORDS).retryFailed}: no run ${retry} of job ${jobName} under ${choices.outRoot}`,
	);
}

async function selectTargets(
	plan: Pick<PlannedRun, "job" | "counts" | "resumeDir">,
	history: JobHistory,
	choices: Pick<RunChoices, "retryFailed" | "freshnessMs" | "outRoot" | "words">,
): Promise<{ job: Job; counts: TargetCounts | null; selection: RunSelection; nothingToRetry?: boolean }> {
	const kept = plan.resumeDir ? readRunSelection(plan.resumeDir) : null;
	const retry = choices.retryFailed ?? kept?.retry_failed ?? false;
	const retrying = retry !== false;
	// Retrying failures is explicit: every target whose latest record failed runs, however recent its
	// last ok record (and the run's deselected targets are then the not-failed ones, none of them "fresh").
	const freshnessMs = retrying ? 0 : (choices.freshnessMs ?? kept?.freshness_ms ?? plan.job.freshnessMs);
	const selection: RunSelection = { retry_failed: retry, freshness_ms: freshnessMs };
	if (freshnessMs <= 0 && !retrying) return { job: plan.job, counts: plan.counts, selection };
	const now = Date.now();
	const thisRun = plan.resumeDir ? basename(plan.resumeDir) : null;
	const doneHere = (entry: { okRun: string | null } | null | undefined) => thisRun !== null && entry?.okRun === thisRun;
	let failedInRun: FailedRecords | null = null;
	if (typeof retry === "string") {
		// A run id names a folder of this job, nothing else: no path may lead out of output/<job>/.
		if (!/^[\w.-]+$/.test(retry) || retry.startsWith("."))
			throw new UsageError(
				`${(choices.words ?? CLI_WORDS).retryFailed}: ${JSON.stringify(retry)} is not a run id (a folder name under output/<job>/)`,
			);
		const runDir = join(jobOutputDir(choices.outRoot, plan.job.name), retry);
		if (!existsSync(join(runDir, "results.jsonl"))) throw noRetryRun(choices, retry, plan.job.name);
		failedInRun = failedRecords(join(runDir, "results.jsonl"));
	}
	if (plan.job.crawl && retrying) {
		// A crawl retries its failed seeds and its failed discovered pages, at their recorded depth and parent.
		const pages = () => failedInRun?.pages ?? history.failedCrawledPages();
		const retryCrawl: RetryCrawl = {
			failed: (target) => (failedInRun ? failedInRun.ids.has(target.id) : history.get(target.id)?.latest === "failed"),
			fetchedOk: (id) => history.get(id)?.latest === "ok",
			pages,
		};
		// A resume goes on whatever is left failed: the links its first session found are still to fetch.
		let nothingToRetry = !plan.resumeDir;
		for (const _page of pages()) {
			nothingToRetry = false;
			break;
		}
		return { job: { ...plan.job, freshnessMs, retryCrawl }, counts: null, selection, nothingToRetry };
	}
	if (plan.job.crawl && !retrying) {
		// A crawl goes on below a fresh page: it is not fetched, its links are read from its stored page.
		const jobDir = jobOutputDir(choices.outRoot, plan.job.name);
		// Each earlier run's redirect landings, read once, from the run that fetched the page.
		const landingsOf = new Map<string, Map<string, string>>();
		const landing = (run: string, id: string) => {
			let landings = landingsOf.get(run);
			if (!landings) {
				landings = runRedirectLandings(join(jobDir, run));
				landingsOf.set(run, landings);
			}
			return landings.get(id) ?? null;
		};
		const freshPage = (target: { id: string }) => {
			const entry = history.get(target.id);
			if (!isFresh(entry, now, freshnessMs) || doneHere(entry)) return null;
			const record = entry.okRun === null ? null : history.readOkRecord(entry);
			const path = record?.content_path ? join(jobDir, entry.okRun!, record.content_path) : null;
			if (path === null || !existsSync(path)) return { path: null };
			return { path, landing: landing(entry.okRun!, target.id) };
		};
		return { job: { ...plan.job, freshnessMs, freshPage }, counts: null, selection };
	}
	const select = (target: { id: string }) => {
		const entry = history.get(target.id);
		if (doneHere(entry)) return true;
		if (retrying) {
			if (failedInRun ? !failedInRun.ids.has(target.id) : entry?.latest !== "failed") return false;
		}
		return !(freshnessMs > 0 && isFresh(entry, now, freshnessMs));
	};
	return { job: { ...plan.job, freshnessMs, select }, counts: null, selection };
}

/**
 * `run --dry-run`'s view of a new run's targets: the job with the selection the run would make from the
 * job's store (freshness, `--retry-failed`), so its count, estimate and forecast are the run's. A crawl is
 * surveyed whole (its pages are found as it runs). `close` once the targets are read: the selection
 * looks each one up in the store.
 */
export async function previewSelection(
	job: Job,
	choices: Pick<RunChoices, "retryFailed" | "freshnessMs" | "outRoot" | "words">,
): Promise<{ job: Job; leftOut: "fresh" | "not failed" | null; warnings: readonly string[]; close(): void }> {
	const retry = choices.retryFailed ?? false;
	const retrying = retry !== false;
	const freshnessMs = retrying ? 0 : (choices.freshnessMs ?? job.freshnessMs);
	const whole = { job, leftOut: null, warnings: [], close: () => {} };
	if (job.crawl || (!retrying && freshnessMs <= 0)) return whole;
	const leftOut = retrying ? "not failed" : "fresh";
	const jobDir = jobOutputDir(choices.outRoot, job.name);
	if (!existsSync(jobDir)) {
		if (typeof retry === "string") throw noRetryRun(choices, retry, job.name);
		// No run yet: nothing is fresh, nothing failed.
		return retrying ? { ...whole, job: { ...job, select: () => false }, leftOut } : whole;
	}
	const history = openJobHistory(jobDir);
	try {
		const selected = await selectTargets({ job, counts: null, resumeDir: undefined }, history, choices);
		return { job: selected.job, leftOut, warnings: history.warnings, close: () => history.close() };
	} catch (error) {
		history.close();
		throw error;
	}
}

/**
 * Fresh: the target's latest record is ok and younger than the window. A failure after a recent ok
 * record makes it stale: the failure is the newer news about the page.
 */
function isFresh(entry: TargetHistory | null | undefined, now: number, freshnessMs: number): entry is TargetHistory {
	return entry?.latest === "ok" && entry.okAt !== null && now - entry.okAt < freshnessMs;
}

/** A run's failed records: their ids, and of those the crawled pages (seeds included) with where they were found. */
interface FailedRecords {
	readonly ids: Set<string>;
	readonly pages: FailedCrawledPage[];
}

/** A run's failed records, read line by line (a results.jsonl can be larger than a string may be). */
function failedRecords(path: string): FailedRecords {
	const ids = new Set<string>();
	const pages: FailedCrawledPage[] = [];
	for (const { text } of jsonlLines(path)) {
		// Parsed by the one record validator, never matched as text (a page may quote `"status":"failed"`).
		const record = parseRecordLine(text);
		if (record?.status !== "failed") continue;
		ids.add(record.id);
		if (typeof record.url === "string" && Number.isSafeInteger(record.depth))
			pages.push({
				id: record.id,
				url: record.url,
				depth: record.depth as number,
				parent: typeof record.parent === "string" ? record.parent : null,
			});
	}
	return { ids, pages };
}
