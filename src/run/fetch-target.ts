import {
	BodySinkError,
	type BodySpill,
	classifyFailure,
	classifyScrapingError,
	type FailureAction,
	NetworkError,
	type ScraperClient,
	type ScraperHeaders,
	type SpilledBody,
} from "../api/index.js";
import { type Clock, errorMessage, type ScrapeParams, type Sleep } from "../common/index.js";
import { OutputError } from "../output/index.js";
import type { OutageMonitor } from "./outage-monitor.js";
import { fullJitterDelayMs } from "./retry-timing.js";
import type { SendGate } from "./send-gate.js";
import { type FinishedTask, pollTask, type TaskPollOptions } from "./task-poller.js";

/** What one target's fetch came to. Only `ok` and `failed` become records. */
export type FetchResult =
	| {
			readonly kind: "ok";
			readonly body: Buffer;
			readonly contentType: string | undefined;
			readonly httpStatus: number;
			/** As the service reported it; null when it did not, or reported nonsense (the budget then books the worst case). */
			readonly creditsUsed: number | null;
			readonly creditsRemaining: number | null;
			readonly modeUsed: string | null;
			readonly attempts: number;
			readonly taskId: string | null;
			/** The page title the service reported (`delivery: json`). */
			readonly title?: string;
			/** The JSON delivery object (`delivery: json`): service-side extraction and AI output are read from it. */
			readonly json?: Record<string, unknown>;
			/** Where the target's redirects ended, when the service named it (`X-Final-Url`). */
			readonly finalUrl?: string;
			/** The page went to the page store's file (or was only counted and hashed) on its way in; `body` is empty. */
			readonly spilled?: SpilledBody;
	  }
	| {
			readonly kind: "failed";
			readonly error: string;
			readonly message: string;
			readonly httpStatus: number | null;
			readonly creditsUsed: number | null;
			readonly creditsRemaining: number | null;
			readonly modeUsed: string | null;
			readonly attempts: number;
			readonly taskId: string | null;
	  }
	/** The account cannot go on (401/402/403): no record, the run stops, the target is left for `--resume`. */
	| {
			readonly kind: "aborted";
			readonly reason: "unauthorized" | "insufficient_credits" | "forbidden";
			readonly message: string;
			/** Credits earlier attempts of this target were charged (booked though no record is written). */
			readonly charged: number;
	  }
	/** The run stopped (signal, outage, abort) before this target finished: no record, left for `--resume`. */
	| {
			readonly kind: "abandoned";
			readonly taskId: string | null;
			readonly attempts: number;
			/** Credits earlier attempts of this target were charged (booked though no record is written). */
			readonly charged: number;
	  }
	/** The page could not be written to its file (disk full, read-only): the run stops as for any output failure. */
	| { readonly kind: "output_failed"; readonly path: string; readonly cause: unknown };

export interface FetchTargetDeps {
	readonly client: ScraperClient;
	readonly gate: SendGate;
	readonly outage: OutageMonitor;
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly random: () => number;
	readonly retry: { readonly attempts: number; readonly backoffMs: number; readonly maxBackoffMs: number };
	readonly taskPoll: TaskPollOptions;
	/** 429s in a row for one target before it is failed as `rate_limited`. @default 20 */
	readonly maxRateLimitWaits?: number;
	readonly method?: "GET" | "POST";
	/** Body cap per answer (`max_body_mb`), bytes. */
	readonly maxBodyBytes?: number;
	/** Aborts in-flight requests and polls (after the grace period of a stop). */
	readonly signal: AbortSignal;
	/** True once the run is stopping: no further retries start. */
	isStopping(): boolean;
	/** Every scraper response's headers, for rate-limit learning and the credit balance. */
	onHeaders(headers: ScraperHeaders): void;
	/** Called (and must have journalled the id) before the task is polled. */
	onTaskId(targetId: string, taskId: string): void;
	onRetry(targetId: string, kind: string): void;
	/** A 429 asked for more than the cap: said once per run by the caller. */
	onResetCapped(): void;
}

/** `wait_seconds` a navigation-timeout retry asks for: the service's advice, within its 0–60 range. */
const NAVIGATION_RETRY_WAIT_SECONDS = [5, 10, 20, 30, 45, 60] as const;

/** What one attempt came to: a result, or a failure for the classifier. */
type AttemptOutcome =
	| { readonly result: FetchResult }
	| { readonly failure: unknown; readonly decision?: FailureAction };

/**
 * The most one fetch can plausibly cost: the dearest mode with every option is a few dozen credits. A
 * larger figure (`X-Credits-Used: 1e308`) is garbage, and would turn the run's sums into Infinity.
 */
