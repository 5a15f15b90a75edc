import type { Logger } from "pino";
import { type Clock, errorMessage, type Sleep } from "../../common/index.js";
import type { SitemapFetch } from "../../crawl/index.js";
import {
	endWorker,
	type Fleet,
	type FleetDomainModeChanges,
	type FleetLimit,
	type FleetRun,
	type FleetWorker,
	fleetStatus,
	setHostPoliteness,
	storeTaskId,
	targetCounts,
} from "../../fleet/index.js";
import type { PreviousRecords } from "../../history/index.js";
import type { BreakerSpec, Job } from "../../job/index.js";
import type { FleetSummary, ResultRecord } from "../../output/index.js";
import type { BreakerEvents, Breakers } from "../economics/breaker.js";
import type { CreditBudget } from "../flow/credit-budget.js";
import { FleetAdaptive } from "./fleet-adaptive.js";
import { createFleetBreakers, type FleetBreakers } from "./fleet-breakers.js";
import { FleetBudget } from "./fleet-budget.js";
import { ClaimCarryOver } from "./fleet-carry-over.js";
import type { FleetCrawl } from "./fleet-crawl.js";
import { FleetFeed, type FleetFeedParts } from "./fleet-feed.js";
import { FleetFrontier } from "./fleet-frontier.js";
import { FleetLeases } from "./fleet-leases.js";
import { FleetLimitWatch } from "./fleet-limit.js";
import { sharedRobots } from "./fleet-robots.js";
import type { SitemapTaskReader } from "./fleet-sitemaps.js";
import { plansOf } from "./fleet-targets.js";

/** A worker's place in a fleet run, as `openFleetRun` gave it (docs/guides/fleet.md). */
export interface FleetWorkerSetup {
	readonly fleet: Fleet;
	readonly run: FleetRun;
	readonly worker: FleetWorker;
	/** The fleet run's budget (its `max_credits`), null without one. */
	readonly maxCredits: number | null;
	/** How long a claim and a slot last without renewal, ms. */
	readonly leaseMs: number;
	/**
	 * Take over loading the job's targets when the run's loader stopped renewing its role mid-load (true
	 * when this worker took it and loaded). Absent: nothing to take over.
	 */
	readonly takeOverLoading?: () => Promise<boolean>;
	/** `freshness` (the job's or `--freshness`), ms: a crawl's pages fresh in the job's fleet runs are not fetched. @default 0 */
	readonly freshnessMs?: number;
	/** What the job's fleet runs learned under `mode: adaptive`, read as it joined; absent for a job without it. */
	readonly domainModes?: FleetDomainModeChanges;
}

export interface FleetCoordinationDeps {
	readonly job: Job;
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly log: Logger;
	/** Change tracking is on: each claim brings the target's previous ok record. @default false */
	readonly tracksChanges?: boolean;
}

/**
 * The run core's coordination parts on PostgreSQL, for one worker of a fleet run: where targets come
 * from (claims with leases instead of the job's sources: fleet-feed.ts), the budget (reserved in the
 * database on the target's lease: fleet-budget.ts), the concurrency limit (the fleet's slots, one held per
 * target: fleet-limit.ts), politeness (claims honour each host's clock), the task journal (a task id
 * stored on the lease) and the fence (a record is written only while its lease is this worker's:
 * fleet-leases.ts). Callbacks the run core takes unbound (`mayWrite`, `written`, `taskStarted`,
 * `crawlDelay`) are arrow properties.
 */
export class FleetCoordination {
	/** The runner's budget: the fleet's `max_credits`, reserved on leases. */
	readonly budget: CreditBudget;
	/** Task ids an earlier holder stored: polled, not paid for again (the runner reads this map). */
	readonly tasks: Map<string, string>;
	/** Change tracking's previous records: the fleet's, as each target's claim brought them. */
	readonly previousRecords: PreviousRecords;
	/** `mode: adaptive`'s learning, shared with the fleet; null for a job without adaptive targets. */
	readonly sharedModes: FleetAdaptive | null;
	readonly #setup: FleetWorkerSetup;
	readonly #job: Job;
	readonly #sleep: Sleep;
	readonly #log: Logger;
	readonly #leases: FleetLeases;
	readonly #limits: FleetLimitWatch;
	readonly #frontier: FleetFrontier;
	readonly #feed: FleetFeed;
	/** The fleet's breakers (`breaker:`), when the job has them. */
	#breakers: FleetBreakers | null = null;
	/** Where the fleet stood when this worker ended (read once, at `close`). */
	#ended: FleetSummary | null = null;
	/** The fleet's targets left (queued, leased, parked) when this worker ended; null when unread. */
	#left: number | null = null;
	#fresh: number | null = null;

