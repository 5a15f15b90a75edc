import { createHash } from "node:crypto";
import { CLI_WORDS, canonicalJson, type OptionWords, UsageError } from "../../common/index.js";
import { normalizeUrl } from "../../crawl/index.js";
import {
	connectFleet,
	DEFAULT_FLEET_SCHEMA,
	type Fleet,
	type FleetRun,
	type FleetTargetInput,
	type FleetTargetSource,
	failedCrawlPages,
	failedTargetIds,
	freshTargetIds,
	LOAD_BATCH,
	loadingTakeOver,
	openFleetRun,
	readFleetDomainModes,
} from "../../fleet/index.js";
import { type Job, streamTargetBatches, type Target } from "../../job/index.js";
import { usesAdaptive } from "../economics/run-economics.js";
import { asCrawlSeed } from "./fleet-crawl.js";
import { pagesRoom } from "./fleet-frontier.js";
import { plansOf, toFleetInput, toSitemapTask } from "./fleet-targets.js";
import type { FleetWorkerSetup } from "./fleet-worker.js";

/** How long a claim lasts without renewal unless told otherwise (a worker renews a third of the way in). */
export const DEFAULT_FLEET_LEASE_MS = 30_000;

export interface FleetJoinOptions {
	/** `postgres://…`: a secret, never shown as given. */
	readonly url: string;
	/** @default "scrapejob" */
	readonly schema?: string;
	/** `--fleet-run NAME`: join or open the run of that name; without it the newest unfinished one, or a new one. */
	readonly runName?: string;
	/** The key's limit this worker sees: a new fleet run's in-flight ceiling. */
	readonly concurrency: number;
	/** `--max-credits`: a new run's budget, or a raised budget for the run joined. @default the job's */
	readonly maxCredits?: number;
	/** @default 30,000 */
	readonly leaseMs?: number;
	/** A new run leaves out targets whose newest record in the job's fleet runs is ok and younger, ms. @default 0 */
	readonly freshnessMs?: number;
	/** `--retry-failed`: a new run holds only the targets whose newest record in the job's fleet runs failed. */
	readonly retryFailed?: boolean;
	/** How the entry point spells the options a refusal names. @default CLI_WORDS */
	readonly words?: OptionWords;
}

export type FleetJoin =
	| { readonly outcome: "complete"; readonly run: FleetRun }
	| { readonly outcome: "opened" | "joined"; readonly setup: FleetWorkerSetup };

/**
 * Connect to the fleet's database and join the job's fleet run, or open it (loading the job's targets
 * into the frontier, once, whoever opens it). The connection is the caller's to close (`setup.fleet`),
 * except for a complete run, where nothing is left to do and it is closed here.
 */
