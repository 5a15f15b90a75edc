import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { shardIsIdle } from "../../crawl/index.js";
import type { ShardSpec } from "../../job/index.js";
import { RUN_FILES, runStartedMs } from "../../output/index.js";
import { type LockLease, liveLockHolder } from "./run-lock.js";

/** The other shards of this run's layout, as their locks in the job folder say (`.lock-shard-J-of-N`). */
export interface ShardPeers {
	/** Shards (1-based) of the layout whose lock is held now, this one included; refreshed every `intervalMs`. */
	live(): readonly number[];
	/** Live shards (this one included) that said they are out of work: a crawl shard waiting for links. */
	idle(): ReadonlySet<number>;
	/** Read the locks again now. */
	refresh(): readonly number[];
	/**
	 * Whether the timed reads keep the process alive: while this shard waits for its turn on the key,
	 * nothing else may (no fetch in flight), and the wait ends only through a read.
	 */
	keepAlive(on: boolean): void;
	close(): void;
}

export interface ShardPeersOptions {
	/** How often the locks are read again, ms. @default 250 */
	readonly intervalMs?: number;
	/** The lease and host name the locks are judged by (as this shard's own lock was taken). */
	readonly lease?: LockLease;
	/** Called after each timed read of the locks (not the first, made before this returns). */
	readonly onRead?: () => void;
}

/**
 * Watch which shards of a layout are running: a shard runs while its lock is held by a live process
 * (or, on another host, while its lease is renewed), and is idle while its crawl inbox state (of the
 * run its lock names) says so. Reads a few small files every `intervalMs`.
 */
export function watchShardPeers(
	jobDir: string,
	shard: ShardSpec,
	runId: string,
	options: ShardPeersOptions = {},
): ShardPeers {
	let live: readonly number[] = [shard.index];
	let idle: ReadonlySet<number> = new Set();
	const refresh = () => {
		const found: number[] = [];
		const resting = new Set<number>();
		for (let index = 1; index <= shard.count; index += 1) {
			const holder =
				index === shard.index
					? { run_id: runId }
					: liveLockHolder(join(jobDir, `.lock-shard-${index}-of-${shard.count}`), options.lease);
			if (!holder) continue;
			found.push(index);
			if (shardIsIdle(jobDir, index, shard.count, holder.run_id)) resting.add(index);
		}
		live = found;
		idle = resting;
		return live;
	};
	refresh();
	const { onRead } = options;
	const timer = setInterval(
		onRead
			? () => {
					refresh();
					onRead();
				}
			: refresh,
		options.intervalMs ?? 250,
	);
	timer.unref();
	return {
		live: () => live,
		idle: () => idle,
		refresh,
		keepAlive: (on) => {
			if (on) timer.ref();
			else timer.unref();
		},
		close: () => clearInterval(timer),
	};
}

/**
 * Shards of the layout (other than `shard`) whose newest run ended — its summary written — after this
 * shard's run `runDir` began (its run.json's `created_at`), or less than `beforeMs` before: this run is
 * resumed after the others were done, or runs right after them (shards one at a time, a later round of
 * an indexed Job). Such a shard is not late to start, and no share of the key is kept for it.
 */
export function shardsEndedDuring(runDir: string, shard: ShardSpec, beforeMs = 30_000): Set<number> {
	const ended = new Set<number>();
	const sinceMs = runStartedMs(runDir);
	if (sinceMs === null) return ended;
	let names: string[];
	try {
		names = readdirSync(dirname(runDir));
	} catch {
		return ended;
	}
	const jobDir = dirname(runDir);
	for (let index = 1; index <= shard.count; index += 1) {
		if (index === shard.index) continue;
		// Run ids begin with their start time: the last name is the shard's newest run.
		const newest = names
			.filter((name) => name.endsWith(`-shard-${index}-of-${shard.count}`))
			.sort()
			.at(-1);
		if (newest === undefined) continue;
		try {
			const summary = JSON.parse(readFileSync(join(jobDir, newest, RUN_FILES.summary), "utf8")) as {
				finished_at?: unknown;
			};
			const finished = typeof summary.finished_at === "string" ? Date.parse(summary.finished_at) : Number.NaN;
			if (finished > sinceMs - beforeMs) ended.add(index);
		} catch {
			// No summary (still running, or killed): it may come back.
		}
	}
	return ended;
}
