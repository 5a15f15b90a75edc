import type { CarriedBreaker, RecordStatus, ResultRecord, RunSummary } from "../../output/index.js";
import { createLatencyHistogram } from "./latency-histogram.js";

/**
 * What earlier sessions of a resumed run measured that no record holds: time spent running, 429 pauses,
 * fetches abandoned at a stop, the account's balance. Read from their last summary.json, or from the
 * journal's newer figures line when a process was killed before its summary. Zero for a new run.
 */
export interface CarriedFigures extends RunFigures {
	/** When the run's first session started (run.json's created_at), ms since the epoch. */
	readonly runStartedMs: number | null;
	/**
	 * The breakers the run's earlier invocations left open (open-run.ts takes them from the journal, which a
	 * killed process wrote too): a resume keeps them open until their cool-down.
	 */
	readonly openBreakers: readonly CarriedBreaker[];
}

const NONE_CARRIED: CarriedFigures = {
	wallMs: 0,
	rateLimitPauses: 0,
	abandoned: 0,
	runStartedMs: null,
	creditsRemaining: null,
	openBreakers: [],
};

/**
 * The run's figures that no record holds, as they stand (every session included): what summary.json
 * reports, and what the journal's figures line keeps for a resume of a process killed before its summary.
 */
export interface RunFigures {
	readonly wallMs: number;
	readonly rateLimitPauses: number;
	readonly abandoned: number;
	/** The account's credits as the service last reported them (null: no answer said so yet). */
	readonly creditsRemaining: number | null;
}

/** Figures of a journal line, with when they were taken (ms since the epoch). */
export interface TimedFigures {
	readonly atMs: number;
	readonly figures: RunFigures;
}

/**
 * The figures an earlier session carries over: its last summary.json's (none when it is missing or not a
 * summary), or `journalled` when that line is newer — a process killed before its summary wrote none.
 */
export function carriedFrom(
	previous: unknown,
	runStartedMs: number | null,
	journalled: TimedFigures | null = null,
): CarriedFigures {
	const summary = (typeof previous === "object" && previous !== null ? previous : {}) as Partial<RunSummary>;
	const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0);
	const summarized: RunFigures = {
		wallMs: count(summary.wall_ms),
		rateLimitPauses: count(summary.rate_limit_pauses),
		abandoned: count(summary.abandoned),
		creditsRemaining: typeof summary.credits?.remaining === "number" ? count(summary.credits.remaining) : null,
	};
	const finishedMs = typeof summary.finished_at === "string" ? Date.parse(summary.finished_at) : Number.NaN;
	// A summary is written after its session's last figures line: a later line is a later session's.
	const newer = journalled !== null && (!Number.isFinite(finishedMs) || journalled.atMs > finishedMs);
	return {
		...(newer ? journalled.figures : summarized),
		runStartedMs,
		openBreakers: carriedBreakers(summary.breakers),
	};
}

/** The run's figures now: the earlier sessions' (`carried`) plus this session's so far. */
export function runFigures(
	stats: RunStatistics,
	carried: CarriedFigures | undefined,
	session: { readonly rateLimitPauses: number; readonly startedMs: number; readonly nowMs: number },
): RunFigures {
	const before = carried ?? NONE_CARRIED;
	return {
		wallMs: before.wallMs + Math.max(0, session.nowMs - session.startedMs),
		rateLimitPauses: before.rateLimitPauses + session.rateLimitPauses,
		abandoned: before.abandoned + stats.abandoned,
		// A session that sent nothing (a resume with nothing left, or stopped at once) reports the last
		// balance an earlier session saw, not none.
		creditsRemaining: stats.creditsRemaining ?? before.creditsRemaining,
	};
}

