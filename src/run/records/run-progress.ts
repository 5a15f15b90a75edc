import type { Clock } from "../../common/index.js";
import type { SendGate } from "../flow/send-gate.js";
import type { RunStatistics } from "./run-statistics.js";

/** Where a run stands, as `onProgress` receives it (as records are written, and each second of a pause). */
export interface ProgressSnapshot {
	/** Targets with a record, every session of the run included (`summary.targets.done`). */
	readonly done: number;
	/**
	 * Targets the run knows of. A crawl's grows as it finds pages, and counts some that get no record
	 * (where a redirect landed, a page robots.txt refuses): once a crawl completes, one more snapshot
	 * says `total` equal to `done`, with nothing in flight.
	 */
	readonly total: number;
	/** Records by status (`summary.targets.by_status`). */
	readonly ok: number;
	readonly failed: number;
	readonly skipped: number;
	/** Credits the run used so far, every session included (`summary.credits.used`). */
	readonly creditsUsed: number;
	/** Requests beyond the first per recorded target (`summary.retries`). */
	readonly retries: number;
	/** Targets being fetched, the one whose record this snapshot reports included. */
	readonly inFlight: number;
	/** Records written in this session (a resumed run's `done` includes the earlier sessions'): for rates. */
	readonly sessionDone: number;
	/**
	 * While nothing is sent: why, and for how long still (null: until probes get an answer, or the turn
	 * comes). `share_wait`: a shard waiting for a turn on the key while more shards are busy than it has slots.
	 */
	readonly paused: {
		readonly reason: "rate_limited" | "service_unavailable" | "share_wait";
		readonly leftMs: number | null;
	} | null;
}

export interface ProgressParts {
	readonly stats: RunStatistics;
	/** Targets the run knows of: a crawl's grows as it discovers pages. */
	readonly total: () => number;
	readonly inFlight: () => number;
	readonly gate: SendGate;
	/** A shard waiting for its turn on the key (shares of the key's slots): it sends nothing meanwhile. */
	readonly waitingTurn?: () => boolean;
	readonly clock: Clock;
	readonly onProgress?: (snapshot: ProgressSnapshot) => void;
	/** Records of targets the job no longer has (a resume with --force): written, not done. @default 0 */
	readonly superseded?: number;
}

export interface ProgressReporter {
	/** Tell the caller where the run stands (after each record). */
	report(): void;
	/**
	 * The run's work is over: a crawl that completed tells the caller once more, its total now what is
	 * done (the pages it knew of without fetching them have no record to wait for).
	 */
	finish(crawlComplete: boolean): void;
	close(): void;
}

/**
 * The run's progress for the caller (the terminal's progress line, a library's callback): after each
 * record, and once a second while nothing is sent (the service's pause, a shard's wait for its turn).
 */
export function createProgressReporter(parts: ProgressParts): ProgressReporter {
	const { stats, gate, clock, onProgress } = parts;
	const superseded = parts.superseded ?? 0;
	const pauseState = (): ProgressSnapshot["paused"] => {
		const reason = gate.pauseReason();
		if (reason === null) return parts.waitingTurn?.() ? { reason: "share_wait", leftMs: null } : null;
		const left = gate.pausedUntil - clock();
		return { reason, leftMs: reason === "rate_limited" && left > 0 ? left : null };
	};
	let lastTotal: number | null = null;
	const report = (settled = false) => {
		const done = stats.done - superseded;
		// A crawl's total grows as it discovers pages: never shown below what is done.
		lastTotal = settled ? done : Math.max(parts.total(), done);
		onProgress?.({
			done,
			total: lastTotal,
			ok: stats.byStatus.ok,
			failed: stats.byStatus.failed,
			skipped: stats.byStatus.skipped,
			creditsUsed: stats.creditsUsed,
			retries: stats.retries,
			inFlight: parts.inFlight(),
			sessionDone: stats.sessionDone,
			paused: pauseState(),
		});
	};
	const pauseTicker = onProgress
		? setInterval(() => {
				if (pauseState() !== null) report();
			}, 1000)
		: undefined;
	pauseTicker?.unref();
	return {
		report: onProgress ? () => report() : () => undefined,
		finish: (crawlComplete) => {
			if (onProgress && crawlComplete && lastTotal !== stats.done - superseded) report(true);
		},
		close: () => clearInterval(pauseTicker),
	};
}
