import type { RecordStatus, ResultRecord, RunSummary } from "../output/index.js";
import { createLatencyHistogram } from "./latency-histogram.js";
import type { PriorProgress } from "./resume-state.js";

/** Counters of one run (across its resumed sessions), kept apart from the runner like Crawlee's Statistics. */
export function createRunStatistics(prior: PriorProgress | null) {
	const byStatus: Record<RecordStatus, number> = { ok: 0, failed: 0, skipped: 0, ...prior?.byStatus };
	const creditsByMode: Record<string, number> = { ...prior?.creditsByMode };
	const errorsByKind: Record<string, number> = { ...prior?.errorsByKind };
	const latency = createLatencyHistogram();
	let creditsUsed = prior?.creditsUsed ?? 0;
	let retries = prior?.retries ?? 0;
	let creditsRemaining: number | null = null;
	let sessionDone = 0;
	const tasks = {
		created: (prior?.tasks.completed ?? 0) + (prior?.tasks.failed ?? 0),
		completed: prior?.tasks.completed ?? 0,
		failed: prior?.tasks.failed ?? 0,
		/** Tasks whose targets were abandoned by a stop: journalled, left for `--resume` to poll. */
		leftPending: 0,
	};

	return {
		/** Fetches sent and then given up when the run stopped (this session): the service may charge them. */
		abandoned: 0,
		recordFinished(record: ResultRecord) {
			byStatus[record.status] += 1;
			sessionDone += 1;
			if (record.credits_used) {
				creditsUsed += record.credits_used;
				creditsByMode[record.mode_requested] = (creditsByMode[record.mode_requested] ?? 0) + record.credits_used;
			}
			if (record.error) errorsByKind[record.error] = (errorsByKind[record.error] ?? 0) + 1;
			if (record.status !== "skipped") latency.record(record.duration_ms);
			if (record.task_id) {
				if (record.status === "ok") tasks.completed += 1;
				else tasks.failed += 1;
			}
		},
		retried() {
			retries += 1;
		},
		taskCreated() {
			tasks.created += 1;
		},
		creditsSeen(remaining: number | undefined) {
			if (remaining !== undefined) creditsRemaining = remaining;
		},
		get done() {
			return byStatus.ok + byStatus.failed + byStatus.skipped;
		},
		get sessionDone() {
			return sessionDone;
		},
		get byStatus() {
			return byStatus;
		},
		get creditsUsed() {
			return creditsUsed;
		},
		get creditsRemaining() {
			return creditsRemaining;
		},
		get retries() {
			return retries;
		},
		creditsByMode,
		errorsByKind,
		tasks,
		latency,
	};
}
export type RunStatistics = ReturnType<typeof createRunStatistics>;

/** `summary.json` from the statistics and what only the runner knows (why it stopped, the gate's pauses). */
export function buildSummary(
	stats: RunStatistics,
	run: {
		job: string;
		runId: string;
		resumed: boolean;
		stopReason: string | null;
		survey: { total: number; duplicates: number; skippedRows: number };
		maxCredits: number | null;
		rateLimitPauses: number;
		concurrency: number;
		startedMs: number;
		finishedMs: number;
	},
): RunSummary {
	const done = stats.done;
	const wallMs = run.finishedMs - run.startedMs;
	return {
		job: run.job,
		run_id: run.runId,
		complete: run.stopReason === null && done >= run.survey.total,
		stopped_reason: run.stopReason,
		targets: {
			total: run.survey.total,
			done,
			remaining: Math.max(0, run.survey.total - done),
			by_status: { ...stats.byStatus },
			duplicates: run.survey.duplicates,
			skipped_rows: run.survey.skippedRows,
		},
		credits: {
			used: stats.creditsUsed,
			by_mode: { ...stats.creditsByMode },
			remaining: stats.creditsRemaining,
			max_credits: run.maxCredits,
		},
		retries: stats.retries,
		rate_limit_pauses: run.rateLimitPauses,
		tasks: {
			created: stats.tasks.created,
			completed: stats.tasks.completed,
			failed: stats.tasks.failed,
			left_pending: stats.tasks.leftPending,
		},
		errors_by_kind: { ...stats.errorsByKind },
		abandoned: stats.abandoned,
		started_at: new Date(run.startedMs).toISOString(),
		finished_at: new Date(run.finishedMs).toISOString(),
		wall_ms: wallMs,
		throughput_per_s: wallMs > 0 ? (stats.sessionDone * 1000) / wallMs : 0,
		latency_ms: { p50: stats.latency.quantile(0.5), p95: stats.latency.quantile(0.95) },
		concurrency: run.concurrency,
		resumed_from: run.resumed ? run.runId : null,
	};
}
