/**
 * The job's `max_credits` as a synchronous reserve → commit/release ledger: the check and the booking
 * happen with no `await` between them, so concurrent workers can never jointly overshoot the budget.
 */
export interface CreditBudget {
	/** Book `worstCase` credits if they still fit; false (and nothing booked) otherwise. */
	tryReserve(worstCase: number): boolean;
	/** Replace a reservation with what the fetch really cost. */
	commit(reserved: number, actual: number): void;
	/** Drop a reservation that was not spent (the fetch failed or never ran). */
	release(reserved: number): void;
	readonly spent: number;
	readonly reserved: number;
	/** `null` when the job has no budget. */
	readonly limit: number | null;
}

export function createCreditBudget(limit: number | null, alreadySpent = 0): CreditBudget {
	let spent = alreadySpent;
	let reserved = 0;
	return {
		tryReserve(worstCase) {
			if (limit !== null && spent + reserved + worstCase > limit) return false;
			reserved += worstCase;
			return true;
		},
		commit(reservation, actual) {
			reserved -= reservation;
			spent += actual;
		},
		release(reservation) {
			reserved -= reservation;
		},
		get spent() {
			return spent;
		},
		get reserved() {
			return reserved;
		},
		limit,
	};
}
