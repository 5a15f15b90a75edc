import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { type Clock, errorMessage, type TaskQueue } from "../../common/index.js";
import type { ExtractPlan } from "../../extract/index.js";
import {
	acquireSlots,
	claimTargets,
	countLeasedPage,
	type Fleet,
	FleetDatabaseError,
	type FleetLease,
	type FleetRun,
	type FleetSlot,
	type FleetWorker,
	type FreshPage,
	fetchStarting,
	finishFleetRun,
	freshPages,
	isComplete,
	onlyParkedLeft,
	releaseDueProbe,
	releaseSlot,
} from "../../fleet/index.js";
import type { Target } from "../../job/index.js";
import type { StopController } from "../flow/stop-controller.js";
import type { TargetRunner } from "../target/target-runner.js";
import type { FleetBreakers } from "./fleet-breakers.js";
import { type FleetBudget, firstWorstCase } from "./fleet-budget.js";
import type { ClaimCarryOver } from "./fleet-carry-over.js";
import type { FleetFrontier } from "./fleet-frontier.js";
import { type FleetLeases, isConnectionFailure } from "./fleet-leases.js";
import type { FleetLimitWatch } from "./fleet-limit.js";
import { fromFleetLease, sitemapOriginOf } from "./fleet-targets.js";

/** Longest wait before a worker with nothing claimable asks again (the fleet may be paused or finishing). */
const IDLE_POLL_MS = 250;

/** The run core's parts the feed fills and watches. */
export interface FleetFeedParts {
	readonly queue: TaskQueue;
	readonly runner: TargetRunner;
	readonly stops: StopController;
	/** Targets this worker holds at most at once. */
	readonly concurrency: number;
}

export interface FleetFeedDeps {
	readonly fleet: Fleet;
	readonly run: FleetRun;
	readonly worker: FleetWorker;
	/** How long a claim and a slot last without renewal, ms. */
	readonly leaseMs: number;
	readonly clock: Clock;
	readonly log: Logger;
	readonly plans: readonly ExtractPlan[];
	/** Hosts may have a delay (the job's, or robots.txt's Crawl-delay): each fetch stamps its start. */
	readonly paced: boolean;
	readonly leases: FleetLeases;
	readonly limits: FleetLimitWatch;
	readonly budget: FleetBudget;
	readonly frontier: FleetFrontier;
	readonly carryOver: ClaimCarryOver;
	/** The fleet's breakers once the job set them up (`useBreakers`), else null. */
	readonly breakers: () => FleetBreakers | null;
	/** Load the job's targets when the run's loader died mid-load; true when this worker did. */
	readonly takeOverLoading: () => Promise<boolean>;
	/** A crawl with `freshness`: claimed pages fresh in the job's fleet runs are not fetched while their links are known. */
	readonly freshness: { readonly freshnessMs: number; readonly maxDepth: number } | null;
	/** A crawl's `max_pages`: a page that entered uncounted takes room before it is fetched. */
	readonly maxPages?: number | undefined;
}

/** What an empty claim means: the worker ends, claims again at once, or waits before it claims again. */
type NoClaim = "end" | "again" | "wait";

/**
 * Claims targets into the run's queue, as many as there are free places in it and free fleet slots, until
 * the fleet run is complete or the worker stops. A slot is taken before the claim: a claim is the
 * permission to start a host's fetch now (its politeness clock moved on), so nothing may hold it back
 * afterwards.
 */
export class FleetFeed {
	readonly #deps: FleetFeedDeps;
	/** The fleet run finished while this worker fed it (it wrote the run's end). */
	#complete = false;
	/** A wake came while the feed was not waiting: its next wait ends at once. */
	#woken = false;
	/** Ends the feed's current wait early: a held target settled, or the worker stops. */
	#wakeFeeder: (() => void) | null = null;

	constructor(deps: FleetFeedDeps) {
		this.#deps = deps;
	}

	get complete(): boolean {
		return this.#complete;
	}

	/**
	 * A slot came free, a settlement reached the database (its host's place with it), or the worker
	 * stops: the feed claims again now rather than after its wait. A wake while a claim is out is kept for
	 * the next wait: that claim may have read the database before the change.
	 */
	wake(): void {
		const resume = this.#wakeFeeder;
		this.#wakeFeeder = null;
		if (resume) resume();
		else this.#woken = true;
	}