export async function joinFleetRun(job: Job, options: FleetJoinOptions): Promise<FleetJoin> {
	// A statement unanswered for a lease is as good as refused: the worker's claims are lapsing meanwhile, and
	// its outage handling (sent again while the lease lasts, then exit 3) takes over instead of a hang.
	const fleet = await connectFleet({
		url: options.url,
		schema: options.schema ?? DEFAULT_FLEET_SCHEMA,
		answerTimeoutMs: Math.max(options.leaseMs ?? DEFAULT_FLEET_LEASE_MS, 10_000),
	});
	try {
		const plans = plansOf(job);
		const opened = await openFleetRun(fleet, {
			jobName: job.name,
			...(options.runName !== undefined ? { runName: options.runName } : {}),
			source: () => fleetTargets(fleet, job, plans, options),
			maxCredits: options.maxCredits ?? job.maxCredits,
			concurrencyLimit: options.concurrency,
			hostDelayMs: job.perHostDelayMs ?? 0,
			hostConcurrency: job.perHostConcurrency ?? null,
			retryFailed: options.retryFailed === true,
			jobFingerprint: fleetFingerprint(job),
		});
		if (opened.outcome === "complete") {
			await fleet.close();
			return { outcome: "complete", run: opened.run };
		}
		// Joined, it would fetch the targets and options of the job file the run was opened with, not these
		// (a job file edited while its run goes on, pods of a Job started before and after the edit).
		if (opened.outcome === "changed")
			throw new UsageError(changedJobMessage(job, opened.run, options.runName, options.words ?? CLI_WORDS));
		const maxCredits = await budgetOf(
			fleet,
			opened.run.id,
			opened.outcome === "joined" ? options.maxCredits : undefined,
		);
		return {
			outcome: opened.outcome,
			setup: {
				fleet,
				run: opened.run,
				worker: opened.worker,
				maxCredits,
				leaseMs: options.leaseMs ?? DEFAULT_FLEET_LEASE_MS,
				freshnessMs: options.freshnessMs ?? 0,
				// `mode: adaptive` starts where the job's fleet runs left each domain (no worker's disk outlives it).
				...(usesAdaptive(job) ? { domainModes: await readFleetDomainModes(fleet, job.name) } : {}),
				// A run seen running (this worker loaded it, or joined it loaded) never goes back to loading:
				// nothing to ask the database after an empty claim.
				...(opened.run.state === "loading"
					? { takeOverLoading: loadingTakeOver(fleet, opened.worker, () => fleetTargets(fleet, job, plans, options)) }
					: {}),
			},
		};
	} catch (error) {
		await fleet.close().catch(() => undefined);
		throw error;
	}
}

/**
 * What a worker must share with the run's opener: the job's targets and their options, and for a crawl its
 * bounds and rules too (the frontier is one: workers with two max_pages or scopes would crawl neither).
 */
function fleetFingerprint(job: Job): string {
	const crawl = job.crawl;
	if (!crawl) return job.fingerprint;
	const rules = {
		targets: job.fingerprint,
		crawl: {
			max_depth: crawl.maxDepth,
			max_pages: crawl.maxPages,
			scope: crawl.scope,
			include: crawl.include.map((pattern) => pattern.source),
			exclude: crawl.exclude.map((pattern) => pattern.source),
			sitemaps: crawl.sitemaps,
			robots: crawl.robots,
		},
	};
	return createHash("sha256").update(canonicalJson(rules)).digest("hex");
}

function changedJobMessage(job: Job, run: FleetRun, named: string | undefined, words: OptionWords): string {
	const which =
		named === undefined
			? `the newest unfinished fleet run of job ${job.name}, ${run.runName},`
			: `fleet run ${run.runName}`;
	return `${which} was opened with another version of ${job.file}: its targets, their options or its crawl: settings differ from this file's, so this worker does not join it. Run the job file the run was opened with to finish it, or open a new run of this one with ${words.fleetRun} <another name> (nothing was sent)`;
}

/** The run's budget; a `--max-credits` given when joining replaces it (the fleet's budget is one). */
async function budgetOf(fleet: Fleet, runId: number, raised: number | undefined): Promise<number | null> {
	const [row] =
		raised === undefined
			? await fleet.query<{ max_credits: string | null }>("SELECT max_credits FROM runs WHERE id = $1", [runId])
			: await fleet.query<{ max_credits: string | null }>(
					"UPDATE runs SET max_credits = $2 WHERE id = $1 RETURNING max_credits",
					[runId, raised],
				);
	return row?.max_credits == null ? null : Number(row.max_credits);
}

/**
 * The job's targets as the frontier stores them, streamed: each keyed by its id (unique in the job),
 * fresh ones (`freshness`) left out and counted (`fresh`, for `fleet status`), or only the failed ones
 * kept (`--retry-failed`), a batch at a time.
 */
