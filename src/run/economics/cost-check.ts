import { formatNumber } from "../../common/index.js";

/**
 * `run --dry-run`: the estimated cost held against the budget (`max_credits`) and the account's
 * balance, in words. Pure: the caller reads the balance (a free look-up) or says why it could not.
 */
export interface CostCheck {
	readonly budget: {
		readonly max_credits: number | null;
		/** covers: even the worst case fits · may_stop: inside the range · stops: below the lowest estimate. */
		readonly verdict: "no_budget" | "covers" | "may_stop" | "stops";
	};
	readonly balance: {
		readonly credits: number | null;
		readonly verdict: "unknown" | "covers" | "may_run_out" | "runs_out";
		/** Why the balance is unknown (no account key, the look-up failed), else null. */
		readonly unknown_because: string | null;
	};
	/** The comparison in words, one sentence each for the budget and the balance. */
	readonly sentences: readonly string[];
}

const number = (value: number) => formatNumber(value);

export function checkCost(
	estimate: { readonly min: number; readonly max: number },
	maxCredits: number | null,
	balance:
		| { readonly credits: number; readonly unknownBecause?: undefined }
		| { readonly credits: null; readonly unknownBecause: string },
): CostCheck {
	const range =
		estimate.min === estimate.max ? number(estimate.max) : `${number(estimate.min)}–${number(estimate.max)}`;
	const sentences: string[] = [];
	let budgetVerdict: CostCheck["budget"]["verdict"];
	if (maxCredits === null) {
		budgetVerdict = "no_budget";
		sentences.push("No budget (max_credits): nothing stops the run before the end but the account's balance.");
	} else if (estimate.max <= maxCredits) {
		budgetVerdict = "covers";
		sentences.push(`The budget, max_credits ${number(maxCredits)}, covers even the worst case (${range}).`);
	} else if (estimate.min <= maxCredits) {
		budgetVerdict = "may_stop";
		sentences.push(
			`The budget, max_credits ${number(maxCredits)}, lies inside the estimate (${range}): the run may stop at it (budget_exhausted, exit 1) before the end; continue with --resume --max-credits <larger>.`,
		);
	} else {
		budgetVerdict = "stops";
		sentences.push(
			`The budget, max_credits ${number(maxCredits)}, is below the lowest estimate (${range}): the run will stop at it (budget_exhausted, exit 1) before the end; continue with --resume --max-credits <larger>.`,
		);
	}
	let balanceVerdict: CostCheck["balance"]["verdict"];
	if (balance.credits === null) {
		balanceVerdict = "unknown";
		sentences.push(`The account's balance is unknown: ${balance.unknownBecause}.`);
	} else if (estimate.max <= balance.credits) {
		balanceVerdict = "covers";
		sentences.push(`The account has ${number(balance.credits)} credits: enough even for the worst case.`);
	} else if (estimate.min <= balance.credits) {
		balanceVerdict = "may_run_out";
		sentences.push(
			`The account has ${number(balance.credits)} credits: enough for the lowest estimate, not for the worst case; the run may stop with insufficient_credits (exit 3).`,
		);
	} else {
		balanceVerdict = "runs_out";
		sentences.push(
			`The account has ${number(balance.credits)} credits, below the lowest estimate (${range}): the run will stop with insufficient_credits (exit 3) before the end.`,
		);
	}
	return {
		budget: { max_credits: maxCredits, verdict: budgetVerdict },
		balance: {
			credits: balance.credits,
			verdict: balanceVerdict,
			unknown_because: balance.credits === null ? balance.unknownBecause : null,
		},
		sentences,
	};
}
