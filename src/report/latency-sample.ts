/**
 * The report's latency percentiles from the real durations, not from histogram bucket edges: every
 * duration is kept up to `capacity` (exact quantiles), and past it a uniform reservoir sample of that
 * size (Vitter's algorithm R), so memory stays bounded at a million records (800 KB at 100,000).
 * The sampling generator is seeded, so the same records give the same report.
 */
export const LATENCY_SAMPLE_CAPACITY = 100_000;

export interface LatencySample {
	add(ms: number): void;
	/** Durations seen (the sample holds at most `capacity` of them). */
	readonly count: number;
	/** True while every duration is kept: the quantiles are exact. */
	readonly exact: boolean;
	/** Nearest-rank quantiles (0–1) of the sample, in the order asked; null each with no durations. */
	quantiles(qs: readonly number[]): Array<number | null>;
}

export function createLatencySample(capacity = LATENCY_SAMPLE_CAPACITY): LatencySample {
	const values = new Float64Array(capacity);
	let count = 0;
	// xorshift32: deterministic, fast, good enough to pick reservoir slots.
	let state = 0x9e3779b9;
	const random = () => {
		state ^= state << 13;
		state ^= state >>> 17;
		state ^= state << 5;
		return (state >>> 0) / 0x1_0000_0000;
	};
	return {
		add(ms) {
			if (count < capacity) values[count] = ms;
			else {
				const slot = Math.floor(random() * (count + 1));
				if (slot < capacity) values[slot] = ms;
			}
			count += 1;
		},
		get count() {
			return count;
		},
		get exact() {
			return count <= capacity;
		},
		quantiles(qs) {
			const size = Math.min(count, capacity);
			if (size === 0) return qs.map(() => null);
			const sorted = values.slice(0, size).sort();
			return qs.map((q) => sorted[Math.min(size - 1, Math.max(0, Math.ceil(q * size) - 1))]!);
		},
	};
}