export const MAX_CREDITS_PER_FETCH = 1000;

/** A credit figure as the budget may trust it: a plausible non-negative number, else null (unknown: the worst case). */
export function trustedCredits(value: number | undefined): number | null {
	return value !== undefined && value >= 0 && value <= MAX_CREDITS_PER_FETCH ? value : null;
}

/**
 * Fetch one target: send, follow a task hand-off, and retry per the service's rules (docs/service.md, "Retries") in one explicit loop (in the
 * style of ky's `_retry`): each failure is classified once, then a `switch` decides — wait out a 429
 * without spending an attempt, wait out an outage the same way, retry after a full-jitter backoff, fail
 * the target, or stop the run. Never throws.
 *
 * @param resumeTaskId a task id journalled by an earlier run: poll it instead of paying again.
 */
export async function fetchTarget(
	targetId: string,
	params: ScrapeParams,
	deps: FetchTargetDeps,
	resumeTaskId: string | null = null,
	spill?: BodySpill,
): Promise<FetchResult> {
	/** Requests that reached the service, 429s not included: what the record reports. */
	let attempts = 0;
	/** Attempts that count against `retry.attempts`: failures during a (possible) outage do not. */
	let spent = 0;
	/** The outage monitor's epoch when the last attempt was sent (outage-monitor.ts, `answered`). */
	let sentInEpoch = 0;
	/** When the latest attempt was sent: a silent service's outage is counted from there. */
	let sentAt = 0;
	let taskId: string | null = resumeTaskId;
	let pendingTaskId: string | null = resumeTaskId;
	let lastHeaders: ScraperHeaders = {};
	let rateLimitWaits = 0;
	let navigationRetries = 0;
	let request = params;
	const maxWaits = deps.maxRateLimitWaits ?? 20;
	/**
	 * Credits the service reported for this target's earlier attempts that failed (a charged 5xx, an answer
	 * cut after its headers): booked on the record with the last attempt's, whatever the outcome.
	 */
	let chargedBefore = 0;
	const abandoned = (): FetchResult => ({ kind: "abandoned", taskId, attempts, charged: chargedBefore });
	/** The result with the earlier attempts' charges added (an unknown cost stays unknown: the worst case). */
	const withEarlierCharges = (result: FetchResult): FetchResult => {
		if (chargedBefore === 0 || (result.kind !== "ok" && result.kind !== "failed") || result.creditsUsed === null)
			return result;
		return { ...result, creditsUsed: result.creditsUsed + chargedBefore };
	};
	const failed = (
		error: string,
		message: string,
		httpStatus: number | null,
		headers = lastHeaders,
		reported?: number,
	): FetchResult => ({
		kind: "failed",
		error,
		message,
		httpStatus,
		// A scraping error's body (or a cut-off answer's header) may say what the failed fetch cost.
		// A body cut off at max_body_mb was paid for whatever it cost: unknown, the caller books the worst case.
		creditsUsed:
			trustedCredits(reported) ?? trustedCredits(headers.creditsUsed) ?? (error === "body_too_large" ? null : 0),
		creditsRemaining: headers.creditsRemaining ?? null,
		modeUsed: headers.modeUsed ?? null,
		attempts: Math.max(attempts, 1),
		taskId,
	});

	/** A task to its end: finished, failed at the target, or a failure for the classifier. */
	const followTask = async (id: string): Promise<AttemptOutcome> => {
		const outcome = await pollTask(deps.client, id, {
			...deps.taskPoll,
			gate: deps.gate,
			clock: deps.clock,
			sleep: deps.sleep,
			signal: deps.signal,
		});
		switch (outcome.kind) {
			case "deadline":
				return {
					result: failed(
						"task_timeout",
						`task ${id} still ${outcome.lastStatus} after ${Math.round(outcome.deadlineMs / 1000)} s`,
						null,
					),
				};
			case "expired":
				return { result: failed("task_expired", `task ${id} is unknown or its result expired`, 404) };
			case "error":
				return { failure: outcome.error };
			case "finished":
				return finishedTask(id, outcome.task);
			default: {
				const unreachable: never = outcome;
				throw new Error(`unhandled poll outcome ${JSON.stringify(unreachable)}`);
			}
		}
	};

	const finishedTask = (id: string, task: FinishedTask): AttemptOutcome => {
		deps.onHeaders(task.headers);
		if (task.state === "failed") {
			// The target's own answer, as for a realtime passthrough: final, not retried.
			if (task.targetStatus !== undefined) {
				return { result: failed(`target_http_${task.targetStatus}`, task.message, task.targetStatus, task.headers) };
			}
			// The service's scraping error: its message decides retrying, as for a realtime 500.
			return {
				failure: new Error(task.message),
				decision: classifyScrapingError(500, "Scraping failed", task.message),
			};
		}
		// `delivery: json`: the task's JSON body is what was paid for; keep it whole, as for a realtime answer.
		const wholeJson = params.delivery === "json" && task.raw !== undefined;
		return {
			result: {
				kind: "ok",
				body: wholeJson && task.raw ? task.raw : task.body,
				contentType: wholeJson ? "application/json" : undefined,
				title: titleOf(wholeJson ? task.json : undefined),
				httpStatus: task.targetStatus ?? 200,
				creditsUsed: trustedCredits(task.creditsUsed),
				creditsRemaining: task.creditsRemaining ?? null,
				modeUsed: task.modeUsed ?? null,
				attempts: Math.max(attempts, 1),
				taskId: id,
				json: wholeJson ? task.json : undefined,
				finalUrl: task.headers.finalUrl,
				spilled: undefined,
			},
		};
	};

	const sendOnce = async (): Promise<AttemptOutcome> => {
		if (!deps.gate.tryAcquire()) await deps.gate.acquire(deps.signal);
		sentInEpoch = deps.outage.epoch;
		sentAt = deps.clock();
		attempts += 1;
		spent += 1;
		let releaseHold: (() => void) | undefined;
		let outcome: Awaited<ReturnType<ScraperClient["realtime"]>>;
		try {
			outcome = await deps.client.realtime(request, {
				signal: deps.signal,
				method: deps.method ?? "POST",
				maxBodyBytes: deps.maxBodyBytes,
				spill,
				// A 429 holds every other send from its status line on, not from when its body has been read.
				onStatus: (status) => {
					if (status === 429) releaseHold = deps.gate.hold("rate_limited");
				},
			});
		} catch (error) {
			deps.gate.release(undefined);
			if (error instanceof BodySinkError) {
				releaseHold?.();
				return { result: outputFailed(error) };
			}
			const decision = classifyFailure(error);
			if (decision.action === "wait") deps.gate.pause(decision.resetMs);
			releaseHold?.();
			return { failure: error, decision };
		}
		releaseHold?.();
		deps.gate.release(outcome.headers.rateLimitRemaining);
		lastHeaders = outcome.headers;
		deps.onHeaders(outcome.headers);
		deps.outage.answered(sentInEpoch);
		switch (outcome.kind) {
			case "content":
				// Every member written, absent ones as undefined: one object shape for every page, no spreads.
				return {
					result: {
						kind: "ok",
						body: outcome.body,
						contentType: outcome.contentType,
						title: titleOf(outcome.json),
						httpStatus: outcome.targetStatus ?? outcome.status,
						creditsUsed: trustedCredits(outcome.headers.creditsUsed),
						creditsRemaining: outcome.headers.creditsRemaining ?? null,
						modeUsed: outcome.headers.modeUsed ?? null,
						attempts,
						taskId,
						json: outcome.json,
						finalUrl: outcome.headers.finalUrl,
						spilled: outcome.spilled,
					},
				};
			case "target_error":
				// The service already retried inside; the target's own answer is final (docs/service.md, "Where the documentation is silent").
				return {
					result: failed(
						`target_http_${outcome.targetStatus}`,
						`the target answered ${outcome.targetStatus}`,
						outcome.targetStatus,
					),
				};
			case "task":
				taskId = outcome.task.task_id;
				deps.onTaskId(targetId, taskId);
				return followTask(taskId);
			default: {
				const unreachable: never = outcome;
				throw new Error(`unhandled outcome ${JSON.stringify(unreachable)}`);
			}
		}
	};

	for (;;) {
		let outcome: AttemptOutcome;
		try {
			if (pendingTaskId) {
				const id = pendingTaskId;
				pendingTaskId = null;
				outcome = await followTask(id);
			} else {
				outcome = await sendOnce();
			}
		} catch (error) {
			// Only an abort gets here (a stop past its grace period): the target is left for --resume.
			if (deps.signal.aborted) return abandoned();
			outcome = { failure: error };
		}
		if ("result" in outcome) return withEarlierCharges(outcome.result);
		const { failure } = outcome;
		const decision = outcome.decision ?? classifyFailure(failure);
		// What this failed attempt cost: retried or not, it is paid for.
		const charge = decision.action === "wait" ? 0 : (trustedCredits(creditsOf(failure)) ?? 0);
		if (deps.signal.aborted) {
			chargedBefore += charge;
			return abandoned();
		}
		switch (decision.action) {
			case "wait": {
				// A 429 is the queue being full, not an attempt at the target.
				attempts -= 1;
				spent -= 1;
				rateLimitWaits += 1;
				if (decision.capped) deps.onResetCapped();
				if (deps.isStopping()) return abandoned();
				if (rateLimitWaits > maxWaits) return failed("rate_limited", errorMessage(failure), 429);
				continue;
			}
			case "retry": {
				// This attempt's slot is released already: what the gate counts in flight are other fetches.
				let sign = decision.serviceDown
					? deps.outage.failed(targetId, deps.gate.inFlight > 0, isNoAnswer(failure), sentAt)
					: "count";
				if (sign === "probe") {
					try {
						sign = await deps.outage.confirm(deps.signal);
					} catch {
						return abandoned();
					}
				}
				if (sign === "outage") {
					// An outage: the failed attempt does not count, and the target waits with the whole queue.
					spent -= 1;
					chargedBefore += charge;
					try {
						await deps.gate.unpaused(deps.signal);
					} catch {
						return abandoned();
					}
					if (deps.isStopping()) return abandoned();
					continue;
				}
				// The service failed the fetch before this one too: maybe an outage, so this one is free.
				if (sign === "free") spent -= 1;
				if (!decision.serviceDown) deps.outage.answered(sentInEpoch);
				if (spent >= deps.retry.attempts) {
					return withEarlierCharges(
						failed(decision.kind, errorMessage(failure), statusOf(failure), lastHeaders, creditsOf(failure)),
					);
				}
				chargedBefore += charge;
				if (deps.isStopping()) return abandoned();
				deps.onRetry(targetId, decision.kind);
				// A realtime call that outlived this client's deadline unanswered may still be running (and
				// charged) at the service: the next attempt asks for a task id at once (`async`), so that no
				// further attempt can outlive a deadline unseen and be paid for again.
				if (outlivedDeadline(failure)) request = { ...request, async: true };
				if (decision.raiseWaitSeconds) {
					request = {
						...request,
						wait_seconds: Math.max(request.wait_seconds ?? 0, waitSecondsFor(navigationRetries)),
					};
					navigationRetries += 1;
				}
				try {
					await deps.sleep(fullJitterDelayMs(Math.max(1, spent), deps.retry, deps.random), deps.signal);
				} catch {
					return abandoned();
				}
				continue;
			}
			case "fail":
				if (!(decision.kind === "dns_failed" || decision.kind === "navigation_error"))
					deps.outage.answered(sentInEpoch);
				return withEarlierCharges(
					failed(decision.kind, errorMessage(failure), statusOf(failure), lastHeaders, creditsOf(failure)),
				);
			case "abort":
				return { kind: "aborted", reason: decision.kind, message: errorMessage(failure), charged: chargedBefore };
			default: {
				const unreachable: never = decision;
				throw new Error(`unhandled decision ${JSON.stringify(unreachable)}`);
			}
		}
	}
}

