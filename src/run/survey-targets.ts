import { createHash } from "node:crypto";
import { createEmptyCounts, type Job, streamTargets, type TargetCounts } from "../job/index.js";

/** One pass over a job's targets before any fetch: how many, what they may cost, and a digest of their ids. */
export interface TargetSurvey extends TargetCounts {
	/** Distinct targets: the number of records a complete run ends with. */
	readonly total: number;
	/** SHA-256 over the ids in order: a resumed run compares it to tell that the targets changed. */
	readonly digest: string;
}

export async function surveyTargets(job: Job): Promise<TargetSurvey> {
	const hash = createHash("sha256");
	const counts = createEmptyCounts();
	for await (const target of streamTargets(job, { counts })) {
		hash.update(target.id);
		hash.update("\n");
	}
	return { ...counts, total: counts.targets, digest: hash.digest("hex") };
}
