import { rmdirSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import {
	CLI_WORDS,
	checkOptions,
	makeDirectory,
	type OptionKinds,
	type OptionWords,
	ScrapejobError,
} from "../../common/index.js";
import { jobOutputDir, OutputError } from "../../output/index.js";
import { checkShardLayout, LayoutConflictError, layoutWords } from "./layout-guard.js";
import { acquireRunLock, LockHeldError, type LockLease, type RunLock } from "./run-lock.js";

/** Each field of a lock's lease and the kind of value it takes. */
const LOCK_LEASE_OPTIONS = { leaseMs: "number", host: "string" } as const satisfies OptionKinds<LockLease>;

/**
 * Take one job's lock before anything is sent, so a run that loses it (cron overlap) has made no
 * request and written nothing. The job's output folder is created to hold the lock; if it is still
 * empty when the lock is released (the run stopped before creating a run folder), it goes too. A live
 * run of the job with another shard layout (layout-guard.ts) that started first: the lock is given back
 * and `LayoutConflictError` thrown. `lease`: the lease and host name this lock is taken with, and other
 * shards' locks judged by.
 */
export function lockJobOutput(
	outRoot: string,
	jobName: string,
	runId: string,
	lockName = ".lock",
	lease: LockLease = {},
	/** How the refusal of another layout names the shard option. */
	words: OptionWords = CLI_WORDS,
): RunLock {
	checkOptions("lockJobOutput's lease", lease, LOCK_LEASE_OPTIONS);
	const jobDir = jobOutputDir(outRoot, jobName);
	let created: boolean;
	try {
		created = makeDirectory(jobDir) !== undefined;
	} catch (error) {
		throw new OutputError(jobDir, error);
	}
	let lock: RunLock;
	try {
		lock = acquireRunLock(jobDir, runId, { ...lease, name: lockName });
	} catch (error) {
		if (created) removeIfEmpty(jobDir);
		// The lock file could not be written (a full disk, a read-only folder): the output's failure, exit 5.
		if (!(error instanceof ScrapejobError) && typeof (error as { code?: unknown })?.code === "string")
			throw new OutputError(join(jobDir, lockName), error);
		throw error;
	}
	try {
		// Runs of one job with overlapping shard layouts would pay for the same targets twice.
		checkShardLayout(jobDir, lockName, lease, words);
	} catch (error) {
		lock.release();
		if (created) removeIfEmpty(jobDir);
		throw error;
	}
	return {
		path: lock.path,
		tookOver: lock.tookOver,
		onLost: (listener) => lock.onLost?.(listener),
		// Fencing (run-job's mayWrite) asks this before each append: without it, a holder that wakes
		// from a pause past its lease wrote records until its heartbeat timer noticed the takeover.
		isHeld: () => lock.isHeld(),
		release() {
			lock.release();
			if (created) removeIfEmpty(jobDir);
		},
	};
}

/**
 * The job's lock for a re-extraction (`.lock`, as an unsharded run). Beside a sharded run it is refused
 * as a held lock: the layout refusal's way out, another `--shard`, is no option of a re-extraction.
 */
export function lockForReextraction(outRoot: string, jobName: string, runId: string, lease: LockLease = {}): RunLock {
	try {
		return lockJobOutput(outRoot, jobName, runId, ".lock", lease);
	} catch (error) {
		if (!(error instanceof LayoutConflictError)) throw error;
		throw new LockHeldError(
			error.path,
			error.holder,
			`${layoutWords(error.other)}; a re-extraction writes the job's output, so it waits until that run has ended`,
		);
	}
}

function removeIfEmpty(dir: string): void {
	try {
		rmdirSync(dir);
	} catch {
		// Not empty (a run folder was made) or already gone: keep it.
	}
}

/** A stale lock of a dead process was taken over: say so, naming the run that died. */
export function warnIfTookOver(lock: RunLock, logger: Logger | undefined): void {
	if (!lock.tookOver) return;
	logger?.warn({ lock: lock.path, previous: lock.tookOver }, tookOverMessage(lock));
}

export function tookOverMessage(lock: RunLock): string {
	const previous = lock.tookOver;
	return previous
		? `took over the lock of a run that is no longer running (pid ${previous.pid}, run ${previous.run_id})`
		: "";
}
