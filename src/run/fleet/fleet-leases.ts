import type { Logger } from "pino";
import { type Clock, errorMessage, type Sleep } from "../../common/index.js";
import {
	completeTarget,
	exchangeSlot,
	type Fleet,
	FleetDatabaseError,
	type FleetLease,
	type FleetSlot,
	type FleetWorker,
	finishTarget,
	freshTarget,
	parkTarget,
	releaseTarget,
	renewLeases,
} from "../../fleet/index.js";
import type { ResultRecord } from "../../output/index.js";

/** A claim is trusted locally this much less than the database gives it: clocks of hosts drift apart. */
const LEASE_MARGIN_MS = 1000;
/** How often a target waiting for a slot below a lowered limit asks again, ms. */
const SLOT_POLL_MS = 100;
/** How often a settlement the database could not take is sent again while the lease is still this worker's, ms. */
const SETTLE_RETRY_MS = 250;

/** What a crawled page's record keeps for a later run's freshness: its links, where its redirects ended. */
export interface KeptPage {
	readonly links: readonly string[] | null;
	readonly landing: string | null;
}

/** A claimed target while this worker holds it. */
export interface HeldTarget {
	readonly lease: FleetLease;
	/** Exchanged for one below the fleet's limit when that was lowered under it (`slotBelowLimit`). */
	slot: FleetSlot;
	/** Local clock time until which the lease is surely still this worker's (a margin before the database's). */
	validUntil: number;
	/** The lease passed to another worker (a renewal no longer found it): nothing more is written for it. */
	lost: boolean;
	/** Credits its fetches were charged, settled with the target in one statement. */
	charged: number;
	/** Its record once written locally (scrubbed): it goes to the fleet's records when the target settles. */
	record: ResultRecord | null;
	/** Credits reserved on the lease for its first fetch and not booked by it yet (with a fleet budget). */
	prepaid: number;
	/** Parked behind its domain's open breaker: it settles parked, not back in the queue. */
	parked: { readonly domain: string; readonly worstCase: number } | null;
	/** A task of the fleet's own (a seed origin's sitemaps) ran to its end: it settles done, with no record. */
	finished: boolean;
	/** A crawled page left out as fresh (`freshness`), its links followed from its last fetch: it settles fresh. */
	fresh: boolean;
	/** A crawled page's links and redirect landing, kept with its record (`freshness`); null: none to keep. */
	kept: KeptPage | null;
}

export interface FleetLeaseDeps {
	readonly fleet: Fleet;
	readonly worker: FleetWorker;
	/** How long a claim and a slot last without renewal, ms. */
	readonly leaseMs: number;
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly log: Logger;
	/** The fleet's in-flight limit as this worker last read it (null: not yet). */
	readonly ceiling: () => number | null;
	/**
	 * A crawled page's links into the frontier: done before it settles, while the page is still leased.
	 * Resolves to what to keep with its record (null: nothing).
	 */
	readonly addLinks: (lease: FleetLease) => Promise<KeptPage | null>;
	/**
	 * A crawl's page whose redirects ended elsewhere: that address noted in the frontier before the
	 * target's slot goes to the next claim, so that claim cannot take it. Undefined for any other page.
	 */
	readonly noteLanding?: (lease: FleetLease) => Promise<void> | undefined;
	/** The target settled (or could not): what its claim brought is no longer needed. */
	readonly forget: (targetId: string) => void;
	/** A held target's slot came free, or its settlement reached the database: the claim feed may take the next target now. */
	readonly slotFreed: () => void;
}

/**
 * The targets this worker holds in the fleet and the slots it holds for them. Leases are renewed on a
 * timer: a worker that stops renewing (killed, stalled) loses its targets to the others, and its late
 * writes are refused (the fence, `mayWrite`).
 */
export class FleetLeases {
	readonly #deps: FleetLeaseDeps;
	readonly #held = new Map<string, HeldTarget>();
	/**
	 * Targets whose fetch is over and whose settlement is on its way to the database (sent again while the
	 * database is out): renewals keep their leases until it lands.
	 */
	readonly #unsettled = new Map<string, HeldTarget>();
	/**
	 * Slots held with no target on them: a settled target's slot goes to the next claim rather than back to
	 * the table (two statements saved a target); given back when a claim comes up short.
	 */
	readonly #spare: FleetSlot[] = [];
	/** Settlements on their way to the database (`settleLater`): a stop waits for them. */
	readonly #settling = new Set<Promise<void>>();
	/** Writes about a target still on their way to the database: its settlement waits for them. */
	readonly #pending = new Map<string, Promise<unknown>>();
	readonly #margin: number;
	readonly #renewTimer: NodeJS.Timeout;
	#lastRenewal: number;
	/** The worker stops (Ctrl-C, SIGTERM): a settlement the database refuses is not sent again. */
	#stopping = false;
	/** Set with `#stopping`: aborted when in-flight work may no longer finish. */
	#graceOver: AbortSignal | null = null;
	/** Why the fleet's database last failed this worker (a renewal or a claim); null once it answers again. */
	#failure: string | null = null;

