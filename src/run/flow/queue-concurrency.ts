import type { ScraperHeaders } from "../../api/index.js";
import type { SharedKeyConcurrency } from "./shared-key-concurrency.js";

export interface QueueConcurrencyOptions {
	/** The account's concurrency (or the job's lower number): in-flight fetches never exceed it. */
	readonly concurrency: number;
	/** Start at 1 and grow to `X-RateLimit-Limit` (when only a scraper key is known). */
	readonly adaptive: boolean;
	/** A shard's share of a key other shards use too (shared-key-concurrency.ts); null when unsharded. */
	readonly sharedKey: SharedKeyConcurrency | null;
}

/**
 * How many fetches the run's queue may have in flight, as the service's answers tell: fixed at the
 * account's concurrency, learned from `X-RateLimit-Limit` one slot an answer (scraper key only), or a
 * shard's share of a shared key. Each call takes the queue's concurrency now and returns the new one.
 */
export interface QueueConcurrency {
	/** Where the queue starts. */
	readonly initial: number;
	/** After an answer's headers. */
	answered(headers: ScraperHeaders, current: number): number;
	/** After a 429 opened a pause window. */
	rateLimited(current: number): number;
	/** After the other shards' files were read again (a shard's turn on a shared key may have come). */
	peersRead(current: number): number;
	/** The concurrency the summary reports: a learned run's is the service's limit it learned. */
	reported(current: number): number;
}

export function createQueueConcurrency(options: QueueConcurrencyOptions): QueueConcurrency {
	const { concurrency, adaptive, sharedKey } = options;
	/** The limit the service reports (`X-RateLimit-Limit`). */
	let learnedLimit: number | null = null;
	return {
		initial: adaptive ? 1 : (sharedKey?.concurrency ?? concurrency),
		answered(headers, current) {
			if (headers.rateLimitLimit !== undefined) learnedLimit = headers.rateLimitLimit;
			if (adaptive && headers.rateLimitLimit !== undefined) {
				// One more slot per answer, up to the service's limit (or down to it at once).
				const ceiling = Math.min(concurrency, headers.rateLimitLimit);
				if (current < ceiling) return current + 1;
				if (current > ceiling) return Math.max(1, ceiling);
				return current;
			}
			if (sharedKey) return sharedKey.answered(headers.rateLimitLimit, headers.rateLimitRemaining);
			return current;
		},
		rateLimited(current) {
			return sharedKey ? sharedKey.rateLimited() : current;
		},
		peersRead(current) {
			return sharedKey ? sharedKey.peersRead() : current;
		},
		reported(current) {
			return adaptive ? Math.min(concurrency, learnedLimit ?? current) : concurrency;
		},
	};
}