	/** Feed `parts.queue` until the fleet run is complete or the worker stops; then settle what is held. */
	async run(parts: FleetFeedParts): Promise<void> {
		const { queue, stops, concurrency } = parts;
		const { leases, clock } = this.#deps;
		stops.onStop(() => {
			leases.stopping(stops.inflight);
			this.wake();
		});
		while (!stops.stopping) {
			const unreachable = leases.unreachable;
			if (unreachable !== null) {
				stops.stop("fleet_unavailable", `stopping: the fleet's database stopped answering (${unreachable})`);
				break;
			}
			const { ceiling } = this.#deps.limits;
			const share = this.#deps.limits.share(concurrency);
			// Spare slots go back above a lowered limit (the fleet's ceiling is the table's, not this worker's)
			// and over this worker's share (another worker may be waiting for them).
			const back = leases.spareAbove(ceiling);
			back.push(...leases.spareOver(share));
			if (!(await this.#giveBack(back))) {
				await this.#pause(IDLE_POLL_MS);
				continue;
			}
			const free = share - leases.size;
			if (free <= 0) {
				await this.#pause(IDLE_POLL_MS);
				continue;
			}
			const claimedAt = clock();
			const claimed = await this.#claim(free);
			if (claimed !== null && claimed.length > 0) {
				const fresh = await this.#freshOf(claimed.map(({ lease }) => lease));
				for (const { lease, slot } of claimed) this.#start(lease, slot, claimedAt, parts, fresh.get(lease.targetId));
				continue;
			}
			const next = claimed === null ? "wait" : await this.#noClaim();
			if (next === "end") break;
			if (next === "wait") await this.#pause(IDLE_POLL_MS);
		}
		// A stop: claimed targets the queue dropped never started; they go back for the others now.
		await queue.onIdle();
		await leases.settleAll();
		for (const slot of leases.takeSpare()) await releaseSlot(this.#deps.fleet, slot).catch(() => false);
	}

	/** Slots, then as many targets as slots were had; null when the database failed (logged). */
	async #claim(free: number): Promise<Array<{ lease: FleetLease; slot: FleetSlot }> | null> {
		const { fleet, worker, leaseMs, leases, carryOver, maxPages } = this.#deps;
		const slots = leases.takeSpare(free);
		try {
			if (slots.length < free) slots.push(...(await acquireSlots(fleet, worker, free - slots.length, leaseMs)));
			// Lowest first: the claim counts only slots still below the fleet's limit (a spare one may be above
			// a limit another worker lowered since this one last read it), and those are the lowest.
			slots.sort((a, b) => a.slot - b.slot);
			const claimed =
				slots.length === 0
					? []
					: await claimTargets(fleet, worker, slots.length, leaseMs, {
							...carryOver.claimOptions,
							slots: slots.map((slot) => slot.slot),
							...(maxPages === undefined ? {} : { maxPages }),
						});
			// Slots without a target go back: another worker may have targets for them.
			await this.#giveBack(slots.slice(claimed.length));
			return claimed.map((lease, index) => ({ lease, slot: slots[index]! }));
		} catch (error) {
			// The slots stay spare, not forgotten: this worker's renewals go on extending every slot it holds,
			// and each one held counts against the fleet's limit.
			leases.keepSpare(slots);
			this.#claimFailed(error, "could not claim targets");
			return null;
		}
	}

	/**
	 * `freshness` in a crawl: the claimed pages fresh in the job's fleet runs, with what their last fetch kept
	 * (links, redirect landing). Empty when the database could not say: those pages are fetched.
	 */
	async #freshOf(leases: readonly FleetLease[]): Promise<Map<string, FreshPage>> {
		const { freshness, fleet, run, log } = this.#deps;
		if (freshness === null) return new Map();
		const pages = freshCandidates(leases);
		try {
			return await freshPages(fleet, run.jobName, pages, freshness.freshnessMs);
		} catch (error) {
			log.warn({ event: "fleet_fresh_failed", error: errorMessage(error) }, "could not read which pages are fresh");
			return new Map();
		}
	}

