import type { OptionWords } from "../../common/index.js";

/**
 * The job's `max_credits` as a synchronous reserve → commit/release ledger: the check and the booking
 * happen with no `await` between them, so concurrent workers can never jointly overshoot the budget.
 */
export interface CreditBudget {
	/**
	 * Book `worstCase` credits if they still fit; false (and nothing booked) otherwise. `targetId` names the
	 * target the fetch is for (a fleet worker books a target's later fetches on its lease).
	 */
	tryReserve(worstCase: number, targetId?: string): boolean;
	/**
	 * Book `worstCase` credits, waiting while other fetches hold reservations (they often cost less than
	 * booked) and trying again each time one settles. False when it can no longer fit, or once
	 * `isStopping()` says so.
	 */
	reserve(worstCase: number, isStopping: () => boolean, targetId?: string): Promise<boolean>;
	/**
	 * Replace a reservation with what the fetch really cost. `targetId` names the target it was for (a
	 * fleet worker settles each target's credits with the target itself).
	 */
	commit(reserved: number, actual: number, targetId?: string): void;
	/**
	 * Whether a retry still fits: its fetch's booking is held, and its earlier attempts were charged
	 * `charged` credits that no booking holds yet (they are committed with the fetch's outcome). A promise
	 * where the books are someone else's (a fleet's, in its database).
	 */
	retryFits?(charged: number): boolean | Promise<boolean>;
	/** Drop a reservation that was not spent (the fetch failed or never ran). */
	release(reserved: number, targetId?: string): void;
	readonly spent: number;
	readonly reserved: number;
	/** `null` when the job has no budget. */
	readonly limit: number | null;
	/**
	 * The largest worst case a target asked to book, refused ones included: what a resume needs per
	 * target left to be sure to finish (the budget-stop hint, cli/resume-hint.ts). 0 before any.
	 */
	readonly dearest: number;
	/** What a stop for want of credits says, when not the local run's words (a fleet's: its workers). */
	exhausted?(worstCase: number, words: OptionWords): string;
}

export function createCreditBudget(limit: number | null, alreadySpent = 0): CreditBudget {
	let spent = alreadySpent;
	let reserved = 0;
	/** Reservations waiting for one in flight to settle. */
	let waiters: Array<() => void> = [];
	const settled = () => {
		if (waiters.length === 0) return;
		const woken = waiters;
		waiters = [];
		for (const wake of woken) wake();
	};
	let dearest = 0;
	const tryReserve = (worstCase: number) => {
		if (worstCase > dearest) dearest = worstCase;
		if (limit !== null && spent + reserved + worstCase > limit) return false;
		reserved += worstCase;
		return true;
	};
	return {
		tryReserve,
		async reserve(worstCase, isStopping) {
			if (tryReserve(worstCase)) return true;
			for (;;) {
				if (reserved === 0 || isStopping()) return false;
				await new Promise<void>((resolve) => waiters.push(resolve));
				if (tryReserve(worstCase)) return true;
			}
		},
		commit(reservation, actual) {
			reserved -= reservation;
			spent += actual;
			settled();
		},
		release(reservation) {
			reserved -= reservation;
			settled();
		},
		retryFits(charged) {
			return limit === null || spent + reserved + charged <= limit;
		},
		get spent() {
			return spent;
		},
		get reserved() {
			return reserved;
		},
		get dearest() {
			return dearest;
		},
		limit,
	};
}
