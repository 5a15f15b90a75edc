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
	readonly p50: number | null;
	readonly p95: number | null;
	readonly p99: number | null;
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
 * of targets: time series are bucketed, latency is a fixed histogram, hosts are the top few.
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
}
