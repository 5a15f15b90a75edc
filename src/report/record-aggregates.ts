import { maskUrlCredentials, parseIsoTime } from "../common/index.js";
import type { ResultRecord } from "../output/index.js";
import { createLatencySample } from "./latency-sample.js";
import type { CrawlDepth, FailedTargets, FieldFill, LatencyDistribution } from "./report-data.js";
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
/** Failed targets listed in the report at most (the first to fail); the rest are counted. */
export const MAX_FAILED_LISTED = 100;
/** Longest message kept per listed failure. */
const MAX_MESSAGE_CHARS = 200;

export interface RecordAggregates {
	add(record: ResultRecord): void;
	timeline(): TimelineSnapshot;
	latency(): LatencyDistribution;
	fields(): FieldFill[];
	changes(): { new: number; changed: number; unchanged: number } | null;
	topFailingHosts(): Array<{ host: string; failed: number }>;
	failedTargets(): FailedTargets;
	/** Records (ok and failed) per crawl depth, shallowest first; null outside a crawl. */
	crawlDepths(): CrawlDepth[] | null;
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
	const latencies = createLatencySample();
	const failed: FailedTargets = { listed: [], total: 0 };
	const depths = new Map<number, number>();

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
			latencies.add(record.duration_ms);
			if (typeof record.depth === "number") depths.set(record.depth, (depths.get(record.depth) ?? 0) + 1);
			if (record.status === "failed") {
				timeline.add("failed", finishedMs, 1);
				countHost(record.url);
				failed.total += 1;
				if (failed.listed.length < MAX_FAILED_LISTED) {
					failed.listed.push({
						url: maskUrlCredentials(record.url),
						error: record.error,
						http_status: record.http_status,
						attempts: record.attempts,
						message: record.message === null ? null : record.message.slice(0, MAX_MESSAGE_CHARS),
					});
				}
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
			const [p50, p95, p99] = latencies.quantiles([0.5, 0.95, 0.99]);
			return {
				bounds_ms: [...LATENCY_BOUNDS_MS],
				counts: Array.from(latencyCounts),
				p50: p50 ?? null,
				p95: p95 ?? null,
				p99: p99 ?? null,
				percentiles: latencies.exact ? "exact" : "reservoir",
				samples: latencies.count,
			};
		},
		fields: () => [...filled].map(([name, count]) => ({ name, filled: count, of: okRecords })),
		changes: () => (anyChange ? { ...changes } : null),
		topFailingHosts: () =>
			[...failedHosts]
				.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
				.slice(0, TOP_HOSTS)
				.map(([host, failed]) => ({ host, failed })),
		failedTargets: () => ({ listed: [...failed.listed], total: failed.total }),
		crawlDepths: () =>
			depths.size === 0 ? null : [...depths].sort((a, b) => a[0] - b[0]).map(([depth, pages]) => ({ depth, pages })),
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