/** A body the sink could not store: the page store's `OutputError` names the file and the disk's error. */
function outputFailed(error: BodySinkError): FetchResult {
	const { cause } = error;
	return cause instanceof OutputError
		? { kind: "output_failed", path: cause.path, cause: cause.cause }
		: { kind: "output_failed", path: `the body of ${error.endpoint}`, cause };
}

/** A realtime call this client gave up on at its deadline, before the service's status line came. */
function outlivedDeadline(error: unknown): boolean {
	return error instanceof NetworkError && error.failure === "timeout" && error.answeredStatus === null;
}

/** The service gave no answer at all (no status line): nothing says the target was the trouble. */
function isNoAnswer(error: unknown): boolean {
	return error instanceof NetworkError && error.answeredStatus === null;
}

function waitSecondsFor(retry: number): number {
	return NAVIGATION_RETRY_WAIT_SECONDS[Math.min(retry, NAVIGATION_RETRY_WAIT_SECONDS.length - 1)]!;
}

function creditsOf(error: unknown): number | undefined {
	const credits = (error as { creditsUsed?: unknown } | null)?.creditsUsed;
	return typeof credits === "number" ? credits : undefined;
}

function statusOf(error: unknown): number | null {
	const status = (error as { status?: unknown } | null)?.status;
	return typeof status === "number" ? status : null;
}

/** `title` of a JSON delivery body, when it holds one. */
function titleOf(json: Record<string, unknown> | undefined): string | undefined {
	const title = json?.title;
	return typeof title === "string" ? title : undefined;
}
