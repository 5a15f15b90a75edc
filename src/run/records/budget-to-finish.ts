import type { RunSummary } from "../../output/index.js";

/**
 * A budget that lets a stopped run finish ("finish with …" must mean it): what was spent and every
 * target left at the dearest worst case of the job's targets or the run's fetches (each fetch books its
 * worst case before it starts, so less would stop again short of the end). A crawl does not know how
 * many pages are left: twice the old budget. Always above what was spent (a resume refuses less).
 */
export function budgetToFinish(summary: Pick<RunSummary, "credits" | "targets">, dearestTarget: number): number {
	const spent = Math.ceil(summary.credits.used);
	const left = summary.targets.remaining;
	const enough =
		left !== null && dearestTarget > 0
			? spent + Math.ceil(left * dearestTarget)
			: Math.ceil((summary.credits.max_credits ?? spent) * 2);
	return Math.max(spent + 1, enough);
}
