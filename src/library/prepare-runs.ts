import { resolve } from "node:path";
import { CLI_WORDS, type OptionWords, UsageError } from "../common/index.js";
import { resolveRunSettings } from "../config/index.js";
import { fleetUrlSecrets } from "../fleet/index.js";
import { type Job, jobUsesBrowser, parseShard, type TargetCounts } from "../job/index.js";
import { connectBrowser } from "./browser-access.js";
import {
	checkAccept,
	lockPlannedRuns,
	type PlannedRun,
	planFleetRuns,
	planRuns,
	releasePlannedRuns,
} from "./run-plan.js";
import { checkFleetJob, type RunChoices, type RunServices } from "./run-planned.js";
import { connectScraper, NoScraperAccessError, savedItemsFor } from "./scraper-access.js";
import { type ConnectContext, noKeyError, type ServiceConnection } from "./service-connection.js";

/** A job as loaded for a run, with its targets counted while validating (null: to be counted). */
export interface LoadedRunJob {
	readonly job: Job;
	readonly counts: TargetCounts | null;
}

/**
 * The choices of one run, as `scrapejob run`'s flags and `runJobFile`'s options both name them: one
 * set of words for `prepareRuns`, whichever entry point called it.
 */
export interface RunOptions {
	/** Root folder of results, relative to the context's `cwd` (`--out`). @default "output" */
	readonly out?: string;
	/** `--resume [RUN_ID]`: the latest incomplete run (`true`) or that run. */
	readonly resume?: boolean | string;
	/** `--continue`: the newest run when it is unfinished, else a new one. */
	readonly continue?: boolean;
	/** `--force`: with a resume, accept changed targets. */
	readonly force?: boolean;
	/** `--repair`: with a resume, move lines of results.jsonl that are not records aside. */
	readonly repair?: boolean;
	/** `--shard I/N` (`auto/N` reads the job index from the environment). */
	readonly shard?: string;
	/** `--max-credits`. */
	readonly maxCredits?: number;
	/** `--concurrency`. */
	readonly concurrency?: number;
	/** `--freshness`, ms. */
	readonly freshnessMs?: number;
	/** `--retry-failed [RUN_ID]`. */
	readonly retryFailed?: boolean | string;
	/** `--accept RUN_ID`. */
	readonly accept?: string;
	/** `--notify URL`. */
	readonly notify?: string;
	/** `--metrics FILE`, relative to the context's `cwd`. */
	readonly metrics?: string;
	/** `--healthcheck URL` (a secret). */
	readonly healthcheck?: string;
	/** `--task-poll-ms`. */
	readonly taskPollMs?: number;
	/** `--grace-period`, ms. */
	readonly gracePeriodMs?: number;
	/** `--outage-timeout`, ms. */
	readonly outageTimeoutMs?: number;
	/** `--fleet-run NAME`: the fleet run to join or open (needs the fleet's URL in the connection's config). */
	readonly fleetRun?: string;
}

/** What a run needs besides its choices: where it runs, and what it is told on the way. */
export interface PrepareContext extends ConnectContext {
	/** "job: run X is already complete; nothing to resume." — each job left out, as it is decided. */
	onNote?(sentence: string): void;
	/**
	 * The planned runs' locks are taken (before anything is sent): `tookOver` says which were taken over
	 * from a run that died. The locks are the caller's to release (`releasePlannedRuns`) once the runs end.
	 */
	onLocked?(planned: readonly PlannedRun[], tookOver: readonly string[]): void;
}

/** The runs to start or continue, locked, and what they run with. */
export interface PreparedRuns {
	/** Each job's run, its lock held. */
	readonly planned: PlannedRun[];
	/** The scraper (and browser) clients, the account's limits, the secrets to scrub, the fleet. */
	readonly services: RunServices;
	/** The run's choices for `runPlannedJob`; the caller adds its own callbacks (progress, logger). */
	readonly choices: RunChoices;
}

/** `shard` (`I/N`, `auto/N`) applied to each job; the loader's counts were for all targets, so they are dropped. */
export function shardJobs(
	jobs: readonly LoadedRunJob[],
	shard: string | undefined,
	env: NodeJS.ProcessEnv,
	words: OptionWords = CLI_WORDS,
): LoadedRunJob[] {
	if (shard === undefined) return [...jobs];
	const spec = parseShard(shard, env, words.shard);
	if (typeof spec === "string") throw new UsageError(spec);
	return jobs.map(({ job }) => ({ job: { ...job, shard: spec }, counts: null }));
}

/**
 * The one set-up before a run, for `scrapejob run` and `runJobFile` alike: which run each job starts or
 * continues (or, with the fleet's URL in `connection`'s config, which fleet run it works on), the
 * `--accept` check and the locks — all before the first request, so a refusal has sent nothing —, then
 * the keys, the scraper (and browser) access, the secrets scrubbed from every file and message, the
 * services and the choices. Returns null when every job was left out (each said through `onNote`).
 * A throw after the locks were taken gives them back first.
 */
