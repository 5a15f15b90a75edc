import type { RunSummary } from "../output/index.js";
import type { ProgressSnapshot } from "../run/index.js";

/**
 * The figures of one run as metrics (docs/guides/monitoring.md): one model, read by
 * the Prometheus text file (metrics-file.ts) and the OTLP push (otlp-push.ts), so both say the same.
 * Labels are `job`, `shard` and a fleet's `worker` only — never a URL (a label per URL would be a series per page).
 */
export interface RunMetrics {
	readonly job: string;
	/** `I/N` from `--shard`; "" for an unsharded run. */
	readonly shard: string;
	/** A fleet worker's id (`run --fleet`); "" otherwise (and then no `worker` label is written). */
	readonly worker: string;
	/** When the job last ended with exit 0, seconds since the epoch; 0 when never (so `time() - …` alerts). */
	lastSuccessSeconds: number;
	/** This session's duration so far (at the end: its whole length). */
	durationSeconds: number;
	targets: Record<TargetStatus, number>;
	requests: Record<RequestOutcome, number>;
	retries: number;
	creditsUsed: number;
	inflight: number;
	concurrencyLimit: number;
	changes: Record<ChangeKind, number>;
	/** Rules of the data contract the latest run broke (0: kept, or no contract). */
	contractBroken: number;
	/** Domains whose breaker is open at the end of the latest run, each 1 (docs/behaviour.md, "Breakers"). */
	breakersOpen: Record<string, number>;
}

export const TARGET_STATUSES = ["ok", "failed", "skipped"] as const;
export type TargetStatus = (typeof TARGET_STATUSES)[number];
/**
 * `scrapejob_requests_total{outcome}`: `ok` and `failed` the final fetch of each ok / failed target,
 * `retried` the fetches that were tried again, `rate_limited` the 429 pauses.
 */
export const REQUEST_OUTCOMES = ["ok", "failed", "retried", "rate_limited"] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];
export const CHANGE_KINDS = ["new", "changed", "unchanged"] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/** One metric of the contract: its name, type, help text, its extra label and how it is read from the model. */
export interface MetricSpec {
	readonly name: string;
	readonly type: "gauge" | "counter";
	readonly help: string;
	/** Its extra label: fixed values, or (`domain`) the ones the model holds now, so the series stay few. */
	readonly label?: {
		readonly name: string;
		readonly values: readonly string[] | ((metrics: RunMetrics) => readonly string[]);
	};
	read(metrics: RunMetrics, value?: string): number;
}

export const METRIC_SPECS: readonly MetricSpec[] = [
	{
		name: "scrapejob_run_last_success_timestamp_seconds",
		type: "gauge",
		help: "When a run of the job last ended with exit code 0 (Unix seconds; 0: never). Alert on time() minus it.",
		read: (m) => m.lastSuccessSeconds,
	},
	{
		name: "scrapejob_run_duration_seconds",
		type: "gauge",
		help: "How long the latest run (this session of it) has been running, or ran.",
		read: (m) => m.durationSeconds,
	},
	{
		name: "scrapejob_targets_total",
		type: "counter",
		help: "Targets of the latest run with a record, by status.",
		label: { name: "status", values: TARGET_STATUSES },
		read: (m, value) => m.targets[value as TargetStatus],
	},
	{
		name: "scrapejob_requests_total",
		type: "counter",
		help: "Fetches of the latest run by outcome: ok / failed (a target's last fetch), retried, rate_limited (429 pauses).",
		label: { name: "outcome", values: REQUEST_OUTCOMES },
		read: (m, value) => m.requests[value as RequestOutcome],
	},
	{
		name: "scrapejob_retries_total",
		type: "counter",
		help: "Fetches of the latest run that were tried again.",
		read: (m) => m.retries,
	},
	{
		name: "scrapejob_credits_used_total",
		type: "counter",
		help: "Credits the latest run used (as summary.json credits.used).",
		read: (m) => m.creditsUsed,
	},
	{
		name: "scrapejob_inflight",
		type: "gauge",
		help: "Fetches in flight now (0 once the run ended).",
		read: (m) => m.inflight,
	},
	{
		name: "scrapejob_concurrency_limit",
		type: "gauge",
		help: "Fetches the latest run may have in flight at most.",
		read: (m) => m.concurrencyLimit,
	},
	{
		name: "scrapejob_changes_total",
		type: "counter",
		help: "Ok records of the latest run by change against the job's earlier runs.",
		label: { name: "change", values: CHANGE_KINDS },
		read: (m, value) => m.changes[value as ChangeKind],
	},
	{
		name: "scrapejob_contract_broken_rules",
		type: "gauge",
		help: "Rules of the data contract the latest run broke (0: kept, or none declared); a run that broke one is not promoted to latest.",
		read: (m) => m.contractBroken,
	},
	{
		name: "scrapejob_breaker_open",
		type: "gauge",
		help: "1 for each domain whose paid-failure breaker is open at the end of the latest run (only those domains: no series otherwise).",
		label: { name: "domain", values: (m) => Object.keys(m.breakersOpen) },
		read: (m, value) => (value === undefined ? 0 : (m.breakersOpen[value] ?? 0)),
	},
];