/** The open breakers of a summary, each checked (the file is read back from disk). */
function carriedBreakers(breakers: unknown): CarriedBreaker[] {
	if (!Array.isArray(breakers)) return [];
	const carried: CarriedBreaker[] = [];
	for (const entry of breakers as unknown[]) {
		const { domain, reason, opened_at } = (typeof entry === "object" && entry !== null ? entry : {}) as Record<
			string,
			unknown
		>;
		const openedMs = typeof opened_at === "string" ? Date.parse(opened_at) : Number.NaN;
		if (typeof domain !== "string" || domain === "" || !Number.isFinite(openedMs)) continue;
		carried.push({ domain, reason: typeof reason === "string" ? reason : "", openedMs });
	}
	return carried;
}

/**
 * Counters of one run, kept apart from the runner like Crawlee's Statistics. Every record goes
 * through `count` exactly once: the records of earlier sessions when a run is resumed (`replay`),
 * this session's as they are written (`recordFinished`). The run's totals and this session's share
 * come from that one path, so a resumed run cannot count differently from a fresh one.
 */
export function createRunStatistics() {
	const byStatus: Record<RecordStatus, number> = { ok: 0, failed: 0, skipped: 0 };
	const creditsByMode: Record<string, number> = {};
	const errorsByKind: Record<string, number> = {};
	const latency = createLatencyHistogram();
	let creditsUsed = 0;
	let retries = 0;
	let useful = 0;
	let creditsRemaining: number | null = null;
	const session = { done: 0, creditsUsed: 0, retries: 0, tasksCreated: 0 };
	const tasks = {
		/** Tasks created over the run: finished ones of earlier sessions, and every one this session created. */
		created: 0,
		completed: 0,
		failed: 0,
		/** Tasks whose targets were abandoned by a stop: journalled, left for `--resume` to poll. */
		leftPending: 0,
	};

	/** One record into the run's totals. Retries are read from the record: requests beyond the first, 429s not included. */
	const count = (record: ResultRecord): void => {
		byStatus[record.status] += 1;
		// A record written before `useful` existed is not counted as useful: nothing judged it.
		if (record.useful === true) useful += 1;
		if (record.credits_used) {
			creditsUsed += record.credits_used;
			creditsByMode[record.mode_requested] = (creditsByMode[record.mode_requested] ?? 0) + record.credits_used;
		}
		if (record.error) errorsByKind[record.error] = (errorsByKind[record.error] ?? 0) + 1;
		retries += Math.max(0, record.attempts - 1);
		if (record.status !== "skipped" && Number.isFinite(record.duration_ms)) latency.record(record.duration_ms);
		if (record.task_id) {
			if (record.status === "ok") tasks.completed += 1;
			else tasks.failed += 1;
		}
	};

	return {
		/** Fetches sent and then given up when this session stopped: the service may charge them. */
		abandoned: 0,
		/** A record of an earlier session (read back by `--resume`). */
		replay(record: ResultRecord) {
			count(record);
			if (record.task_id) tasks.created += 1;
		},
		/** A record this session wrote. */
		recordFinished(record: ResultRecord) {
			count(record);
			session.done += 1;
			session.creditsUsed += record.credits_used;
			session.retries += Math.max(0, record.attempts - 1);
		},
		/** Credits charged for attempts of a target this session left without a record (a stop, an abort). */
		chargedWithoutRecord(credits: number) {
			creditsUsed += credits;
			session.creditsUsed += credits;
		},
		/** Credits an earlier session was charged for attempts of a target without a record (its journal's). */
		chargedEarlier(credits: number) {
			creditsUsed += credits;
		},
		/** A record this session wrote holds `credits` counted by `chargedEarlier`: counted once, not as this session's. */
		earlierChargesRecorded(credits: number) {
			creditsUsed -= credits;
			session.creditsUsed -= credits;
		},
		taskCreated() {
			tasks.created += 1;
			session.tasksCreated += 1;
		},
		creditsSeen(remaining: number | undefined) {
			if (remaining !== undefined) creditsRemaining = remaining;
		},
		get done() {
			return byStatus.ok + byStatus.failed + byStatus.skipped;
		},
		/** Records written in this session (a resumed run's `done` includes the earlier sessions'). */
		get sessionDone() {
			return session.done;
		},
		get session(): Readonly<typeof session> {
			return session;
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
		/** Records judged useful (docs/behaviour.md, "Useful records"). */
		get useful() {
			return useful;
		},
		creditsByMode,
		errorsByKind,
		tasks,
		latency,
	};
}
export type RunStatistics = ReturnType<typeof createRunStatistics>;

/**
 * `summary.json` from the statistics and what only the runner knows (why it stopped, the gate's
 * pauses). Top-level figures are the run's, every session included; `session` is this session's
 * share of them (docs/reference/outputs.md, "summary.json").
 */
export function buildSummary(
	stats: RunStatistics,
	run: {
		job: string;
		runId: string;
		resumed: boolean;
		stopReason: string | null;
		survey: { total: number; duplicates: number; skippedRows: number };
		maxCredits: number | null;
		/** This session's 429 pauses. */
		rateLimitPauses: number;
		concurrency: number;
		/** This session's start and end. */
		startedMs: number;
		finishedMs: number;
		/** Earlier sessions' figures that no record holds (a resumed run). */
		carried?: CarriedFigures;
		/** Records of targets the job no longer has (a resume with --force): written, but not done. */
		superseded?: number;
	},
): RunSummary {
	const carried = run.carried ?? NONE_CARRIED;
	const superseded = run.superseded ?? 0;
	const done = Math.max(0, stats.done - superseded);
	const sessionWallMs = Math.max(0, run.finishedMs - run.startedMs);
	const figures = runFigures(stats, carried, {
		rateLimitPauses: run.rateLimitPauses,
		startedMs: run.startedMs,
		nowMs: run.finishedMs,
	});
	const wallMs = figures.wallMs;
	const perSecond = (count: number, ms: number) => (ms > 0 ? (count * 1000) / ms : 0);
	return {
		job: run.job,
		run_id: run.runId,
		complete: run.stopReason === null && done >= run.survey.total,
		stopped_reason: run.stopReason,
		stop_message: null,
		targets: {
			total: run.survey.total,
			done,
			remaining: Math.max(0, run.survey.total - done),
			by_status: { ...stats.byStatus },
			duplicates: run.survey.duplicates,
			skipped_rows: run.survey.skippedRows,
			...(superseded > 0 ? { superseded } : {}),
		},
		credits: {
			used: stats.creditsUsed,
			by_mode: { ...stats.creditsByMode },
			remaining: figures.creditsRemaining,
			max_credits: run.maxCredits,
		},
		retries: stats.retries,
		rate_limit_pauses: figures.rateLimitPauses,
		tasks: {
			created: stats.tasks.created,
			completed: stats.tasks.completed,
			failed: stats.tasks.failed,
			left_pending: stats.tasks.leftPending,
		},
		errors_by_kind: { ...stats.errorsByKind },
		useful: { records: stats.useful, rate: done > 0 ? Math.round((stats.useful / done) * 10_000) / 10_000 : null },
		abandoned: figures.abandoned,
		started_at: new Date(carried.runStartedMs ?? run.startedMs).toISOString(),
		finished_at: new Date(run.finishedMs).toISOString(),
		wall_ms: wallMs,
		throughput_per_s: perSecond(done, wallMs),
		latency_ms: { p50: stats.latency.quantile(0.5), p95: stats.latency.quantile(0.95) },
		concurrency: run.concurrency,
		resumed_from: run.resumed ? run.runId : null,
		session: {
			started_at: new Date(run.startedMs).toISOString(),
			wall_ms: sessionWallMs,
			done: stats.session.done,
			credits_used: stats.session.creditsUsed,
			retries: stats.session.retries,
			rate_limit_pauses: run.rateLimitPauses,
			tasks_created: stats.session.tasksCreated,
			abandoned: stats.abandoned,
			throughput_per_s: perSecond(stats.session.done, sessionWallMs),
		},
	};
}
