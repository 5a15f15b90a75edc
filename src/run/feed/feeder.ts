import type { Logger } from "pino";
import type { ScraperClient } from "../../api/index.js";
import { type Clock, errorMessage, type Sleep, type TaskQueue, type UrlKeys } from "../../common/index.js";
import type { Crawler } from "../../crawl/index.js";
import { isOwnShard, type Job, type ScanWitness, streamTargetBatches, type Target } from "../../job/index.js";
import { OutputError } from "../../output/index.js";
import type { CreditBudget } from "../flow/credit-budget.js";
import { createHostGate, type HostGate } from "../flow/host-gate.js";
import type { StopController } from "../flow/stop-controller.js";
import type { IdSet } from "../records/compact-id-set.js";
import { unshardedJob } from "../target/crawl-hook.js";
import type { TargetRunner } from "../target/target-runner.js";
import { type DiscoveredTargets, discoverTargets, withDiscovered } from "./discovery-sources.js";

/**
 * The run's host gate when the job asks for one — `per_host_concurrency`, `per_host_delay`, or a crawl's
 * robots.txt `Crawl-delay` — else null (targets go straight to the queue).
 */
export function hostGateFor(
	job: Job,
	queue: TaskQueue,
	crawler: Crawler | null,
	clock: Clock,
	sleep: Sleep,
	/** Aborted as the run stops: parked targets and hosts' delays are not waited for. */
	stopped: AbortSignal,
) {
	if (!job.perHostConcurrency && !job.perHostDelayMs && job.crawl?.robots !== "obey") return null;
	return createHostGate(queue.add, {
		...(job.perHostConcurrency ? { limit: job.perHostConcurrency } : {}),
		delayOf: (host) => Math.max(job.perHostDelayMs ?? 0, crawler?.crawlDelayMs(host) ?? 0),
		clock,
		sleep,
		stopped,
	});
}

/** Until the queue is empty and no target waits parked for its host (host-gate.ts: they wait outside the queue). */
export async function whenIdle(queue: TaskQueue, hosts: HostGate | null): Promise<void> {
	for (;;) {
		await queue.onIdle();
		if (hosts === null || hosts.parked === 0) return;
		await hosts.parkedBelow(hosts.parked);
	}
}

export interface FeedParts {
	readonly job: Job;
	readonly client: ScraperClient;
	readonly runDir: string;
	readonly queue: TaskQueue;
	readonly hosts: HostGate | null;
	readonly crawler: Crawler | null;
	/** Targets with a record from earlier sessions: skipped. */
	readonly done: IdSet | null;
	readonly stops: StopController;
	readonly budget: CreditBudget;
	/** The duplicate check of the rows read (spills to the run folder past its memory share). */
	readonly feedKeys: UrlKeys;
	/** What the validation pass saw of the sources: with it, `feedKeys` is not needed for a list. */
	readonly witness: ScanWitness | null;
	/** The run's concurrency: the queue is refilled in batches of it. */
	readonly concurrency: number;
	readonly runner: TargetRunner;
	/** run.log's logger. */
	readonly log: Logger;
	/** The terminal's. */
	readonly logger?: Logger;
}

export interface FeedOutcome {
	/** What the job's `map:` / `search:` sources found (null without them). */
	readonly discovered: DiscoveredTargets | null;
	/** Why the feed ended early (a source changed under the run), or null. */
	readonly feedError: string | null;
}

/**
 * Read the job's targets (sources, discovered URLs, a crawl's frontier) into the queue with
 * back-pressure: never more than a few targets per slot waiting, nor more than a bounded number parked
 * for a busy host, so memory stays flat however long the source. Returns once every target is queued
 * or the run stops; the queue's work may still be running.
 */
export async function feedTargets(parts: FeedParts): Promise<FeedOutcome> {
	const { job, queue, hosts, crawler, done, stops, runner, concurrency } = parts;
	/** Targets parked for a busy host at most (then the feeder waits): memory stays bounded on a one-host crawl. */
	const parkLimit = Math.max(1024, concurrency * 8);
	let discovered: DiscoveredTargets | null = null;
	try {
		// map: / search: sources are asked once per run (kept in the run folder); their credits count in the budget.
		discovered = await discoverTargets(job, parts.client, parts.runDir, stops.inflight);
		if (discovered) parts.budget.commit(0, discovered.credits);
		const targets = withDiscovered(
			// A sharded crawl reads every shard's seeds (its scope and seed options); it fetches only its own.
			streamTargetBatches(
				crawler && job.shard ? unshardedJob(job) : job,
				// The rows the validation pass vouched for need no key set of their own (scan-witness.ts).
				!crawler && parts.witness
					? { witness: parts.witness }
					: { seenKeys: { add: (high, low) => parts.feedKeys.see(high, low) } },
			),
			discovered,
			// A sharded crawl takes every discovered URL as a seed (scope, options) and fetches its own; a list, its own only.
			crawler ? undefined : (url) => isOwnShard(job, url),
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
				if (stops.stopping) break feed;
				if (done?.has(target.id)) {
					crawler?.settled(target);
					continue;
				}
				// A fresh crawled page: its links (when wanted) from its stored page, nothing fetched, no record.
				if (crawler && target.crawl?.fresh) {
					queue.add(crawled(target, () => runner.followStoredPage(target)));
					continue;
				}
				// Refill in batches: wait only when twice the concurrency is queued, then until half of it
				// has started, so the wait (a promise and a listener) is paid once per batch, not per target.
				if (queue.size >= concurrency * 2) await queue.onSizeLessThan(concurrency);
				if (hosts && hosts.parked >= parkLimit) await hosts.parkedBelow(parkLimit / 2);
				if (stops.stopping) break feed;
				const work = crawler ? crawled(target, () => runner.run(target)) : () => runner.run(target);
				if (hosts) hosts.submit(target.url, work);
				else queue.add(work);
			}
		}
		return { discovered, feedError: null };
	} catch (error) {
		// A file of the run the feed writes (a crawl's frontier or inboxes, the discovery journal) on a full
		// disk: the run stops as for any output failure (exit 5), not as a source that changed.
		if (error instanceof OutputError) {
			stops.outputFailed(error);
			return { discovered, feedError: null };
		}
		// A source changed under the run (unreadable, or a bad row): stop feeding; the targets read
		// before the bad row were valid, so they still run.
		const feedError = errorMessage(error);
		parts.log.warn({ event: "invalid_source" }, feedError);
		parts.logger?.warn({ reason: "invalid_source" }, `no more targets: ${feedError}`);
		return { discovered, feedError };
	} finally {
		parts.feedKeys.close();
	}
}
