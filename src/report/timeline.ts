/**
 * Per-time-bucket counters in bounded memory, whatever the run's length: buckets start 100 ms wide and
 * double (pairs merged) whenever there would be more than `maxBuckets`, so a run of a minute and a
 * run of a week both end with at most `maxBuckets` points per series.
 */
export interface Timeline {
	/** Count `amount` into `series` at `atMs`. */
	add(series: TimelineSeries, atMs: number, amount: number): void;
	/** A fetch in flight from `startMs` until `finishMs` (counted at each bucket start in [start, finish)). */
	span(startMs: number, finishMs: number): void;
	snapshot(): TimelineSnapshot;
}

export const TIMELINE_SERIES = ["finished", "ok", "failed", "credits"] as const;
export type TimelineSeries = (typeof TIMELINE_SERIES)[number];

export interface TimelineSnapshot {
	/** Epoch ms of the first bucket's start. */
	readonly start_ms: number;
	readonly bucket_ms: number;
	/** Per bucket: targets finished / ok / failed, credits used (by finish time). */
	readonly finished: number[];
	readonly ok: number[];
	readonly failed: number[];
	readonly credits: number[];
	/** Per bucket: fetches in flight at the bucket's start. */
	readonly in_flight: number[];
}

export function createTimeline(originMs: number, maxBuckets = 600): Timeline {
	let bucketMs = 100;
	let used = 0;
	const counts: Record<TimelineSeries, Float64Array> = {
		finished: new Float64Array(maxBuckets * 2),
		ok: new Float64Array(maxBuckets * 2),
		failed: new Float64Array(maxBuckets * 2),
		credits: new Float64Array(maxBuckets * 2),
	};
	// In flight as a difference array: +1 at the first bucket start inside a span, -1 after its last.
	const inFlightDelta = new Float64Array(maxBuckets * 2 + 1);

	function halve(array: Float64Array) {
		for (let i = 0; i < maxBuckets; i += 1) array[i] = array[2 * i]! + array[2 * i + 1]!;
		array.fill(0, maxBuckets);
	}

	/**
	 * A difference array merges differently: the level at new bucket j's start is the old level at
	 * bucket 2j's start, so new[j] = old[2j-1] + old[2j] (and new[0] = old[0]).
	 */
	function halveDelta(array: Float64Array, half: number) {
		for (let j = 1; j <= half; j += 1) array[j] = array[2 * j - 1]! + array[2 * j]!;
		array.fill(0, half + 1);
	}

	function bucketOf(atMs: number): number {
		const offset = Math.max(0, atMs - originMs);
		let bucket = Math.floor(offset / bucketMs);
		while (bucket >= maxBuckets * 2) {
			for (const series of TIMELINE_SERIES) halve(counts[series]);
			halveDelta(inFlightDelta, maxBuckets);
			bucketMs *= 2;
			used = Math.ceil(used / 2);
			bucket = Math.floor(offset / bucketMs);
		}
		if (bucket + 1 > used) used = bucket + 1;
		return bucket;
	}

	return {
		add(series, atMs, amount) {
			counts[series][bucketOf(atMs)]! += amount;
		},
		span(startMs, finishMs) {
			bucketOf(finishMs); // grows the buckets first when the span ends beyond them
			const offset = Math.max(0, startMs - originMs);
			// Half-open [start, finish): one fetch ending as the next begins is one slot, not two.
			const first = Math.ceil(offset / bucketMs);
			const last = Math.ceil(Math.max(0, finishMs - originMs) / bucketMs) - 1;
			if (first > last) return;
			inFlightDelta[first]! += 1;
			inFlightDelta[last + 1]! -= 1;
		},
		snapshot() {
			// A line needs two points: even a run shorter than one bucket spans [start, end of bucket].
			if (used < 2) used = 2;
			const series = (array: Float64Array) => Array.from(array.subarray(0, used), (value) => round(value));
			const inFlight: number[] = [];
			let level = 0;
			for (let i = 0; i < used; i += 1) {
				level += inFlightDelta[i]!;
				inFlight.push(level);
			}
			return {
				start_ms: originMs,
				bucket_ms: bucketMs,
				finished: series(counts.finished),
				ok: series(counts.ok),
				failed: series(counts.failed),
				credits: series(counts.credits),
				in_flight: inFlight,
			};
		},
	};
}

function round(value: number): number {
	return Math.round(value * 100) / 100;
}
