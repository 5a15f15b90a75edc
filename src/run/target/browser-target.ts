import { type BrowserServiceAccess, BrowserSessionError, runBrowserSession } from "../../browser/index.js";
import { type Clock, createTaskQueue, parseDuration, type Sleep, type TaskQueue } from "../../common/index.js";
import type { Target } from "../../job/index.js";
import type { FetchResult } from "./fetch-target.js";
import { fullJitterDelayMs } from "./retry-timing.js";

/** A session's outcome: a fetch's, but it writes no page file of its own, so it cannot fail the output. */
export type SessionResult = Exclude<FetchResult, { kind: "output_failed" }>;

export interface BrowserTargetDeps {
	readonly access: BrowserServiceAccess;
	/** Sessions open at once never exceed the account's browser `concurrency`. */
	readonly sessions: TaskQueue;
	readonly retry: { readonly attempts: number; readonly backoffMs: number; readonly maxBackoffMs: number };
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly random: () => number;
	readonly signal: AbortSignal;
	isStopping(): boolean;
	onRetry(targetId: string, kind: string): void;
}

/** A session limit answer (429) waits this long before the next try; it uses no attempt. */
const BUSY_WAIT_MS = 1000;
/** 429s in a row for one target before it fails `browser_busy` (another program holds the sessions). */
const MAX_BUSY_WAITS = 60;

/** The sessions of a run: at most the account's browser `concurrency` open at once. */
export function createSessionLimiter(access: BrowserServiceAccess): TaskQueue {
	return createTaskQueue({ concurrency: Math.max(1, access.concurrency) });
}

/**
 * A `browser_session:` target: a fresh session per attempt, retried per the scraper's rules — a session
 * that died is retried with full-jitter backoff, a refused key stops the run, a page that did not load
 * or a step that failed is final. `evaluate` values come back beside the result for `data.evaluate`.
 */
export async function fetchBrowserTarget(
	target: Target & { browserSession: NonNullable<Target["browserSession"]> },
	deps: BrowserTargetDeps,
): Promise<{ result: SessionResult; evaluated: unknown[] }> {
	let attempts = 0;
	let busyWaits = 0;
	for (;;) {
		if (deps.signal.aborted)
			return { result: { kind: "abandoned", taskId: null, attempts, charged: 0 }, evaluated: [] };
		attempts += 1;
		try {
			const page = await deps.sessions.run(() =>
				runBrowserSession({
					access: deps.access,
					session: target.browserSession,
					url: target.url,
					signal: deps.signal,
					stepTimeoutMs: stepTimeoutMs(target.browserSession.step_timeout),
					clock: deps.clock,
				}),
			);
			return {
				result: {
					kind: "ok",
					body: Buffer.from(page.html),
					contentType: "text/html; charset=utf-8",
					httpStatus: page.httpStatus ?? 200,
					creditsUsed: 0,
					creditsRemaining: null,
					modeUsed: "browser_session",
					attempts,
					taskId: null,
				},
				evaluated: page.evaluated,
			};
		} catch (error) {
			const failure =
				error instanceof BrowserSessionError ? error : new BrowserSessionError("lost", String(error), { cause: error });
			if (deps.signal.aborted)
				return { result: { kind: "abandoned", taskId: null, attempts, charged: 0 }, evaluated: [] };
			switch (failure.kind) {
				case "refused":
					return {
						result: { kind: "aborted", reason: "unauthorized", message: failure.message, charged: 0 },
						evaluated: [],
					};
				case "busy":
					attempts -= 1;
					busyWaits += 1;
					if (busyWaits <= MAX_BUSY_WAITS && !deps.isStopping()) {
						await deps.sleep(BUSY_WAIT_MS, deps.signal).catch(() => undefined);
						continue;
					}
					return { result: failed("browser_busy", failure.message, Math.max(1, attempts)), evaluated: [] };
				case "lost":
					if (attempts < deps.retry.attempts && !deps.isStopping()) {
						deps.onRetry(target.id, "browser_session_lost");
						await deps.sleep(fullJitterDelayMs(attempts, deps.retry, deps.random), deps.signal).catch(() => undefined);
						continue;
					}
					return { result: failed("browser_session_lost", failure.message, attempts), evaluated: [] };
				case "navigation":
					return { result: failed("navigation_error", failure.message, attempts), evaluated: [] };
				case "step":
					return { result: failed("browser_step_failed", failure.message, attempts), evaluated: [] };
				case "session_length":
					return { result: failed("browser_session_length", failure.message, attempts), evaluated: [] };
				default: {
					const unreachable: never = failure.kind;
					throw new Error(`unhandled browser failure ${String(unreachable)}`);
				}
			}
		}
	}
}

function stepTimeoutMs(written: string | undefined): number | undefined {
	return written === undefined ? undefined : (parseDuration(written) ?? undefined);
}

function failed(error: string, message: string, attempts: number): SessionResult {
	return {
		kind: "failed",
		error,
		message,
		httpStatus: null,
		creditsUsed: 0,
		creditsRemaining: null,
		modeUsed: "browser_session",
		attempts,
		taskId: null,
	};
}