export async function prepareRuns(
	loaded: readonly LoadedRunJob[],
	options: RunOptions,
	connection: ServiceConnection,
	context: PrepareContext,
): Promise<PreparedRuns | null> {
	const { config } = connection;
	const settings = resolveRunSettings(context.env);
	const fleetUrl = config.fleetUrl;
	const words = context.words ?? CLI_WORDS;
	if (fleetUrl === undefined && options.fleetRun !== undefined)
		throw new UsageError(`${words.fleetRun} names a fleet run: it needs ${words.fleetUrl} (or SCRAPEJOB_FLEET_URL)`);
	if (fleetUrl !== undefined) refuseFleetOptions(options, words);
	const jobs = shardJobs(loaded, options.shard, context.env, words);
	if (fleetUrl !== undefined)
		for (const { job } of jobs)
			checkFleetJob(job, { words, ...(options.retryFailed !== undefined ? { retryFailed: options.retryFailed } : {}) });
	const outRoot = resolve(context.cwd, options.out ?? "output");
	const plans =
		fleetUrl !== undefined
			? { planned: planFleetRuns(jobs), notes: [] }
			: planRuns(jobs, outRoot, options.resume, options.repair === true, options.continue === true);
	for (const note of plans.notes) context.onNote?.(note);
	const { planned } = plans;
	if (planned.length === 0) return null;
	checkAccept(planned, outRoot, options.accept, words);
	const tookOver = lockPlannedRuns(planned, outRoot, settings.lockLease, words);
	try {
		context.onLocked?.(planned, tookOver);
		// A sandbox run's demo site port, for its --resume (a fleet's runs are not in the results root).
		if (fleetUrl === undefined) connection.rememberDemoSite();
		if (!config.accountKey && !config.scraperKey) throw noKeyError(words);
		const scraper = await connectScraper(context, connection);
		if (scraper.access && scraper.access.concurrency < 1) {
			throw new NoScraperAccessError("the account's scraper concurrency is 0; nothing was sent");
		}
		// Jobs with browser_session: targets need the browser service: no access stops here, before any fetch.
		const browser = jobs.some(({ job }) => jobUsesBrowser(job)) ? await connectBrowser(context, connection) : undefined;
		// Health ping URLs and the fleet's database are secrets like the keys (anyone holding one can ping, or connect).
		const secrets = [
			config.accountKey,
			config.scraperKey,
			scraper.secret,
			browser?.key,
			options.healthcheck,
			...jobs.map(({ job }) => job.healthcheck),
			...(fleetUrl === undefined ? [] : fleetUrlSecrets(fleetUrl)),
		].filter((secret): secret is string => Boolean(secret));
		const fleet = fleetUrl === undefined ? undefined : { url: fleetUrl, schema: config.fleetSchema };
		const services: RunServices = {
			clientFor: scraper.clientFor,
			accountConcurrency: scraper.access?.concurrency ?? null,
			access: scraper.access,
			secrets,
			browser,
			savedItems: savedItemsFor(scraper),
			fleet,
			...(connection.demoSiteUrl !== undefined ? { sandboxDemoSite: connection.demoSiteUrl } : {}),
			...(connection.configFile !== undefined ? { configFile: connection.configFile } : {}),
		};
		const choices: RunChoices = {
			outRoot,
			words,
			signal: context.signal,
			otlpMetricsUrl: settings.otlpMetricsUrl,
			concurrency: options.concurrency,
			maxCredits: options.maxCredits,
			freshnessMs: options.freshnessMs,
			retryFailed: options.retryFailed,
			force: options.force,
			repair: options.repair,
			accept: options.accept,
			notifyUrl: options.notify,
			metricsFile: options.metrics === undefined ? undefined : resolve(context.cwd, options.metrics),
			healthcheck: options.healthcheck,
			taskPollMs: options.taskPollMs,
			gracePeriodMs: options.gracePeriodMs,
			outageTimeoutMs: options.outageTimeoutMs,
			crawlKeysInMemory: settings.crawlKeysInMemory,
			lockLease: settings.lockLease,
			// The fleet a worker joins: its database, the run's name, and the lease (as the job lock's).
			fleet: fleet && { ...fleet, runName: options.fleetRun, leaseMs: settings.fleetLeaseMs },
		};
		return { planned, services, choices };
	} catch (error) {
		releasePlannedRuns(planned);
		throw error;
	}
}

/** Choices that pick a local run folder, which a fleet worker does not: refused before anything is sent. */
function refuseFleetOptions(options: RunOptions, words: OptionWords): void {
	const refused = [
		options.resume !== undefined ? `${words.resume} (use ${words.continueOn}: the fleet run goes on by itself)` : null,
		options.repair ? words.repair : null,
		options.shard !== undefined ? `${words.shard} (the fleet splits the work itself)` : null,
		options.accept !== undefined ? words.accept : null,
	].filter((flag): flag is string => flag !== null);
	if (refused.length > 0) throw new UsageError(`not with ${words.fleet}: ${refused.join(", ")}`);
}
