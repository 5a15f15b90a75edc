/**
 * Percentiles in constant memory: log-spaced buckets (about 2% apart) from 1 ms to ~1 hour, so a
 * run of millions of targets keeps a few kilobytes instead of every duration.
 */
export function createLatencyHistogram() {
	const growth = 1.02;
	const logGrowth = Math.log(growth);
	const bucketCount = Math.ceil(Math.log(3_600_000) / logGrowth) + 2;
	const counts = new Float64Array(bucketCount);
	let total = 0;
	const bucketOf = (ms: number) => (ms < 1 ? 0 : Math.min(bucketCount - 1, 1 + Math.floor(Math.log(ms) / logGrowth)));
	const bucketValue = (bucket: number) => (bucket === 0 ? 0 : growth ** (bucket - 0.5));
	return {
		record(ms: number) {
			counts[bucketOf(ms)]! += 1;
			total += 1;
		},
		/** The q-quantile (0–1), or null with no samples. */
		quantile(q: number): number | null {
			if (total === 0) return null;
			const rank = Math.max(1, Math.ceil(q * total));
			let seen = 0;
			for (let bucket = 0; bucket < bucketCount; bucket += 1) {
				seen += counts[bucket]!;
				if (seen >= rank) return bucketValue(bucket);
			}
			return bucketValue(bucketCount - 1);
		},
		get count() {
			return total;
		},
	};
}