	constructor(deps: FleetLeaseDeps) {
		this.#deps = deps;
		this.#margin = Math.min(LEASE_MARGIN_MS, deps.leaseMs / 10);
		this.#lastRenewal = deps.clock();
		this.#renewTimer = setInterval(() => void this.#renew(), Math.max(100, Math.floor(deps.leaseMs / 3)));
		this.#renewTimer.unref();
	}

	/** Targets held now. */
	get size(): number {
		return this.#held.size;
	}

	get(targetId: string): HeldTarget | undefined {
		return this.#held.get(targetId);
	}

	/**
	 * The first target `matches` accepts whose lease this worker still has: held, or settling. A settling
	 * page is still leased in the database while its links go to the frontier, and the robots.txt those
	 * links need is reserved on its lease (a worker holding nothing else found no lease for it, and stopped
	 * its crawl as if the budget were spent).
	 */
	find(matches: (target: HeldTarget) => boolean): HeldTarget | undefined {
		for (const target of this.#held.values()) if (matches(target)) return target;
		for (const target of this.#unsettled.values()) if (matches(target)) return target;
		return undefined;
	}

	/**
	 * Before each of a held target's fetches: a slot at or above the fleet's `ceiling` (a lowered limit) is
	 * exchanged for one below it first, waiting for one to come free. A target keeps its slot across
	 * retries, so without this a retry after the service refused it (its limit lowered) kept the fleet above
	 * the service's limit. Undefined (nothing to wait for) in the usual case.
	 */
	slotBelow(targetId: string, isStopping: () => boolean): Promise<void> | undefined {
		const target = this.#held.get(targetId);
		const limit = this.#deps.ceiling();
		if (target === undefined || limit === null || target.slot.slot < limit) return undefined;
		return this.#exchangeSlot(target, isStopping);
	}

	async #exchangeSlot(target: HeldTarget, isStopping: () => boolean): Promise<void> {
		const { fleet, worker, leaseMs, log, ceiling } = this.#deps;
		try {
			for (;;) {
				const limit = ceiling();
				if (limit === null || target.slot.slot < limit || isStopping() || !this.#held.has(target.lease.targetId))
					return;
				const below = await exchangeSlot(fleet, worker, target.slot, leaseMs);
				if (below) {
					target.slot = below;
					return;
				}
				await this.#deps.sleep(SLOT_POLL_MS);
			}
		} catch (error) {
			// The database failing: the fetch goes on its slot (failed renewals stop the worker in time).
			log.warn({ event: "fleet_slot_exchange_failed", error: errorMessage(error) }, "could not exchange a slot");
		}
	}

	/** A claim's target, held from now: its lease is this worker's until `claimedAt` plus a lease. */
	hold(lease: FleetLease, slot: FleetSlot, claimedAt: number): void {
		this.#held.set(lease.targetId, {
			lease,
			slot,
			validUntil: claimedAt + this.#deps.leaseMs - this.#margin,
			lost: false,
			charged: 0,
			record: null,
			parked: null,
			finished: false,
			fresh: false,
			kept: null,
			prepaid: 0,
		});
	}

	/**
	 * A held target whose lease is no longer surely this worker's (the worker was stopped or cut off past
	 * it): another worker may hold it now, so nothing more is sent for it. False for an id not held.
	 */
	lapsed(targetId: string): boolean {
		const target = this.#held.get(targetId);
		return target !== undefined && !this.mayWrite(targetId);
	}

	/** The record fence: a target's record is written only while its lease is surely this worker's. */
	mayWrite(targetId: string): boolean {
		const target = this.#held.get(targetId);
		return target !== undefined && !target.lost && this.#deps.clock() < target.validUntil;
	}