	constructor(setup: FleetWorkerSetup, deps: FleetCoordinationDeps) {
		const { fleet, worker, run, leaseMs } = setup;
		const { job, clock, sleep, log, tracksChanges = false } = deps;
		this.#setup = setup;
		this.#job = job;
		this.#sleep = sleep;
		this.#log = log;
		const plans = plansOf(job);
		const carryOver = new ClaimCarryOver(tracksChanges ? run.jobName : null);
		this.tasks = carryOver.tasks;
		this.previousRecords = carryOver.previousRecords;
		this.sharedModes = setup.domainModes ? new FleetAdaptive({ fleet, run, known: setup.domainModes, log }) : null;
		// `freshness` in a crawl: pages' links kept with their records, fresh pages followed from them.
		const freshness =
			job.crawl && (setup.freshnessMs ?? 0) > 0
				? { freshnessMs: setup.freshnessMs ?? 0, maxDepth: job.crawl.maxDepth }
				: null;
		const frontier = new FleetFrontier({
			fleet,
			run,
			maxPages: job.crawl?.maxPages,
			plans,
			log,
			keepLinks: freshness !== null,
			freshness,
		});
		this.#frontier = frontier;
		const leases = new FleetLeases({
			fleet,
			worker,
			leaseMs,
			clock,
			sleep,
			log,
			addLinks: (lease) => frontier.addLinks(lease),
			noteLanding: (lease) => frontier.noteLanding(lease),
			forget: (targetId) => carryOver.forget(targetId),
			slotFreed: () => this.#feed.wake(),
			ceiling: () => this.#limits.ceiling,
		});
		this.#leases = leases;
		const limits = new FleetLimitWatch({ fleet, runId: run.id, jobConcurrency: job.concurrency, leaseMs, clock, log });
		this.#limits = limits;
		const budget = new FleetBudget({
			fleet,
			runId: run.id,
			maxCredits: setup.maxCredits,
			leaseMs,
			clock,
			sleep,
			leases,
		});
		this.budget = budget;
		this.#feed = new FleetFeed({
			fleet,
			run,
			worker,
			leaseMs,
			clock,
			log,
			plans,
			leases,
			limits,
			budget,
			frontier,
			carryOver,
			paced: (job.perHostDelayMs ?? 0) > 0 || job.crawl?.robots === "obey",
			takeOverLoading: setup.takeOverLoading ?? (async () => false),
			freshness,
			maxPages: job.crawl?.maxPages,
			breakers: () => this.#breakers,
		});
	}

	/** Claim targets into the run's queue until the fleet run is complete or the worker stops. */
	feed(parts: FleetFeedParts): Promise<void> {
		return this.#feed.run(parts);
	}

	/** The job's breakers, one row per domain in the fleet: parked targets wait there, not in the queue. */
	useBreakers(spec: BreakerSpec, events: BreakerEvents): Breakers {
		const leases = this.#leases;
		const breakers = createFleetBreakers(
			spec,
			{
				fleet: this.#setup.fleet,
				runId: this.#setup.run.id,
				track: (targetId, write) => leases.track(targetId, write),
				park(targetId, domain, worstCase) {
					const target = leases.get(targetId);
					if (target) target.parked = { domain, worstCase };
				},
			},
			events,
		);
		this.#breakers = breakers;
		this.#limits.watchBreakers(breakers.seen);
		breakers.start();
		return breakers;
	}

	/** A crawl job: pages' links go to the fleet's frontier. */
	useCrawl(fleetCrawl: FleetCrawl, sitemapReader: SitemapTaskReader | null = null): void {
		this.#frontier.use(fleetCrawl, sitemapReader);
	}

	/** robots.txt once per fleet run, through `fetch` by the first worker to ask (fleet-robots.ts). */
	sharedRobots(fetch: SitemapFetch, isStopping: () => boolean): SitemapFetch {
		const { fleet, run, worker, leaseMs } = this.#setup;
		return sharedRobots({ fleet, runId: run.id, workerId: worker.id, leaseMs, sleep: this.#sleep }, fetch, isStopping);
	}

	/** The service's `X-RateLimit-Limit` on an answer to a fetch sent at `sentAt` (fleet-limit.ts). */
	rateLimitSeen(limit: number | undefined, sentAt: number): void {
		this.#limits.rateLimitSeen(limit, sentAt);
	}

	/** A host's robots.txt `Crawl-delay`: the fleet's delay for it (never below the job's). */
	readonly crawlDelay = (host: string, delayMs: number): void => {
		const { fleet, run } = this.#setup;
		const politeness = { delayMs, maxInFlight: this.#job.perHostConcurrency ?? null };
		this.#leases.track("", setHostPoliteness(fleet, run.id, host, politeness));
	};

	/** The record fence: asked right before a record's first byte and again after its last. */
	readonly mayWrite = (targetId: string): boolean => this.#leases.mayWrite(targetId);

	/** A record written locally: it goes to the fleet when its target settles. */
	readonly written = (record: ResultRecord): void => {
		const target = this.#leases.get(record.id);
		if (!target) return;
		target.record = record;
	};

	/** An async task's id: stored on the lease before it is waited on, so a successor polls it. */
	readonly taskStarted = (targetId: string, taskId: string): void => {
		const target = this.#leases.get(targetId);
		if (target) this.#leases.track(targetId, storeTaskId(this.#setup.fleet, target.lease, taskId));
	};

	/**
	 * Before each of a held target's fetches: a slot at or above a lowered limit is exchanged for one below
	 * it first (waiting for one to come free). A target keeps its slot across retries, so without this a
	 * retry after the service refused it (its limit lowered) kept the fleet above the service's limit.
	 * Undefined (nothing to wait for) in the usual case.
	 */
	readonly slotBelowLimit = (targetId: string, isStopping: () => boolean): Promise<void> | undefined =>
		this.#leases.slotBelow(targetId, isStopping);

	/**
	 * Right before a held target's request goes out: not once its lease is no longer surely this worker's.
	 * A worker stopped past its lease while it waited to retry would otherwise pay again for a target
	 * another worker took over. Fetches of no held target (robots.txt, sitemap files) go on.
	 */
	readonly maySend = (targetId: string): boolean => {
		if (!this.#leases.lapsed(targetId)) return true;
		this.#log.warn(
			{ event: "fleet_lease_lapsed", id: targetId },
			"the target's lease lapsed before its fetch was sent: nothing sent, another worker takes it",
		);
		return false;
	};

	/** Another worker's 429: `pause` holds this worker's sends (its gate) until the reset. */
	watchPause(pause: (ms: number) => void): void {
		this.#limits.watchPause(pause);
	}

	/** A 429: every worker of the fleet waits until its reset (no claim, no slot before then). */
	paused(pauseMs: number): void {
		this.#limits.paused(pauseMs);
	}

	/** The fleet run finished while this worker fed it. */
	get complete(): boolean {
		return this.#feed.complete;
	}

	/** The fleet's limit and its change count as this worker last read them (null: not yet). */
	get limit(): FleetLimit | null {
		return this.#limits.limit;
	}

	/**
	 * The fleet run's targets left when this worker ended (queued, leased, parked): what a worker started
	 * again has to do, whoever had them. Null before `close`, or when the database could not say.
	 */
	get left(): number | null {
		return this.#left;
	}

	/** The job's targets the run's loading left out as fresh (`freshness`); null before `close`, or when unknown. */
	get fresh(): number | null {
		return this.#fresh;
	}

	/** Where the fleet stood when this worker ended, for its summary; null before `close`. */
	get ended(): FleetSummary | null {
		return this.#ended;
	}

	/**
	 * The worker's work is over: stop renewing, leave the live workers (the others' part of the limit grows
	 * now, not a lease later), and read where the whole fleet stands.
	 */
	async close(): Promise<void> {
		const { fleet, run, worker, maxCredits } = this.#setup;
		this.#leases.stop();
		this.#limits.stop();
		await endWorker(fleet, worker).catch((error) =>
			// Not written: the worker leaves the live ones a lease after its last beat, as a killed one does.
			this.#log.warn({ event: "fleet_end_failed", error: errorMessage(error) }, "could not mark the worker ended"),
		);
		await this.#breakers?.stop();
		// What it learned is in before it ends: the next worker and the next run start there.
		await this.sharedModes?.stop();
		// Its changes of the limit are in before the fleet's state is read for the summary.
		await this.#limits.written();
		const status = await fleetStatus(fleet, run.id).catch(() => null);
		this.#left = status === null ? null : status.targets.queued + status.targets.leased + status.targets.parked;
		// The loading's fresh targets: a crawl's pages settled fresh are each in their worker's own crawl summary.
		this.#fresh = status === null ? null : status.fresh - status.freshPages;
		this.#ended = {
			run: run.runName,
			worker: worker.id,
			targets: status === null ? null : targetCounts(status.targets),
			credits_spent: status === null ? null : status.credits.spent,
			max_credits: maxCredits,
		};
	}
}

/** One worker's coordination in the fleet run `setup` names; its timers start now. */
export function createFleetCoordination(setup: FleetWorkerSetup, deps: FleetCoordinationDeps): FleetCoordination {
	return new FleetCoordination(setup, deps);
}
