import { randomUUID } from "node:crypto";
import { type Clock, creditCostRange, type OptionWords, type ScrapeParams, type Sleep } from "../../common/index.js";
import { type Fleet, type FleetLease, reserveCredits, settleExtraCredits } from "../../fleet/index.js";
import { type CreditBudget, createCreditBudget } from "../flow/credit-budget.js";
import type { StopController } from "../flow/stop-controller.js";
import { type FleetLeases, isConnectionFailure } from "./fleet-leases.js";

/** How often a reservation that does not fit asks again while other fetches hold theirs. */
const BUDGET_POLL_MS = 250;

export interface FleetBudgetDeps {
	readonly fleet: Fleet;
	readonly runId: number;
	/** The fleet run's budget (its `max_credits`), null without one. */
	readonly maxCredits: number | null;
	/** How long a claim lasts without renewal, ms: a reservation waits no longer for room. */
	readonly leaseMs: number;
	readonly clock: Clock;
	readonly sleep: Sleep;
	/** The targets this worker holds: reservations go on their leases. */
	readonly leases: FleetLeases;
}

/**
 * What a target's first fetch may cost, reserved before the runner gets it. An adaptive target's first
 * mode is the runner's choice: it reserves its own rung's worst case on the lease when it starts.
 */
export function firstWorstCase(params: ScrapeParams): number {
	return params.mode === "adaptive" ? 0 : creditCostRange(params).max;
}

/**
 * The runner's budget in a fleet: a local ledger, the fleet's in the database. A target's first fetch is
 * reserved on its lease before the runner gets it (`reserveFor`); any other fetch — a re-fetch in a
 * stronger mode, a crawl's robots.txt or sitemap file — is reserved on a lease too (the target's, else one
 * this worker holds), so a worker that dies gives it back with the lease and the fleet never passes
 * `max_credits`.
 */
export class FleetBudget implements CreditBudget {
	readonly limit: number | null;
	readonly #deps: FleetBudgetDeps;
	readonly #local = createCreditBudget(null);
	/** Reservations of fetches of no target, on the lease that holds them. */
	readonly #untargeted: Array<{ readonly lease: FleetLease; readonly amount: number }> = [];
	/**
	 * The dearest worst case asked of the fleet's budget, booked or not: a worker whose first reservation
	 * found the budget spent booked nothing locally, and its hint still needs the price of a target left.
	 */
	#asked = 0;

	constructor(deps: FleetBudgetDeps) {
		this.#deps = deps;
		this.limit = deps.maxCredits;
	}

	get spent(): number {
		return this.#local.spent;
	}

	get reserved(): number {
		return this.#local.reserved;
	}

