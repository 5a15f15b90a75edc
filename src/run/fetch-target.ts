import pRetry from "p-retry";
import {
	classifyFailure,
	type FailureAction,
	type ScraperClient,
	type ScraperHeaders,
	ServiceError,
} from "../api/index.js";
import { type Clock, errorMessage, type ScrapeParams, type Sleep } from "../shared/index.js";
import { fullJitterDelayMs } from "./retry-timing.js";
import type { SendGate } from "./send-gate.js";
import { type FinishedTask, pollTask, TaskDeadlineError, type TaskPollOptions } from "./task-poller.js";

/** What one target's fetch came to. Only `ok` and `failed` become records. */
export type FetchResult =
	| {
			readonly kind: "ok";
			readonly body: Buffer;
			readonly contentType: string | undefined;
			readonly httpStatus: number;
			readonly creditsUsed: number;
			readonly creditsRemaining: number | null;
			readonly modeUsed: string | null;
			readonly attempts: number;
			readonly taskId: string | null;
			/** The page title the service reported (`delivery: json`). */
			readonly title?: string;
			/** The JSON delivery object (`delivery: json`): service-side extraction and AI output are read from it. */
			readonly json?: Record<string, unknown>;
	  }
	| {
			readonly kind: "failed";
			readonly error: string;
			readonly message: string;
			readonly httpStatus: number | null;
			readonly creditsUsed: number;
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
	  }
	/** The run stopped (signal, abort) before this target finished: no record, left for `--resume`. */
	| { readonly kind: "abandoned"; readonly taskId: string | null; readonly attempts: number };

export interface FetchTargetDeps {
	readonly client: ScraperClient;
	readonly gate: SendGate;
	readonly clock: Clock;
	readonly sleep: Sleep;
	readonly random: () => number;
	readonly retry: { readonly attempts: number; readonly backoffMs: number; readonly maxBackoffMs: number };
	readonly taskPoll: TaskPollOptions;
	/** 429s in a row for one target before it is failed as `rate_limited`. @default 20 */
	readonly maxRateLimitWaits?: number;
	readonly method?: "GET" | "POST";
	/** Aborts in-flight requests and polls (after the grace period of a stop). */
	readonly signal: AbortSignal;
	/** True once the run is stopping: no further retries start. */
	isStopping(): boolean;
	/** Every scraper response's headers, for rate-limit learning and the credit balance. */
	onHeaders(headers: ScraperHeaders): void;
	/** Called (and must have journalled the id) before the task is polled. */
	onTaskId(targetId: string, taskId: string): void;
	onRetry(targetId: string, kind: string): void;
}

/** Thrown inside an attempt to end retrying with a record built from it. */
class FinalOutcome extends Error {
	readonly result: FetchResult;
	constructor(result: FetchResult) {
		super(result.kind);
		this.result = result;
	}
}

function failedTaskError(task: Extract<FinishedTask, { state: "failed" }>): ServiceError {
	// A failed task is the service's own scraping error: its message decides retrying, as for a 500.
	return new ServiceError({
		status: 500,
		errorType: task.errorType,
		detail: task.message,
		endpoint: "GET /scraper/tasks/:id",
		...(task.creditsUsed !== undefined ? { creditsUsed: task.creditsUsed } : {}),
	});
}

/**
 * Fetch one target: send, follow a task hand-off, retry per spec 7.3 (the decision is
 * `classifyFailure`'s; p-retry counts attempts; 429 waits do not use an attempt). Never throws.
 *
 * @param resumeTaskId a task id journalled by an earlier run: poll it instead of paying again.
 */