	/** A claim's statement failed: logged, and counted as the database failing until a renewal gets through. */
	#claimFailed(error: unknown, message: string): void {
		const reason = errorMessage(error);
		this.#deps.leases.claimFailed(reason);
		this.#deps.log.warn({ event: "fleet_claim_failed", error: reason }, message);
	}

	/** Slots back to the fleet; false when the database failed (logged; those not given back stay spare). */
	async #giveBack(slots: readonly FleetSlot[]): Promise<boolean> {
		let given = 0;
		try {
			for (; given < slots.length; given++) await releaseSlot(this.#deps.fleet, slots[given]!);
			return true;
		} catch (error) {
			this.#deps.leases.keepSpare(slots.slice(given));
			this.#claimFailed(error, "could not give slots back");
			return false;
		}
	}

	/**
	 * Nothing claimed: what the run's state says to do next. The database may go down right after the empty
	 * claim: the worker then waits and claims again, as after a failed claim, rather than end on the error.
	 */
	async #noClaim(): Promise<NoClaim> {
		try {
			return await this.#afterEmptyClaim();
		} catch (error) {
			if (!(error instanceof FleetDatabaseError)) throw error;
			this.#claimFailed(error, "could not read the fleet run's state");
			return "wait";
		}
	}

	/** Nothing claimed: the fleet run may be complete, or hold only targets parked behind breakers. */
	async #afterEmptyClaim(): Promise<NoClaim> {
		const { fleet, run, leases } = this.#deps;
		if (leases.size === 0 && (await isComplete(fleet, run.id))) {
			this.#complete = await finishFleetRun(fleet, run.id);
			if (this.#complete) return "end";
		}
		// The run is still loading and its loader is gone (killed mid-load): this worker loads the rest.
		if (await this.#deps.takeOverLoading()) return "again";
		// Only parked targets left: a breaker whose cool-down passed sends one as its probe, else the
		// worker ends with its breakers open (as a local run does: `--continue` takes them later).
		const breakers = this.#deps.breakers();
		if (leases.size === 0 && breakers !== null) {
			if ((await releaseDueProbe(fleet, run.id, breakers.coolDownMs)) > 0) return "again";
			if (await onlyParkedLeft(fleet, run.id)) return "end";
		}
		return "wait";
	}

	/**
	 * A claimed target held and queued: its first fetch reserved, run, and settled whatever happens. `fresh`:
	 * what a fresh page's last fetch kept; undefined for a page that is not fresh.
	 */
	#start(
		lease: FleetLease,
		slot: FleetSlot,
		claimedAt: number,
		parts: FleetFeedParts,
		fresh: FreshPage | undefined,
	): void {
		this.#deps.leases.hold(lease, slot, claimedAt);
		this.#deps.carryOver.note(lease);
		const target = fromFleetLease(lease, this.#deps.plans);
		parts.queue.add(async () => {
			try {
				if (fresh === undefined || !this.#followedFresh(lease, target, fresh)) {
					if (await this.#counted(lease, parts.stops)) await this.#work(lease, target, parts);
				}
			} finally {
				this.#deps.leases.settleLater(lease.targetId);
			}
		});
	}

	/**
	 * A fresh page: followed from the links its last fetch kept, nothing sent, settled fresh (true). False
	 * when its links are wanted and none were kept: it is fetched again for them, as a local crawl does.
	 */
	#followedFresh(lease: FleetLease, target: Target, kept: FreshPage): boolean {
		const { frontier, leases, freshness } = this.#deps;
		if (kept.links === null && lease.depth < (freshness?.maxDepth ?? 0)) {
			frontier.refetchedForLinks();
			return false;
		}
		const holding = leases.get(lease.targetId);
		if (!holding) return true;
		frontier.followFresh(target, kept);
		holding.fresh = true;
		return true;
	}

	/**
	 * A page that entered uncounted (fresh then) and is fetched after all takes room under `max_pages` first,
	 * as a local crawl counts a page when it hands it out. None left: it settles done unfetched, as a link
	 * past `max_pages` never enters. False also when the lease may have passed on (nothing sent).
	 */
	async #counted(lease: FleetLease, stops: StopController): Promise<boolean> {
		const { maxPages, fleet, leases } = this.#deps;
		if (maxPages === undefined || !lease.uncounted) return true;
		const count = () => countLeasedPage(fleet, lease, maxPages);
		const counted = await this.#beforeFetch(lease, stops, "fleet_count_failed", "count a page under max_pages", count);
		if (counted === false) {
			const holding = leases.get(lease.targetId);
			if (holding) holding.finished = true;
		}
		return counted === true;
	}

	/** A held target's work: a page goes to the runner, a sitemap task to the frontier's reader. */
	async #work(lease: FleetLease, target: Target, parts: FleetFeedParts): Promise<void> {
		const { paced, leases, frontier } = this.#deps;
		const sitemaps = sitemapOriginOf(lease);
		if (!(await this.#reserved(lease, target, parts.stops))) return;
		// A delayed host's next claim waits a delay from now, when this fetch starts.
		if (paced && !(await this.#stamped(lease, parts.stops))) return;
		if (sitemaps === null) await parts.runner.run(target);
		else if (await frontier.readSitemaps(lease, target, sitemaps)) {
			const holding = leases.get(lease.targetId);
			if (holding) holding.finished = true;
		}
	}

	/** The target's first fetch reserved on its lease; false when it may not be sent (the budget spent, a stop). */
	async #reserved(lease: FleetLease, target: Target, stops: StopController): Promise<boolean> {
		// One token for every try: a booking whose answer an outage lost is found again, not booked twice.
		const token = randomUUID();
		const reserve = () => this.#deps.budget.reserveFor(lease, firstWorstCase(target.params), stops, token);
		const what = "reserve a target's credits";
		return (await this.#beforeFetch(lease, stops, "fleet_reserve_failed", what, reserve)) === true;
	}

	/** The fetch's start stamped on its host (its delay runs from now); false when the target was given up. */
	async #stamped(lease: FleetLease, stops: StopController): Promise<boolean> {
		const stamp = () => fetchStarting(this.#deps.fleet, lease);
		const what = "stamp a fetch's start on its host";
		return (await this.#beforeFetch(lease, stops, "fleet_fetch_start_failed", what, stamp)) !== null;
	}

	/**
	 * A statement a target's fetch waits for, sent again through a short outage while the lease is surely
	 * this worker's (`throughOutage`); null when the worker stops or the lease may have passed on: nothing
	 * was sent for the target, so it goes back unpaid for another worker or a later `--continue`.
	 */
	async #beforeFetch<T>(
		lease: FleetLease,
		stops: StopController,
		event: string,
		what: string,
		statement: () => Promise<T>,
	): Promise<T | null> {
		const { leases, log } = this.#deps;
		const warn = (reason: string, then: string) =>
			log.warn({ event, id: lease.targetId, error: reason }, `could not ${what}: ${then}`);
		try {
			return await leases.throughOutage(
				lease.targetId,
				() => stops.stopping,
				statement,
				(reason) => warn(reason, "trying again while its lease lasts"),
			);
		} catch (error) {
			if (!isConnectionFailure(error)) throw error;
			warn(errorMessage(error), "the target goes back unfetched");
			return null;
		}
	}

	/** Wait until a held target settles, or `ms` passes. */
	#pause(ms: number): Promise<void> {
		if (this.#woken) {
			this.#woken = false;
			return Promise.resolve();
		}
		return new Promise<void>((resolve) => {
			const timer = setTimeout(() => {
				this.#wakeFeeder = null;
				resolve();
			}, ms);
			this.#wakeFeeder = () => {
				clearTimeout(timer);
				resolve();
			};
		});
	}
}

/**
 * `freshness` in a crawl: the claimed pages to look up in the job's fleet runs. A page found stale as it
 * entered the frontier is not asked about again (one lookup per page): only those found fresh then (their
 * links are wanted now) or never asked (a run opened before the frontier noted it).
 */
export function freshCandidates(leases: readonly FleetLease[]): string[] {
	return leases.filter((lease) => lease.depth >= 0 && lease.freshFound !== false).map((lease) => lease.targetId);
}
