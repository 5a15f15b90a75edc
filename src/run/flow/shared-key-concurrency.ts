import type { Clock } from "../../common/index.js";
import type { ShardSpec } from "../../job/index.js";

/**
 * Concurrency of one of N shard processes sharing one key (`run --shard I/N`), with no coordinator
 * but the service's answers and the files of the shards in the job folder (locks, crawl inbox states):
 *
 * - **Share.** The key's limit L is split among the busy shards B: those whose lock is held and that
 *   did not say they are out of work (a crawl shard waiting for links), and those not seen running yet
 *   during the start grace (`startGraceMs` from this one's start: shards of a layout start at about the
 *   same time, not at once — a pod is scheduled late, a process boots slowly beside the others), except
 *   those that ended after this run began or just before it (this one is resumed, or runs right after
 *   them: they are done, not late).
 *   `floor(L / B)` each, one more for the first `L mod B` of them in index order. The shares add up to
 *   L exactly, so B busy shards fill the key and never overfill it: with more busy shards than L, those
 *   past the first L in index order have a share of 0 and send nothing until one of those ends or goes
 *   idle (one each would put B fetches on L slots: 429s, each pausing the shard for its reset). A shard
 *   that ends or goes idle frees its share for the others within a lock read (250 ms).
 * - **Ramp up.** A shard whose slots the others may still hold — it started while others of its layout
 *   ran, or it comes back from idle — starts at one fetch and takes one more slot an answer while the
 *   answer reports one free (`X-RateLimit-Remaining >= 1`), up to its share: the others' fetches above
 *   their new share are not called back, they end.
 *   Slots heard free before a quiet spell are asked again before the next send (send-gate.ts, `probeSlots`).
 * - **Decrease.** A 429 halves it (at least 1; then it ramps back up as above); an answer reporting no
 *   free slot at all (`X-RateLimit-Remaining: 0`: another program holds slots) keeps it where it is.
 *
 * An earlier version also grew past its share into slots reported free for a second; shards doing that
 * in turn still overfilled the key when a late shard ramped up into the same slots (bench `--only=shards`:
 * peaks of 11 of 10, a 429 and its 60 s pause). Idle shards now say so instead.
 */
export interface SharedKeyConcurrency {
	/** Fetches this shard may have in flight now. */
	readonly concurrency: number;
	/** An answer's `X-RateLimit-Limit` / `X-RateLimit-Remaining` (either may be absent). Returns the new concurrency. */
	answered(limit: number | undefined, remaining: number | undefined): number;
	/** A 429 (a new pause window). Returns the new concurrency. */
	rateLimited(): number;
	/**
	 * The peers' files were read again: a shard waiting for its turn (a share of 0, so no answer comes)
	 * takes one slot once its share comes, then ramps up on answers. Returns the new concurrency.
	 */
	peersRead(): number;
}

export interface SharedKeyConcurrencyOptions {
	/** The key's limit as known before the first answer (the account's concurrency, or the job's). */
	readonly limit: number;
	readonly shard: ShardSpec;
	/** Shards of the layout running now, this one included (shard-peers.ts). */
	readonly liveShards: () => readonly number[];
	/** Running shards out of work (shard-peers.ts); none when absent. */
	readonly idleShards?: () => ReadonlySet<number>;
	readonly clock: Clock;
	/**
	 * How long a shard of the layout not seen running yet counts as busy (holding its share), from this
	 * one's start, ms. @default 30000 (the lock's lease: what a shard takes to show it runs)
	 */
	readonly startGraceMs?: number;
	/**
	 * Shards of the layout that ended after this run began or just before (shard-peers.ts, `shardsEndedDuring`): a resume
	 * of this one after them waits for nothing, and takes the whole key during the grace too.
	 */
	readonly endedShards?: ReadonlySet<number>;
}

/** Shard `rank` (0-based) of `busy` shards' share of `limit`: the shares add up to `limit` (0 past the first `limit` shards). */
export function shareOf(limit: number, busy: number, rank: number): number {
	const shards = Math.max(1, busy);
	return Math.floor(limit / shards) + (rank < limit % shards ? 1 : 0);
}

const NONE: ReadonlySet<number> = new Set();

export function createSharedKeyConcurrency(options: SharedKeyConcurrencyOptions): SharedKeyConcurrency {
	const { shard, clock } = options;
	const startedAt = clock();
	const startGraceMs = options.startGraceMs ?? 30_000;
	const idleShards = options.idleShards ?? (() => NONE);
	const ended = options.endedShards ?? NONE;
	let limit = Math.max(1, options.limit);
	/** Shards of the layout seen running (this one included): one that is not live any more has ended. */
	const seen = new Set<number>([shard.index]);
	const inGrace = () => clock() - startedAt < startGraceMs;
	// Asked at every answer: computed again only when the peers' files were read again (new objects),
	// the grace ended or the limit changed.
	let memo: {
		live: readonly number[];
		idle: ReadonlySet<number>;
		grace: boolean;
		limit: number;
		share: number;
	} | null = null;
	const share = () => {
		const live = options.liveShards();
		const idle = idleShards();
		const grace = inGrace();
		if (memo && memo.live === live && memo.idle === idle && memo.grace === grace && memo.limit === limit)
			return memo.share;
		const busy = new Set<number>([shard.index]);
		for (const index of live) {
			seen.add(index);
			if (!idle.has(index)) busy.add(index);
		}
		if (grace)
			for (let index = 1; index <= shard.count; index += 1) if (!seen.has(index) && !ended.has(index)) busy.add(index);
		const ordered = [...busy].sort((a, b) => a - b);
		memo = { live, idle, grace, limit, share: shareOf(limit, ordered.length, ordered.indexOf(shard.index)) };
		return memo.share;
	};

	let wasIdle = idleShards().has(shard.index);
	let lastShare = share();
	// Others already run: they may hold this shard's slots until their fetches end.
	let concurrency = options.liveShards().some((index) => index !== shard.index) ? Math.min(1, lastShare) : lastShare;

	return {
		get concurrency() {
			return concurrency;
		},
		answered(reportedLimit, remaining) {
			if (reportedLimit !== undefined && reportedLimit > 0) limit = Math.min(options.limit, reportedLimit);
			const base = share();
			const idleNow = idleShards().has(shard.index);
			if (wasIdle && !idleNow) concurrency = 1;
			wasIdle = idleNow;
			if (base < lastShare) concurrency = Math.min(concurrency, base);
			lastShare = base;
			if (concurrency > base) concurrency = base;
			else if (concurrency < base && remaining !== undefined && remaining >= 1) concurrency += 1;
			return concurrency;
		},
		rateLimited() {
			concurrency = Math.min(share(), Math.max(1, Math.floor(concurrency / 2)));
			return concurrency;
		},
		peersRead() {
			const base = share();
			lastShare = base;
			if (concurrency > base) concurrency = base;
			else if (concurrency === 0 && base > 0) concurrency = 1;
			return concurrency;
		},
	};
}
