import { createHash } from "node:crypto";
import { type Job, type JobProblem, streamTargets } from "../job/index.js";
import { creditCostRange, type Mode } from "../shared/index.js";

/** One pass over a job's targets before any fetch: how many, what they may cost, and a digest of their ids. */
export interface TargetSurvey {
	readonly total: number;
	readonly duplicates: number;
	readonly skippedRows: number;
	readonly byMode: Record<Mode, number>;
	readonly creditRange: { min: number; max: number };
	/** SHA-256 over the ids in order: a resumed run compares it to tell that the targets changed. */
	readonly digest: string;
}

export async function surveyTargets(job: Job, onProblem?: (problem: JobProblem) => void): Promise<TargetSurvey> {
	const hash = createHash("sha256");
	const byMode: Record<Mode, number> = { request: 0, browser: 0, auto: 0 };
	let total = 0;
	let duplicates = 0;
	let skippedRows = 0;
	let min = 0;
	let max = 0;
	for await (const target of streamTargets(job, {
		onProblem: (problem) => {
			if (/duplicate/i.test(problem.message)) duplicates += 1;
			else skippedRows += 1;
			onProblem?.(problem);
		},
	})) {
		total += 1;
		hash.update(target.id);
		hash.update("\n");
		const mode = target.params.mode ?? "auto";
		byMode[mode] += 1;
		const range = creditCostRange(target.params);
		min += range.min;
		max += range.max;
	}
	return { total, duplicates, skippedRows, byMode, creditRange: { min, max }, digest: hash.digest("hex") };
}
