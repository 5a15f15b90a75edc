/**
 * Concurrency of one of N processes sharing one key (`run --shard I/N`), with the service's own
 * accounting as the only coordinator: start at a fair share, `floor(limit / N)` and at least 1, so N
 * shards started at once never exceed the key's limit in sum; grow by one slot only when an answer
 * reports free slots for every shard to refill the slot its answer freed and take one more at the same
 * moment (`X-RateLimit-Remaining >= 2N`: the answers of all N shards may be read before any of them
 * sends again), and give a grown slot back when an answer reports none free. The send gate still holds every send while the
 * service reports no free slot, so a shard never sends into a full key.
 */
export function fairShare(limit: number, shards: number): number {
	return Math.max(1, Math.floor(limit / Math.max(1, shards)));
}

export function nextSharedConcurrency(
	current: number,
	options: { readonly limit: number; readonly shards: number; readonly remaining: number | undefined },
): number {
	const floor = fairShare(options.limit, options.shards);
	if (options.remaining === undefined) return current;
	if (options.remaining >= 2 * options.shards && current < options.limit) return current + 1;
	if (options.remaining === 0 && current > floor) return current - 1;
	return current;
}