	get dearest(): number {
		return Math.max(this.#local.dearest, this.#asked);
	}

	tryReserve(worstCase: number, targetId?: string): boolean {
		const target = targetId === undefined ? undefined : this.#deps.leases.get(targetId);
		if (this.limit === null || (target !== undefined && target.prepaid >= worstCase)) {
			if (target) target.prepaid = 0;
			return this.#local.tryReserve(worstCase);
		}
		return false;
	}

	async reserve(worstCase: number, isStopping: () => boolean, targetId?: string): Promise<boolean> {
		this.#asked = Math.max(this.#asked, worstCase);
		if (this.limit === null) return this.#local.reserve(worstCase, isStopping);
		const { leases } = this.#deps;
		// A seed origin's sitemap task (depth -1) has its own first reservation: its first file takes it.
		const task =
			targetId === undefined
				? leases.find((target) => target.lease.depth < 0 && target.prepaid >= worstCase)
				: undefined;
		if (task) {
			task.prepaid = 0;
			this.#untargeted.push({ lease: task.lease, amount: worstCase });
			return this.#local.tryReserve(worstCase);
		}
		const holder = (targetId === undefined ? undefined : leases.get(targetId)) ?? leases.find((target) => !target.lost);
		if (!holder || !(await this.#throughOutage(holder.lease, worstCase, isStopping))) return false;
		if (targetId === undefined) this.#untargeted.push({ lease: holder.lease, amount: worstCase });
		return this.#local.tryReserve(worstCase);
	}

	commit(reserved: number, actual: number, targetId?: string): void {
		this.#local.commit(reserved, actual);
		const { fleet, runId, leases } = this.#deps;
		const target = targetId === undefined ? undefined : leases.get(targetId);
		if (target) target.charged += actual;
		// A fetch of no target's (a crawl's robots.txt, a sitemap): the fleet's spending all the same, and
		// its reservation leaves the lease that held it.
		else if (targetId === undefined && (actual > 0 || reserved > 0)) {
			const booking = reserved > 0 ? this.#takeUntargeted(reserved) : undefined;
			leases.track(
				"",
				booking
					? settleExtraCredits(fleet, booking.lease, booking.amount, actual)
					: fleet.query("UPDATE runs SET spent = spent + $2 WHERE id = $1", [runId, actual]),
			);
		}
	}

	/**
	 * A retry after charged failed attempts: it fits while the fleet's spent and reserved credits and what
	 * the target's attempts were charged (booked only when it settles) stay within `max_credits`. Other
	 * workers' unsettled charges are not in the books: at most their retries in flight can pass it. A
	 * database that does not answer leaves the decision to the worker's outage handling (the retry goes).
	 */
	async retryFits(charged: number): Promise<boolean> {
		if (this.limit === null) return true;
		const { fleet, runId } = this.#deps;
		try {
			const [row] = await fleet.query<{ spent: string; reserved: string }>(
				"SELECT spent, reserved FROM runs WHERE id = $1",
				[runId],
				"fleet_retry_fits",
			);
			return Number(row?.spent ?? 0) + Number(row?.reserved ?? 0) + charged <= this.limit;
		} catch {
			return true;
		}
	}

	release(reserved: number, targetId?: string): void {
		this.#local.release(reserved);
		const booking = targetId === undefined && reserved > 0 ? this.#takeUntargeted(reserved) : undefined;
		if (booking) this.#deps.leases.track("", settleExtraCredits(this.#deps.fleet, booking.lease, booking.amount, 0));
	}

	exhausted(worstCase: number, words: OptionWords): string {
		return this.#exhaustedMessage(null, worstCase, words);
	}

	/**
	 * The fleet's budget for one claimed target: its worst case reserved on its lease. While other fetches
	 * hold reservations that may cost less, it waits; when nothing is in flight and it does not fit, the
	 * budget is spent and the worker stops. A call sent again through an outage passes the same `token`:
	 * a booking whose answer was lost is then found, not made twice.
	 */
	async reserveFor(lease: FleetLease, worstCase: number, stops: StopController, token: string): Promise<boolean> {
		// Nothing to book up front (no budget, or an adaptive target booking its own first rung).
		if (this.limit === null || worstCase === 0) return true;
		this.#asked = Math.max(this.#asked, worstCase);
		if (await this.#waitForCredits(lease, worstCase, () => stops.stopping, token)) {
			const target = this.#deps.leases.get(lease.targetId);
			if (target) target.prepaid = worstCase;
			return true;
		}
		if (!stops.stopping) {
			const { fleet, runId } = this.#deps;
			const [row] = await fleet.query<{ spent: string }>("SELECT spent FROM runs WHERE id = $1", [runId]);
			stops.stop("budget_exhausted", this.#exhaustedMessage(Number(row?.spent ?? 0), worstCase, stops.words));
		}
		return false;
	}

	/**
	 * `#waitForCredits` for a fetch after a target's first (a re-fetch in a stronger mode, a crawl's
	 * robots.txt or sitemap file), sent again through a short database outage while the lease it goes on is
	 * surely this worker's, as the first reservation is (fleet-feed.ts); false on a stop. Past the lease the
	 * error stands: the worker is cut off, and its targets go to the others. Each try carries one token, so
	 * a booking that committed with its answer lost is not booked again.
	 */
	async #throughOutage(lease: FleetLease, worstCase: number, isStopping: () => boolean): Promise<boolean> {
		const token = randomUUID();
		try {
			return await this.#deps.leases.throughOutage(lease.targetId, isStopping, () =>
				this.#waitForCredits(lease, worstCase, isStopping, token),
			);
		} catch (error) {
			if (isConnectionFailure(error) && isStopping()) return false;
			throw error;
		}
	}

	/**
	 * Book `worstCase` of the fleet's budget on `lease`. While other fetches hold reservations that may cost
	 * less, it waits; false when no other fetch holds one and it does not fit (the budget is spent), or on a
	 * stop.
	 */
	async #waitForCredits(
		lease: FleetLease,
		worstCase: number,
		isStopping: () => boolean,
		token: string,
	): Promise<boolean> {
		const { fleet, runId, leaseMs, clock, sleep } = this.#deps;
		const maxCredits = this.limit ?? 0;
		// Other fetches' reservations may themselves wait (a page's fetch waiting for the robots.txt this
		// reservation is for): past a lease with no room made, the budget counts as spent.
		let deadline = clock() + leaseMs;
		let room = Number.NaN;
		// Whether the last refusal was already asked again after the books showed room for it.
		let askedAgain = false;
		for (;;) {
			if (await reserveCredits(fleet, lease, worstCase, token)) return true;
			const [row] = await fleet.query<{ spent: string; reserved: string; mine: string | null }>(
				`SELECT r.spent, r.reserved, t.reserved AS mine FROM runs r
				LEFT JOIN targets t ON t.run_id = r.id AND t.target_id = $2 WHERE r.id = $1`,
				[runId, lease.targetId],
				"fleet_budget",
			);
			// Only other fetches' reservations can make room: this lease's own wait for it to settle.
			const reserved = Number(row?.reserved ?? 0);
			const others = reserved - Number(row?.mine ?? 0);
			const spent = Number(row?.spent ?? 0);
			if (spent + worstCase > maxCredits || isStopping()) return false;
			if (others <= 0) {
				// The fetches that held credits settled between the refusal and this look: asked once more,
				// it fits. Refused again (the lease is gone, or the room was taken), it is spent.
				if (askedAgain || spent + reserved + worstCase > maxCredits) return false;
				askedAgain = true;
				continue;
			}
			askedAgain = false;
			const left = maxCredits - spent - reserved;
			if (left !== room) {
				room = left;
				deadline = clock() + leaseMs;
			} else if (clock() > deadline) return false;
			await sleep(BUDGET_POLL_MS);
		}
	}

	#takeUntargeted(amount: number): { readonly lease: FleetLease; readonly amount: number } | undefined {
		const index = this.#untargeted.findIndex((booking) => booking.amount === amount);
		return index < 0 ? undefined : this.#untargeted.splice(index, 1)[0];
	}

	#exhaustedMessage(spent: number | null, worstCase: number, words: OptionWords): string {
		return `stopping: the fleet's max_credits ${this.limit} reached (${spent === null ? "" : `${spent} spent; `}the next fetch may cost ${worstCase}); raise it with ${words.largerBudget} and start workers again`;
	}
}
