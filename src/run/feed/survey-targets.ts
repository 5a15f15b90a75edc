import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { countTargets, type Job, type TargetCounts } from "../../job/index.js";

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

/** Bytes read from a source at a time while hashing it. */
const HASH_READ_BYTES = 1 << 20;

/**
 * Hash a file's bytes through one buffer. A read stream hands over a new 1 MiB buffer per read, all
 * garbage outside V8's heap that no young collection frees in time: hashing a 40 MB list of a million
 * URLs held ~35 MB of them at once, the highest moment of a million-target run.
 */
async function hashFile(path: string, hash: ReturnType<typeof createHash>, buffer: Buffer): Promise<void> {
	const handle = await open(path, "r");
	try {
		for (;;) {
			const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
			if (bytesRead === 0) return;
			hash.update(buffer.subarray(0, bytesRead));
		}
	} finally {
		await handle.close();
	}
}

/**
 * Build the survey from the counts the loader found while validating (so the sources are not parsed
 * again), or count now when the caller has none (`signal` stops that count: `SourceScanStoppedError`).
 */
export async function surveyTargets(
	job: Job,
	counts?: TargetCounts | null,
	signal?: AbortSignal,
): Promise<TargetSurvey> {
	const known = counts ?? (await countTargets(job, signal));
	return { ...known, total: known.targets, digest: await targetsDigest(job) };
}

/** The digest of the job's targets (its file and its sources' bytes) that a resume compares with its run's. */
export async function targetsDigest(job: Job): Promise<string> {
	const hash = createHash("sha256").update(job.fingerprint);
	const buffer = Buffer.allocUnsafe(HASH_READ_BYTES);
	for (const source of job.sources) {
		hash.update(`\n${source.path}\n`);
		await hashFile(source.path, hash, buffer);
	}
	return hash.digest("hex");
}
