import type { ResultRecord } from "../output/index.js";
import { parseIsoTime } from "../shared/index.js";
import type { FieldFill, LatencyDistribution } from "./report-data.js";
import { createTimeline, type TimelineSnapshot } from "./timeline.js";

/** Latency bucket bounds, ms: about 26 % apart from 1 ms to 1 h (66 buckets, to about 1 h; the last is open). */
const LATENCY_BOUNDS_MS: readonly number[] = Array.from(
	{ length: 66 },
	(_, i) => Math.round(1.26 ** (i + 1) * 10) / 10,
);
/** Hosts with failures kept at most; pruned to half (the least failing go) when exceeded. */
const MAX_HOSTS = 20_000;
const MAX_FIELDS = 200;
const TOP_HOSTS = 15;

export interface RecordAggregates {
	add(record: ResultRecord): void;
	timeline(): TimelineSnapshot;
	latency(): LatencyDistribution;
	fields(): FieldFill[];
	changes(): { new: number; changed: number; unchanged: number } | null;
	topFailingHosts(): Array<{ host: string; failed: number }>;
}

/**
 * What the report needs from the records, gathered one record at a time in constant memory: fed
 * while a run writes them, or from `results.jsonl` when a report is rebuilt.
 */
export function createRecordAggregates(originMs: number): RecordAggregates {
	const timeline = createTimeline(originMs);
	const latencyCounts = new Float64Array(LATENCY_BOUNDS_MS.length + 1);
	const filled = new Map<string, number>();
	let okRecords = 0;
	const changes = { new: 0, changed: 0, unchanged: 0 };
	let anyChange = false;
	const failedHosts = new Map<string, number>();

	function latencyBucket(ms: number): number {
		// Binary search over 66 bounds: seven comparisons per record.
		let low = 0;
		let high = LATENCY_BOUNDS_MS.length;
		while (low < high) {
			const middle = (low + high) >> 1;
			if (ms <= LATENCY_BOUNDS_MS[middle]!) high = middle;
			else low = middle + 1;
		}
		return low;
	}

	function countHost(url: string) {
		const host = hostOf(url);
		failedHosts.set(host, (failedHosts.get(host) ?? 0) + 1);
		if (failedHosts.size > MAX_HOSTS) {
			const kept = [...failedHosts].sort((a, b) => b[1] - a[1]).slice(0, MAX_HOSTS / 2);
			failedHosts.clear();
			for (const [name, count] of kept) failedHosts.set(name, count);
		}
	}

	return {
		add(record) {
			const finishedMs = parseIsoTime(record.finished_at);
			timeline.add("finished", finishedMs, 1);
			if (record.credits_used > 0) timeline.add("credits", finishedMs, record.credits_used);
			if (record.status === "skipped") return;
			timeline.span(finishedMs - record.duration_ms, finishedMs);
			latencyCounts[latencyBucket(record.duration_ms)]! += 1;
			if (record.status === "failed") {
				timeline.add("failed", finishedMs, 1);
				countHost(record.url);
				return;
			}
			timeline.add("ok", finishedMs, 1);
			okRecords += 1;
			if (record.change) {
				anyChange = true;
				changes[record.change] += 1;
			}
			if (record.data) {
				for (const name in record.data) {
					const known = filled.get(name);
					if (known === undefined && filled.size >= MAX_FIELDS) continue;
					filled.set(name, (known ?? 0) + (isFilled(record.data[name]) ? 1 : 0));
				}
			}
		},
		timeline: () => timeline.snapshot(),
		latency() {
			const counts = Array.from(latencyCounts);
			return {
				bounds_ms: [...LATENCY_BOUNDS_MS],
				counts,
				p50: quantile(counts, 0.5),
				p95: quantile(counts, 0.95),
				p99: quantile(counts, 0.99),
			};
		},
		fields: () => [...filled].map(([name, count]) => ({ name, filled: count, of: okRecords })),
		changes: () => (anyChange ? { ...changes } : null),
		topFailingHosts: () =>
			[...failedHosts]
				.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
				.slice(0, TOP_HOSTS)
				.map(([host, failed]) => ({ host, failed })),
	};
}

function isFilled(value: unknown): boolean {
	if (value === null || value === undefined || value === "") return false;
	// An `all: true` list keeps empty matches as "" (to stay aligned): filled when one item is not empty.
	return !Array.isArray(value) || value.some((item) => item !== "" && item !== null);
}

/** `host[:port]` of an absolute URL without building a URL object (failed records only, but millions). */
export function hostOf(url: string): string {
	const start = url.indexOf("//");
	if (start < 0) return url;
	let end = url.length;
	for (const stop of ["/", "?", "#"]) {
		const at = url.indexOf(stop, start + 2);
		if (at >= 0 && at < end) end = at;
	}
	const authority = url.slice(start + 2, end);
	// Credentials in a URL never reach the report.
	return authority.slice(authority.lastIndexOf("@") + 1).toLowerCase();
}

/** Upper bound of the bucket holding the q-quantile (an overestimate by at most one bucket, 26 %). */
function quantile(counts: readonly number[], q: number): number | null {
	const total = counts.reduce((sum, count) => sum + count, 0);
	if (total === 0) return null;
	const rank = Math.max(1, Math.ceil(q * total));
	let seen = 0;
	for (let i = 0; i < counts.length; i += 1) {
		seen += counts[i]!;
		if (seen >= rank) return LATENCY_BOUNDS_MS[Math.min(i, LATENCY_BOUNDS_MS.length - 1)]!;
	}
	return null;
}
