/** Local in-flight fetches never exceed this, whatever the account reports: sockets and file descriptors are finite. */
export const MAX_LOCAL_CONCURRENCY = 1024;

export interface ConcurrencyPlan {
	/** In flight at the start. */
	readonly initial: number;
	/** Never more than this in flight. */
	readonly ceiling: number;
	/** Learned from `X-RateLimit-Limit` (scraper key only): start at 1 and grow toward the ceiling. */
	readonly adaptive: boolean;
	/** Why the ceiling is lower than asked, for the terminal and run.log. */
	readonly warnings: string[];
}

/**
 * The concurrency policy in one pure function. With the account's limit known, the job's (or the
 * flag's) lower number wins and a higher one is clamped; with a scraper key only, the run starts at
 * 1 and learns the limit from the service. Either way the local cap holds: an account reporting 10⁹
 * must not open 10⁹ sockets.
 */
export function resolveConcurrency(options: {
	/** The account's `concurrency` (GET /public/scraper), or null when only a scraper key is known. */
	readonly accountLimit: number | null;
	/** `--concurrency` or the job's number; null for `auto`. */
	readonly wanted: number | null;
}): ConcurrencyPlan {
	const warnings: string[] = [];
	let ceiling: number;
	if (options.accountLimit !== null) {
		ceiling = options.wanted ?? options.accountLimit;
		if (ceiling > options.accountLimit) {
			warnings.push(`concurrency ${ceiling} is above the account's limit; using ${options.accountLimit}`);
			ceiling = options.accountLimit;
		}
	} else ceiling = options.wanted ?? MAX_LOCAL_CONCURRENCY;
	if (ceiling > MAX_LOCAL_CONCURRENCY) {
		warnings.push(
			`concurrency ${ceiling} is above scrapejob's local cap; at most ${MAX_LOCAL_CONCURRENCY} fetches are in flight`,
		);
		ceiling = MAX_LOCAL_CONCURRENCY;
	}
	ceiling = Math.max(1, ceiling);
	const adaptive = options.accountLimit === null;
	return { initial: adaptive ? 1 : ceiling, ceiling, adaptive, warnings };
}