	/** A write about a target (or, with `""`, about none), after the ones before it; its failure is logged. */
	track(targetId: string, write: Promise<unknown>): void {
		const before = this.#pending.get(targetId) ?? Promise.resolve();
		const chained = before.then(() => write).catch((error) => this.#warnWrite(targetId, error));
		this.#pending.set(targetId, chained);
	}

	/** The database has failed this worker for longer than a lease (its leases are gone): why, else null. */
	get unreachable(): string | null {
		if (this.#failure === null || this.#deps.clock() - this.#lastRenewal <= this.#deps.leaseMs) return null;
		return this.#failure;
	}

	/**
	 * `statement` about a held target sent again through a short database outage (a connection lost: the
	 * server restarted, failed over) while the target's lease is surely this worker's and no stop came;
	 * each failure counts as the database failing, the first is passed to `onFirstFailure`. Otherwise the
	 * error is thrown: a statement the server refused is a bug, not an outage.
	 */
	async throughOutage<T>(
		targetId: string,
		isStopping: () => boolean,
		statement: () => Promise<T>,
		onFirstFailure?: (reason: string) => void,
	): Promise<T> {
		for (let attempt = 1; ; attempt++) {
			try {
				return await statement();
			} catch (error) {
				if (!isConnectionFailure(error)) throw error;
				const reason = errorMessage(error);
				this.claimFailed(reason);
				if (isStopping() || !this.mayWrite(targetId)) throw error;
				if (attempt === 1) onFirstFailure?.(reason);
				await this.#deps.sleep(SETTLE_RETRY_MS);
			}
		}
	}

	/** A claim failed: counted as the database failing until a renewal gets through. */
	claimFailed(message: string): void {
		this.#failure = message;
	}

	/** Spare slots beyond what `share` (this worker's part of the limit) leaves room for with the targets held, taken to go back. */
	spareOver(share: number): FleetSlot[] {
		const over = this.#held.size + this.#spare.length - share;
		return over > 0 ? this.#spare.splice(Math.max(0, this.#spare.length - over), over) : [];
	}

	/** Slots taken to go back that could not: spare again. */
	keepSpare(slots: readonly FleetSlot[]): void {
		this.#spare.push(...slots);
	}

	/** Up to `count` spare slots, taken for a claim (all of them without `count`). */
	takeSpare(count = Number.POSITIVE_INFINITY): FleetSlot[] {
		return this.#spare.splice(0, count);
	}

	/** Spare slots at or above a lowered `ceiling`, taken to go back (the fleet's ceiling is the table's). */
	spareAbove(ceiling: number | null): FleetSlot[] {
		if (ceiling === null || !this.#spare.some((slot) => slot.slot >= ceiling)) return [];
		const above = this.#spare.filter((slot) => slot.slot >= ceiling);
		this.#spare.splice(0, this.#spare.length, ...this.#spare.filter((slot) => slot.slot < ceiling));
		return above;
	}

	/**
	 * The target's fetch is over: it settles without holding its place in the run's queue, so the next
	 * claim's fetch starts while this one's record goes to the database (with one worker, the queue place
	 * held for the completion's round trip made each target's turn that much longer).
	 */
	settleLater(targetId: string): void {
		const settling = this.settle(targetId);
		this.#settling.add(settling);
		void settling.finally(() => this.#settling.delete(settling));
	}

	/** Every target held now settled (a stop: those the queue dropped go back for the others), and every settlement in flight done. */
	async settleAll(): Promise<void> {
		for (const id of [...this.#held.keys()]) await this.settle(id);
		await Promise.all(this.#settling);
	}

	/** The target ends here: its record (or its return to the queue) and its credits in one statement. */
	async settle(targetId: string): Promise<void> {
		const target = this.#held.get(targetId);
		if (!target) return;
		// Its fetch is over: the slot goes to the next claim now, while this target's writes go out (the
		// claim and the completion overlap instead of following each other: a round trip less a target).
		this.#held.delete(targetId);
		this.#unsettled.set(targetId, target);
		// Awaited only when there is one: any other target's slot goes to the next claim at once.
		const noting = this.#deps.noteLanding?.(target.lease);
		if (noting !== undefined) await noting;
		this.#spare.push(target.slot);
		this.#deps.slotFreed();
		await this.#pending.get(targetId);
		const { fleet, log, clock, sleep } = this.#deps;
		try {
			// Links first, while the page is still leased: the run cannot complete between the two. Sent once:
			// the crawl hands a page's links over when asked, so a second try would settle the page without them
			// (on a failure the lease lapses and the page is fetched again, its links found again).
			target.kept = await this.#deps.addLinks(target.lease);
			for (let attempt = 1; ; attempt++) {
				try {
					if (!(await settleInFleet(fleet, target)) && target.record)
						log.warn(
							{ event: "fleet_fenced", id: targetId },
							"the target's lease passed to another worker: its record is not the fleet's",
						);
					break;
				} catch (error) {
					// The database out for a moment (restarted, failed over): its record was paid for and written
					// here, so it is sent again while the lease is surely this worker's, not fetched again by
					// another worker once the lease lapses.
					const givenUp = this.#stopping && (!target.record || this.#graceOver?.aborted === true);
					if (!isConnectionFailure(error) || givenUp || target.lost || clock() >= target.validUntil) throw error;
					if (attempt === 1)
						log.warn(
							{ event: "fleet_settle_failed", id: targetId, error: errorMessage(error) },
							"could not settle a target: trying again while its lease lasts",
						);
					await sleep(SETTLE_RETRY_MS);
				}
			}
		} catch (error) {
			// The lease lapses and another worker takes the target (the database is the fleet's memory).
			log.warn({ event: "fleet_settle_failed", id: targetId, error: errorMessage(error) }, "could not settle a target");
		} finally {
			this.#unsettled.delete(targetId);
			this.#pending.delete(targetId);
			this.#deps.forget(targetId);
			// Its host's place is free in the database now: a claim that found the host full may try again.
			this.#deps.slotFreed();
		}
	}

	/**
	 * The worker was asked to stop. A settlement the database refuses that returns a target unfetched is
	 * given up at once (its lease lapses, the others take it); one that carries a paid record is sent again
	 * while its lease lasts and until `graceOver` (the stop's grace period, or a second signal): the record
	 * is kept rather than paid again by another worker, and the stop still ends in bounded time.
	 */
	stopping(graceOver: AbortSignal): void {
		this.#stopping = true;
		this.#graceOver = graceOver;
	}

	/** Renewals end (the worker's work is over): its leases lapse unless settled. */
	stop(): void {
		clearInterval(this.#renewTimer);
	}

	/** Extend this worker's leases; those a renewal no longer finds passed to another worker. */
	async #renew(): Promise<void> {
		const { fleet, worker, leaseMs, clock, log } = this.#deps;
		const started = clock();
		try {
			// Only the targets this worker keeps track of: one it gave up on lapses to the others.
			const kept = [...this.#held.keys(), ...this.#unsettled.keys()];
			const still = new Set(await renewLeases(fleet, worker, leaseMs, kept));
			this.#lastRenewal = started;
			this.#failure = null;
			for (const [id, target] of [...this.#held, ...this.#unsettled]) {
				if (still.has(id)) target.validUntil = Math.max(target.validUntil, started + leaseMs - this.#margin);
				else if (clock() > target.validUntil) target.lost = true;
			}
		} catch (error) {
			this.#failure = errorMessage(error);
			log.warn({ event: "fleet_renew_failed", error: this.#failure }, "could not renew the fleet leases");
		}
	}

	#warnWrite(targetId: string, error: unknown): void {
		this.#deps.log.warn({ event: "fleet_write", id: targetId, error: errorMessage(error) }, "fleet write failed");
	}
}

/**
 * The database could not be reached or dropped the connection (PostgreSQL restarting, a failover, the
 * network): a statement sent again may get through. A statement the server refused is not sent again.
 */
export function isConnectionFailure(error: unknown): boolean {
	if (!(error instanceof FleetDatabaseError)) return false;
	const state = error.sqlState;
	// No SQLSTATE: the connection ended under the statement; E…: the client's socket error (ECONNREFUSED, …);
	// 08: connection exceptions; 57P01–57P03: the server shutting down, crashed, or not yet accepting.
	return state === undefined || /^E[A-Z]+$/.test(state) || state.startsWith("08") || /^57P0[123]$/.test(state);
}

/** A held target's end in the fleet: done with its record, done as a task, parked, or back in the queue. */
function settleInFleet(fleet: Fleet, target: HeldTarget): Promise<boolean> {
	if (target.record) return completeTarget(fleet, target.lease, target.record, target.charged, target.kept);
	if (target.fresh) return freshTarget(fleet, target.lease);
	if (target.finished) return finishTarget(fleet, target.lease, target.charged);
	if (target.parked) return parkTarget(fleet, target.lease, target.parked.domain, target.parked.worstCase);
	return releaseTarget(fleet, target.lease, { retry: true, credits: target.charged });
}