/** The values of a metric's extra label for one run's model; `[undefined]` for a metric without one. */
export function labelValues(spec: MetricSpec, metrics: RunMetrics): readonly (string | undefined)[] {
	if (!spec.label) return [undefined];
	return typeof spec.label.values === "function" ? spec.label.values(metrics) : spec.label.values;
}

/** A run's metrics before its first progress: nothing done yet. */
export function initialMetrics(
	job: string,
	shard: string,
	concurrencyLimit: number,
	lastSuccessSeconds: number,
	worker = "",
) {
	const metrics: RunMetrics = {
		job,
		shard,
		worker,
		lastSuccessSeconds,
		durationSeconds: 0,
		targets: { ok: 0, failed: 0, skipped: 0 },
		requests: { ok: 0, failed: 0, retried: 0, rate_limited: 0 },
		retries: 0,
		creditsUsed: 0,
		inflight: 0,
		concurrencyLimit,
		changes: { new: 0, changed: 0, unchanged: 0 },
		contractBroken: 0,
		breakersOpen: {},
	};
	return metrics;
}

/** A progress snapshot into the model (mid-run: what the runner has counted so far). */
export function applySnapshot(metrics: RunMetrics, snapshot: ProgressSnapshot, elapsedMs: number): void {
	metrics.durationSeconds = elapsedMs / 1000;
	metrics.targets = { ok: snapshot.ok, failed: snapshot.failed, skipped: snapshot.skipped };
	metrics.requests = { ...metrics.requests, ok: snapshot.ok, failed: snapshot.failed, retried: snapshot.retries };
	metrics.retries = snapshot.retries;
	metrics.creditsUsed = snapshot.creditsUsed;
	metrics.inflight = snapshot.inFlight;
}

/** The summary into the model (the run ended): the same figures as summary.json. */
export function applySummary(metrics: RunMetrics, summary: RunSummary): void {
	const status = summary.targets.by_status;
	metrics.durationSeconds = (summary.session?.wall_ms ?? summary.wall_ms) / 1000;
	metrics.targets = { ok: status.ok, failed: status.failed, skipped: status.skipped };
	metrics.requests = {
		ok: status.ok,
		failed: status.failed,
		retried: summary.retries,
		rate_limited: summary.rate_limit_pauses,
	};
	metrics.retries = summary.retries;
	metrics.creditsUsed = summary.credits.used;
	metrics.inflight = 0;
	metrics.changes = { ...(summary.changes ?? { new: 0, changed: 0, unchanged: 0 }) };
	metrics.contractBroken = summary.contract?.broken.length ?? 0;
	metrics.breakersOpen = Object.fromEntries((summary.breakers ?? []).map((breaker) => [breaker.domain, 1]));
}
