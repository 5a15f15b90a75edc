import type { RunSummary } from "../output/index.js";
import type { TimelineSnapshot } from "./timeline.js";

/** A window in which the service held every send back: a 429's reset, or an outage being probed. */
export interface PauseWindow {
	readonly start_ms: number;
	readonly end_ms: number;
	/** `rate_limited`, `service_unavailable`, … as run.log names it. */
	readonly reason: string;
}

export interface LatencyDistribution {
	/** Upper bound of each bucket, milliseconds (the last is open-ended). */
	readonly bounds_ms: number[];
	readonly counts: number[];
	/** Percentiles of the real durations (nearest rank), not of the buckets above. */
	readonly p50: number | null;
	readonly p95: number | null;
	readonly p99: number | null;
	/** `exact`: from every duration; `reservoir`: from a uniform sample of 100,000 (a longer run). */
	readonly percentiles: "exact" | "reservoir";
	/** Durations counted (ok and failed records). */
	readonly samples: number;
}

/** A failed target as the report lists it: credentials in its URL masked, the message cut short. */
export interface FailedTarget {
	readonly url: string;
	readonly error: string | null;
	readonly http_status: number | null;
	readonly attempts: number;
	readonly message: string | null;
}

/** The first failed targets (at most 100) and how many failed in all. */
export interface FailedTargets {
	readonly listed: FailedTarget[];
	total: number;
}

export interface CrawlDepth {
	readonly depth: number;
	/** Records (ok and failed) of pages at this depth. */
	readonly pages: number;
}

export interface FieldFill {
	readonly name: string;
	/** Ok records in which the field found something. */
	readonly filled: number;
	/** Ok records. */
	readonly of: number;
}

/**
 * Everything `report.html` shows, embedded in the page as JSON. Its size does not grow with the number
 * of targets: time series are bucketed, latency is a fixed histogram (and a bounded sample for percentiles), hosts are the top few, failures the first 100.
 */
export interface ReportData {
	readonly version: 1;
	readonly generated_at: string;
	readonly summary: RunSummary;
	readonly timeline: TimelineSnapshot;
	readonly pauses: PauseWindow[];
	readonly latency: LatencyDistribution;
	readonly fields: FieldFill[];
	readonly changes: { new: number; changed: number; unchanged: number } | null;
	readonly top_failing_hosts: Array<{ host: string; failed: number }>;
	readonly failed_targets: FailedTargets;
	/** With `crawl:`: records per depth (the deepest is the depth reached); null otherwise. */
	readonly crawl_depths: CrawlDepth[] | null;
}
