import { randomBytes } from "node:crypto";
import { basename, join, resolve } from "node:path";
import type { OptionWords } from "../common/index.js";
import { assertAcceptable, assertStoreLoads } from "../history/index.js";
import { type Job, shardSuffix, type TargetCounts } from "../job/index.js";
import { findCorruptLines, jobOutputDir, newRunId, RUN_FILES } from "../output/index.js";
import {
	CorruptResultsError,
	type LockLease,
	listLayoutRuns,
	lockJobOutput,
	ResumeError,
	type RunInfo,
	type RunLock,
	tookOverMessage,
} from "../run/index.js";

/** One job of a `run` command, with the run it continues or starts and its lock. */
export interface PlannedRun {
	readonly job: Job;
	readonly counts: TargetCounts | null;
	/** The run folder `--resume` continues; undefined for a new run. */
	readonly resumeDir: string | undefined;
	/** The new run's id, or the resumed run's. */
	readonly runId: string;
	/**
	 * Chosen by `--continue`: a resumed run whose job's targets changed since it started is not an
	 * error but left as it is, and a new run starts.
	 */
	readonly continued?: boolean;
	/** The lock file's name in the job folder. @default `.lock` (`.lock-shard-I-of-N` for a shard) */
	readonly lockName?: string;
	lock?: RunLock;
}

/** What `planRuns` decided: the runs to start or continue, and sentences on the jobs left out. */
export interface RunPlans {
	readonly planned: PlannedRun[];
	/** "job: run X is already complete; nothing to resume." — one per job left out. */
	readonly notes: string[];
}

/**
 * A crawl whose last session stopped at its `max_pages`: done as far as `--continue` goes, unless the
 * job's bound was raised since. Resumed, it would send nothing and stop at the same bound every night;
 * the next crawl is a new run.
 */
function crawlDoneToItsBound(run: RunInfo, job: Job): boolean {
	const crawl = run.summary?.crawl;
	if (!crawl || !job.crawl || run.summary?.stopped_reason !== "max_pages") return false;
	return job.crawl.maxPages <= crawl.max_pages;
}

/**
 * Which run each job continues (`--resume [RUN_ID]`) or starts. Reads only the output folders: no
 * request is made. A job whose chosen run is already complete is left out, with a note — unless it
 * is to be repaired (`--repair`): a complete run whose results.jsonl holds damaged lines loses those
 * records to the repair, and their targets run again.
 *
 * `continueRun` (`--continue`): the job's newest run (of this shard) is resumed when it is unfinished,
 * otherwise a new run starts — what a scheduler's one command line needs, first start or restart. A
 * complete run is never reopened: the next night's `--continue` is a new run.
 */
export function planRuns(
	jobs: ReadonlyArray<{ job: Job; counts: TargetCounts | null }>,
	outRoot: string,
	resume: boolean | string | undefined,
	repair = false,
	continueRun = false,
): RunPlans {
	const planned: PlannedRun[] = [];
	const notes: string[] = [];
	for (const { job, counts } of jobs) {
		// A shard's run folders end in -shard-I-of-N: it resumes its own, an unsharded run none of them.
		const suffix = job.shard ? shardSuffix(job.shard) : null;
		const ownRuns = () => listLayoutRuns(resolve(outRoot, job.name), job.shard);
		if (continueRun) {
			const newest = ownRuns()[0];
			planned.push(
				newest && !newest.complete && !crawlDoneToItsBound(newest, job)
					? { job, counts, resumeDir: newest.dir, runId: basename(newest.dir), continued: true }
					: { job, counts, resumeDir: undefined, runId: `${newRunId()}${suffix ?? ""}`, continued: true },
			);
			continue;
		}
		if (resume === undefined || resume === false) {
			planned.push({ job, counts, resumeDir: undefined, runId: `${newRunId()}${suffix ?? ""}` });
			continue;
		}
		const runs = ownRuns();
		const chosen = typeof resume === "string" ? runs.find((info) => info.runId === resume) : runs[0];
		if (!chosen) {
			// Nothing to resume: the library's callers match it as they match "already complete".
			throw new ResumeError(
				typeof resume === "string"
					? `no run ${resume} of job ${job.name} under ${outRoot}`
					: `no earlier run of job ${job.name} under ${outRoot} to resume`,
			);
		}
		if (chosen.complete && !repair) {
			// A complete run whose file was damaged since is not complete: said, with how to repair it.
			const jsonl = join(chosen.dir, RUN_FILES.jsonl);
			const corrupt = findCorruptLines(jsonl);
			if (corrupt.count > 0) throw new CorruptResultsError(jsonl, corrupt.lines, corrupt.count);
			notes.push(`${job.name}: run ${chosen.runId} is already complete; nothing to resume.`);
			continue;
		}
		planned.push({ job, counts, resumeDir: chosen.dir, runId: basename(chosen.dir) });
	}
	return { planned, notes };
}

/**
 * `run --fleet`: each job's worker gets a run folder of its own (under `<job>/fleet/`) and a lock of its
 * own, so any number of workers may share one output folder; which targets it fetches is the fleet's.
 */
export function planFleetRuns(jobs: ReadonlyArray<{ job: Job; counts: TargetCounts | null }>): PlannedRun[] {
	return jobs.map(({ job, counts }) => {
		const runId = `${newRunId()}-${randomBytes(3).toString("hex")}`;
		return { job, counts, resumeDir: undefined, runId, lockName: `.lock-fleet-${runId}` };
	});
}

/** `--accept RUN_ID`: refused (UsageError) before anything is sent when a job's run is not held back. */
export function checkAccept(
	planned: readonly PlannedRun[],
	outRoot: string,
	runId: string | undefined,
	words?: OptionWords,
): void {
	if (runId === undefined) return;
	for (const { job } of planned) assertAcceptable(jobOutputDir(outRoot, job.name), runId, words);
}

/**
 * Take every planned job's lock before the first request: a run that loses a lock (cron overlap)
 * exits having sent nothing. On a refusal the locks already taken are given back. Returns what a
 * taken-over lock says (a run that crashed left it behind). `lease`: the locks' lease and host name
 * (SCRAPEJOB_LOCK_LEASE_MS, SCRAPEJOB_HOSTNAME, resolved by the caller).
 */
export function lockPlannedRuns(
	planned: PlannedRun[],
	outRoot: string,
	lease: LockLease = {},
	words?: OptionWords,
): string[] {
	// The job store's addon loads, or the run ends here: nothing sent, nothing locked.
	if (planned.length > 0) assertStoreLoads();
	const tookOver: string[] = [];
	try {
		const byJobName = new Map<string, RunLock>();
		for (const run of planned) {
			// Two job files of one name share an output folder, and so one lock, held by this process.
			const lockKey = run.lockName ?? `${run.job.name}${run.job.shard ? shardSuffix(run.job.shard) : ""}`;
			const shared = byJobName.get(lockKey);
			if (shared) {
				run.lock = shared;
				continue;
			}
			// Shards of one job run side by side: each holds its own lease (.lock-shard-I-of-N).
			run.lock = lockJobOutput(
				outRoot,
				run.job.name,
				run.runId,
				run.lockName ?? (run.job.shard ? `.lock${shardSuffix(run.job.shard)}` : ".lock"),
				lease,
				words,
			);
			byJobName.set(lockKey, run.lock);
			if (run.lock.tookOver) tookOver.push(tookOverMessage(run.lock));
		}
	} catch (error) {
		releasePlannedRuns(planned);
		throw error;
	}
	return tookOver;
}

export function releasePlannedRuns(planned: readonly PlannedRun[]): void {
	for (const run of planned) run.lock?.release();
}
