import type { ShardSpec } from "../job/index.js";
import type { Clock } from "../shared/index.js";

/**
 * Concurrency of one of N shard processes sharing one key (`run --shard I/N`), with no coordinator
 * but the service's answers and the shards' locks in the job folder:
 *
 * - **Share.** The key's limit L is split among the busy shards B (the whole layout for the first
 *   `startupMs`, then the shards whose lock is held): `floor(L / B)`, one more for the first `L mod B`
 *   of them in index order (at least 1). The shares add up to L exactly, so B busy shards fill the key
 *   at once and never overfill it. A shard that ends frees its share for the others within a lock read.
 * - **Additive increase.** While answers report a free slot besides the one they freed
 *   (`X-RateLimit-Remaining >= 2`) for `settleMs` in a row, take one more slot (up to L) — once per
 *   turn, and only in this shard's turn (turns of `turnMs` go round the shards by index), so two
 *   shards never grow into the same free slot at the same moment. Idle but running shards (a crawl
 *   waiting for links) leave their slots to the busy ones this way.
 * - **Multiplicative decrease.** A 429 halves it (at least 1; below its share it takes back one slot
 *   an answer while any is free); an answer reporting no free slot at all (`X-RateLimit-Remaining: 0`:
 *   someone else took the slot just freed) halves it down to the share.
 */
export interface SharedKeyConcurrency {
	/** Fetches this shard may have in flight now. */
	readonly concurrency: number;
	/** An answer's `X-RateLimit-Limit` / `X-RateLimit-Remaining` (either may be absent). Returns the new concurrency. */
	answered(limit: number | undefined, remaining: number | undefined): number;
	/** A 429 (a new pause window). Returns the new concurrency. */
	rateLimited(): number;
}

export interface SharedKeyConcurrencyOptions {
	/** The key's limit as known before the first answer (the account's concurrency, or the job's). */
	readonly limit: number;
	readonly shard: ShardSpec;
	/** Shards of the layout running now, this one included (shard-peers.ts). */
	readonly liveShards: () => readonly number[];
	readonly clock: Clock;
	/** How long every shard of the layout counts as busy, from this one's start, ms. @default 1000 */
	readonly startupMs?: number;
	/** Free slots reported this long in a row before growing, ms. @default 1000 */
	readonly settleMs?: number;
	/** One shard's turn to grow, ms. @default 100 */
	readonly turnMs?: number;
}

/** Shard `rank` (0-based) of `busy` shards' share of `limit`: the shares add up to `limit` (at least 1 each). */
export function shareOf(limit: number, busy: number, rank: number): number {
	const shards = Math.max(1, busy);
	return Math.max(1, Math.floor(limit / shards) + (rank < limit % shards ? 1 : 0));
}

export function createSharedKeyConcurrency(options: SharedKeyConcurrencyOptions): SharedKeyConcurrency {
	const { shard, clock } = options;
	const startedAt = clock();
	const startupMs = options.startupMs ?? 1000;
	const settleMs = options.settleMs ?? 1000;
	const turnMs = options.turnMs ?? 100;
	let limit = Math.max(1, options.limit);
	let lastShare = -1;
	let freeSince: number | null = null;
	let grownInTurn = -1;

	const share = () => {
		const busy =
			clock() - startedAt < startupMs
				? Array.from({ length: shard.count }, (_, index) => index + 1)
				: [...new Set([...options.liveShards(), shard.index])].sort((a, b) => a - b);
		return shareOf(limit, busy.length, busy.indexOf(shard.index));
	};
	let concurrency = share();
	lastShare = concurrency;

	/** The share moved (a shard ended or started, or the limit changed): start again from it. */
	const followShare = () => {
		const now = share();
		if (now !== lastShare) {
			lastShare = now;
			concurrency = now;
			freeSince = null;
		}
		return now;
	};

	return {
		get concurrency() {
			return concurrency;
		},
		answered(reportedLimit, remaining) {
			if (reportedLimit !== undefined && reportedLimit > 0) limit = Math.min(options.limit, reportedLimit);
			const base = followShare();
			concurrency = Math.min(concurrency, limit);
			if (remaining === undefined) return concurrency;
			const now = clock();
			if (concurrency < base) {
				// Below its share after a 429: back up one slot an answer while any is free.
				if (remaining >= 1) concurrency += 1;
			} else if (remaining === 0) {
				freeSince = null;
				if (concurrency > base) concurrency = Math.max(base, Math.floor(concurrency / 2));
			} else if (remaining >= 2) {
				freeSince ??= now;
				const turn = Math.floor(now / turnMs);
				const mine = turn % shard.count === shard.index - 1;
				if (mine && turn !== grownInTurn && now - freeSince >= settleMs && concurrency < limit) {
					concurrency += 1;
					grownInTurn = turn;
				}
			} else freeSince = null;
			return concurrency;
		},
		rateLimited() {
			freeSince = null;
			concurrency = Math.max(1, Math.floor(concurrency / 2));
			return concurrency;
		},
	};
}