function fleetTargets(
	fleet: Fleet,
	job: Job,
	plans: ReturnType<typeof plansOf>,
	selection: Pick<FleetJoinOptions, "freshnessMs" | "retryFailed">,
): FleetTargetSource {
	const left = { fresh: 0 };
	const freshnessMs = selection.freshnessMs ?? 0;
	return {
		get fresh() {
			return left.fresh;
		},
		// The seeds enter within max_pages, fresh ones taking no room, as a local crawl hands them out.
		...(job.crawl?.maxPages !== undefined
			? {
					room: pagesRoom(
						job.crawl.maxPages,
						job.name,
						freshnessMs > 0 ? { freshnessMs, maxDepth: job.crawl.maxDepth } : null,
					),
				}
			: {}),
		[Symbol.asyncIterator]: () => selectedTargets(fleet, job, plans, selection, left)[Symbol.asyncIterator](),
	};
}

async function* selectedTargets(
	fleet: Fleet,
	job: Job,
	plans: ReturnType<typeof plansOf>,
	selection: Pick<FleetJoinOptions, "freshnessMs" | "retryFailed">,
	left: { fresh: number },
): AsyncIterable<FleetTargetInput> {
	// `sitemaps: true`: one task per seed origin (a retry reads none: the run that found the pages read them).
	const origins = job.crawl?.sitemaps && !selection.retryFailed ? new Set<string>() : null;
	/** A retried crawl's seed options: a failed page found from a seed no longer in the job is not retried. */
	const profiles = new Set<string>();
	for await (const batch of streamTargetBatches(job)) {
		if (origins) for (const task of sitemapTasks(batch, plans, origins)) yield task;
		if (job.crawl && selection.retryFailed) for (const seed of batch) profiles.add(asCrawlSeed(seed).crawl!.profile);
		const ids = batch.map((target) => target.id);
		// Retrying failures is explicit: every target whose newest record failed, however recent.
		const failed = selection.retryFailed ? await failedTargetIds(fleet, job.name, ids) : null;
		// A crawl's fresh seeds are loaded: the claim follows their kept links (their pages may not be fresh).
		const fresh =
			failed || job.crawl ? new Set<string>() : await freshTargetIds(fleet, job.name, ids, selection.freshnessMs ?? 0);
		left.fresh += fresh.size;
		for (const target of batch) {
			if (fresh.has(target.id) || (failed && !failed.has(target.id))) continue;
			// A crawl's seeds are its first pages, keyed by URL as the links it finds are (each URL once).
			if (job.crawl) yield toFleetInput(asCrawlSeed(target), plans, normalizeUrl(target.url) ?? target.id);
			else yield toFleetInput(target, plans, target.id);
		}
	}
	if (job.crawl && selection.retryFailed) yield* failedPages(fleet, job.name, job.crawl.maxDepth, profiles);
}

/**
 * `--retry-failed` of a crawl: its crawled pages whose newest fleet record failed, at the depth and with
 * the parent their run gave them (a failed seed among them is loaded once, as the seed it is).
 */
async function* failedPages(
	fleet: Fleet,
	jobName: string,
	maxDepth: number,
	profiles: ReadonlySet<string>,
): AsyncIterable<FleetTargetInput> {
	for (let after: string | null = null; ; ) {
		const pages = await failedCrawlPages(fleet, jobName, after, LOAD_BATCH);
		for (const page of pages) {
			const profile = (page.input as { crawl?: { profile?: unknown } } | null)?.crawl?.profile;
			if (page.depth > maxDepth || typeof profile !== "string" || !profiles.has(profile)) continue;
			yield { ...page };
		}
		if (pages.length < LOAD_BATCH) return;
		after = pages.at(-1)!.targetId;
	}
}

/** The sitemap tasks of a batch of seeds: one per origin not met before, with that origin's first seed. */
function* sitemapTasks(
	seeds: readonly Target[],
	plans: ReturnType<typeof plansOf>,
	origins: Set<string>,
): Iterable<FleetTargetInput> {
	for (const seed of seeds) {
		const url = normalizeUrl(seed.url);
		if (url === null) continue;
		const origin = new URL(url).origin;
		if (origins.has(origin)) continue;
		origins.add(origin);
		yield toSitemapTask(asCrawlSeed(seed), plans, origin);
	}
}
