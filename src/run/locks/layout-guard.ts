import { readdirSync } from "node:fs";
import { join } from "node:path";
import { CLI_WORDS, type OptionWords, ScrapejobError } from "../../common/index.js";
import { type LockInfo, type LockLease, liveLockHolder } from "./run-lock.js";

/** The lock file names of one job folder: `.lock` (unsharded) and `.lock-shard-I-of-N`. */
const LOCK_NAME = /^\.lock(?:-shard-(\d+)-of-(\d+))?$/;

/** What a lock file's name says of its run's layout: N shards (1: unsharded) and which one. */
export interface LockLayout {
	readonly count: number;
	readonly index: number;
}

export function layoutOfLockName(name: string): LockLayout | null {
	const match = LOCK_NAME.exec(name);
	if (!match) return null;
	return match[1] === undefined ? { count: 1, index: 1 } : { count: Number(match[2]), index: Number(match[1]) };
}

export function layoutWords(layout: LockLayout): string {
	return layout.count === 1 ? "unsharded" : `shard ${layout.index}/${layout.count}`;
}

/**
 * A run of the same job with another shard layout (unsharded against sharded, `1/2` against `1/3`) is in
 * progress: the two would fetch the same targets twice. Exit 4, like a held lock; nothing was sent.
 */
export class LayoutConflictError extends ScrapejobError {
	readonly holder: LockInfo;
	/** The other run's layout and lock file. */
	readonly other: LockLayout;
	readonly path: string;
	constructor(mine: LockLayout, other: LockLayout, holder: LockInfo, path: string, words: OptionWords = CLI_WORDS) {
		super(
			"SCRAPEJOB_LOCK_HELD",
			`another run of this job with another shard layout is in progress: ${layoutWords(other)} (pid ${holder.pid} on ${holder.host}, run ${holder.run_id}, since ${holder.started_at}; lock file ${path}); this run (${layoutWords(mine)}) would fetch its targets a second time: run it when that one has ended${other.count === 1 ? "" : `, or with ${words.shard} I/${other.count}`}`,
		);
		this.holder = holder;
		this.other = other;
		this.path = path;
	}
}

/** Which of two runs came first: the earlier start, then the smaller run id (every process decides alike). */
function before(a: LockInfo, b: LockInfo): boolean {
	if (a.started_at !== b.started_at) return a.started_at < b.started_at;
	return a.run_id < b.run_id;
}

/**
 * Called with this run's lock held (`myLockName` in `jobDir`): throws `LayoutConflictError` when a live
 * run of another layout holds a lock of the same job and started before this one. Each run takes its
 * own lock before it looks, so of two that start together at least the later sees the earlier; the
 * earlier one, should it see the later, goes on (the later refuses itself).
 */
export function checkShardLayout(
	jobDir: string,
	myLockName: string,
	lease: LockLease = {},
	words: OptionWords = CLI_WORDS,
): void {
	const mine = layoutOfLockName(myLockName);
	if (!mine) return;
	const me = liveLockHolder(join(jobDir, myLockName), lease);
	if (!me) return;
	let names: string[];
	try {
		names = readdirSync(jobDir);
	} catch {
		return;
	}
	for (const name of names) {
		const other = layoutOfLockName(name);
		if (!other || other.count === mine.count) continue;
		const path = join(jobDir, name);
		const holder = liveLockHolder(path, lease);
		if (holder && before(holder, me)) throw new LayoutConflictError(mine, other, holder, path, words);
	}
}