export async function fetchTarget(
	targetId: string,
	params: ScrapeParams,
	deps: FetchTargetDeps,
	resumeTaskId: string | null = null,
): Promise<FetchResult> {
	let attempts = 0;
	let taskId: string | null = resumeTaskId;
	let pendingTaskId: string | null = resumeTaskId;
	let lastHeaders: ScraperHeaders = {};
	let rateLimitWaits = 0;
	let lastDecision: FailureAction | undefined;
	const maxWaits = deps.maxRateLimitWaits ?? 20;

	const finishTask = async (id: string): Promise<FetchResult> => {
		let finished: FinishedTask;
		try {
			finished = await pollTask(deps.client, id, {
				...deps.taskPoll,
				gate: deps.gate,
				clock: deps.clock,
				sleep: deps.sleep,
				signal: deps.signal,
			});
		} catch (error) {
			if (error instanceof TaskDeadlineError) {
				throw new FinalOutcome(failure("task_timeout", error.message, null, lastHeaders, attempts, id));
			}
			if (error instanceof ServiceError && error.status === 404) {
				throw new FinalOutcome(failure("task_expired", error.message, 404, lastHeaders, attempts, id));
			}
			throw error;
		}
		deps.onHeaders(finished.headers);
		if (finished.state === "failed" && finished.targetStatus !== undefined) {
			// The target's own answer, as for a realtime passthrough: final, not retried.
			throw new FinalOutcome(
				failure(
					`target_http_${finished.targetStatus}`,
					finished.message,
					finished.targetStatus,
					finished.headers,
					attempts,
					id,
				),
			);
		}
		if (finished.state === "failed") throw failedTaskError(finished);
		// `delivery: json`: the task's JSON body is what was paid for; keep it whole, as for a realtime answer.
		const wholeJson = params.delivery === "json" && finished.raw !== undefined;
		return {
			kind: "ok",
			body: wholeJson && finished.raw ? finished.raw : finished.body,
			contentType: wholeJson ? "application/json" : undefined,
			...titleOf(wholeJson ? finished.json : undefined),
			...(wholeJson && finished.json ? { json: finished.json } : {}),
			httpStatus: finished.targetStatus ?? 200,
			// The client already fell back from the body's figures to the headers'.
			creditsUsed: finished.creditsUsed ?? 0,
			creditsRemaining: finished.creditsRemaining ?? null,
			modeUsed: finished.modeUsed ?? null,
			attempts: Math.max(attempts, 1),
			taskId: id,
		};
	};

	const attempt = async (): Promise<FetchResult> => {
		if (pendingTaskId) {
			const id = pendingTaskId;
			pendingTaskId = null;
			return finishTask(id);
		}
		if (!deps.gate.tryAcquire()) await deps.gate.acquire(deps.signal);
		attempts += 1;
		let outcome: Awaited<ReturnType<ScraperClient["realtime"]>>;
		try {
			outcome = await deps.client.realtime(params, { signal: deps.signal, method: deps.method ?? "POST" });
		} catch (error) {
			deps.gate.release(undefined);
			throw error;
		}
		deps.gate.release(outcome.headers.rateLimitRemaining);
		lastHeaders = outcome.headers;
		deps.onHeaders(outcome.headers);
		switch (outcome.kind) {
			case "content":
				return {
					kind: "ok",
					body: outcome.body,
					contentType: outcome.contentType,
					...titleOf(outcome.json),
					httpStatus: outcome.targetStatus ?? outcome.status,
					creditsUsed: outcome.headers.creditsUsed ?? 0,
					creditsRemaining: outcome.headers.creditsRemaining ?? null,
					modeUsed: outcome.headers.modeUsed ?? null,
					attempts,
					taskId,
					...(outcome.json ? { json: outcome.json } : {}),
				};
			case "target_error":
				// The service already retried inside; the target's own answer is final (service-facts §12).
				throw new FinalOutcome(
					failure(
						`target_http_${outcome.targetStatus}`,
						`the target answered ${outcome.targetStatus}`,
						outcome.targetStatus,
						outcome.headers,
						attempts,
						taskId,
					),
				);
			case "task":
				taskId = outcome.task.task_id;
				deps.onTaskId(targetId, taskId);
				return finishTask(taskId);
			default: {
				const unreachable: never = outcome;
				throw new Error(`unhandled outcome ${JSON.stringify(unreachable)}`);
			}
		}
	};

	// Most fetches succeed at once: try once before setting p-retry up, and hand a first failure to
	// p-retry as its first attempt, so its counting and every rule below see it exactly as usual.
	let firstFailure: { error: unknown } | null = null;
	try {
		return await attempt();
	} catch (error) {
		if (error instanceof FinalOutcome) return error.result;
		firstFailure = { error };
	}
	const replayFirstThenAttempt = async (): Promise<FetchResult> => {
		if (firstFailure) {
			const { error } = firstFailure;
			firstFailure = null;
			throw error;
		}
		return attempt();
	};

	try {
		return await pRetry(replayFirstThenAttempt, {
			retries: Math.max(0, deps.retry.attempts - 1),
			// Waits are ours (full jitter, and the shared 429 gate); p-retry only counts.
			minTimeout: 0,
			maxTimeout: 0,
			factor: 1,
			randomize: false,
			onFailedAttempt: async ({ error, retriesLeft, retriesConsumed }) => {
				if (error instanceof FinalOutcome) return;
				lastDecision = classifyFailure(error);
				if (lastDecision.action === "wait") {
					// A 429 is the queue being full, not an attempt at the target.
					attempts -= 1;
					rateLimitWaits += 1;
					deps.gate.pause(lastDecision.resetMs);
					return;
				}
				if (lastDecision.action === "retry" && retriesLeft > 0 && !deps.isStopping()) {
					deps.onRetry(targetId, lastDecision.kind);
					const delay = fullJitterDelayMs(retriesConsumed + 1, deps.retry, deps.random);
					if (delay > 0) await deps.sleep(delay, deps.signal);
				}
			},
			shouldConsumeRetry: ({ error }) => !(error instanceof FinalOutcome) && classifyFailure(error).action !== "wait",
			shouldRetry: ({ error }) => {
				if (error instanceof FinalOutcome || deps.isStopping() || deps.signal.aborted) return false;
				const decision = classifyFailure(error);
				if (decision.action === "wait") return rateLimitWaits < maxWaits;
				return decision.action === "retry";
			},
		});
	} catch (error) {
		if (error instanceof FinalOutcome) return error.result;
		if (deps.signal.aborted) return { kind: "abandoned", taskId, attempts };
		const decision = lastDecision ?? classifyFailure(error);
		if (decision.action === "abort") return { kind: "aborted", reason: decision.kind, message: errorMessage(error) };
		if ((decision.action === "retry" || decision.action === "wait") && deps.isStopping()) {
			return { kind: "abandoned", taskId, attempts };
		}
		const status = error instanceof ServiceError ? error.status : null;
		const kind = decision.action === "wait" ? "rate_limited" : decision.kind;
		const credits = error instanceof ServiceError ? (error.creditsUsed ?? 0) : 0;
		return {
			...failure(kind, errorMessage(error), status, lastHeaders, attempts, taskId),
			creditsUsed: credits,
		};
	}
}

function failure(
	error: string,
	message: string,
	httpStatus: number | null,
	headers: ScraperHeaders,
	attempts: number,
	taskId: string | null,
): Extract<FetchResult, { kind: "failed" }> {
	return {
		kind: "failed",
		error,
		message,
		httpStatus,
		creditsUsed: headers.creditsUsed ?? 0,
		creditsRemaining: headers.creditsRemaining ?? null,
		modeUsed: headers.modeUsed ?? null,
		attempts,
		taskId,
	};
}

/** `title` of a JSON delivery body, when it holds one. */
function titleOf(json: Record<string, unknown> | undefined): { title?: string } {
	const title = json?.title;
	return typeof title === "string" ? { title } : {};
}
