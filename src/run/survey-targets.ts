import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { countTargets, type Job, type TargetCounts } from "../job/index.js";

/** What a run will fetch, known before the first fetch: how many targets, what they may cost, and a digest. */
export interface TargetSurvey extends TargetCounts {
	/** Distinct targets: the number of records a complete run ends with. */
	readonly total: number;
	/**
	 * SHA-256 over the job's fingerprint and the bytes of its source files. A resumed run compares it
	 * to tell that the targets may have changed; hashing bytes costs a fraction of parsing them again.
	 */
	readonly digest: string;
}

async function hashFile(path: string, hash: ReturnType<typeof createHash>): Promise<void> {
	for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
}

/**
 * Build the survey from the counts the loader found while validating (so the sources are not parsed
 * again), or count now when the caller has none.
 */
export async function surveyTargets(job: Job, counts?: TargetCounts | null): Promise<TargetSurvey> {
	const known = counts ?? (await countTargets(job));
	const hash = createHash("sha256").update(job.fingerprint);
	for (const source of job.sources) {
		hash.update(`\n${source.path}\n`);
		await hashFile(source.path, hash);
	}
	return { ...known, total: known.targets, digest: hash.digest("hex") };
}
