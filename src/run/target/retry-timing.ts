export interface BackoffOptions {
	/** First wait, milliseconds; doubles on each further retry. */
	readonly backoffMs: number;
	/** Ceiling of the exponential part, milliseconds. */
	readonly maxBackoffMs: number;
}

/**
 * "Full jitter" backoff: a uniform random wait in [0, min(cap, base·2^(retry-1))]. Spreads the retries
 * of many workers that failed together, which plain exponential backoff would keep in lockstep
 * (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/).
 *
 * @param retry 1 for the first retry.
 */
export function fullJitterDelayMs(retry: number, options: BackoffOptions, random: () => number = Math.random): number {
	const exponent = Math.max(0, retry - 1);
	const ceiling = Math.min(options.maxBackoffMs, options.backoffMs * 2 ** Math.min(exponent, 30));
	return Math.floor(random() * ceiling);
}
