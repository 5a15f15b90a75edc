import type { RecordStatus, ResultRecord } from "../output/index.js";
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
	const tasks = { created: prior?.tasks ?? 0, completed: 0, failed: 0 };

	return {
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
