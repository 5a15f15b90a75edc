import {
	BodySinkError,
	type BodySpill,
	classifyFailure,
	classifyScrapingError,
	type FailureAction,
	type ScraperClient,
	type ScraperHeaders,
} from "../../api/index.js";
import { type Clock, creditCostRange, errorMessage, type ScrapeParams, type Sleep } from "../../common/index.js";
import type { OutageMonitor } from "../flow/outage-monitor.js";
import type { SendGate } from "../flow/send-gate.js";
import {
	answerOf,
	creditsOf,
	type FetchResult,
	failedResult,
	isNoAnswer,
	namedMode,
	outlivedDeadline,
	outputFailed,
	statusOf,
	titleOf,
	trustedCredits,
} from "./fetch-result.js";
import { fullJitterDelayMs } from "./retry-timing.js";
import { type FinishedTask, pollTask, type TaskPollOptions } from "./task-poller.js";

export { type FetchResult, MAX_CREDITS_PER_FETCH, trustedCredits } from "./fetch-result.js";

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
	/**
	 * Aborted as the run stops: ends a wait between attempts (backoff, outage, a 429's reset, the send
	 * gate) at once, nothing being out at the service then. Without it, those waits end with `signal`.
	 */
	readonly stopped?: AbortSignal;
	/** True once the run is stopping: no further retries start. */
	isStopping(): boolean;
	/**
	 * Every scraper response's headers, for rate-limit learning and the credit balance, with when (on
	 * `clock`) the fetch they answer was sent: a fleet orders what answers say by it.
	 */
	onHeaders(headers: ScraperHeaders, sentAt: number): void;
	/** Called (and must have journalled the id) before the task is polled. */
	onTaskId(targetId: string, taskId: string): void;
	/**
	 * A failed attempt was charged and no answer holds it yet (its retry is to come, or a stop ends the
	 * fetch): the runner journals it, so a resume of a process stopped or killed meanwhile counts it.
	 */
	onCharged?(targetId: string, credits: number): void;
	/** Before each send of a target's request: a fleet worker's slot below the fleet's limit (undefined: go). */
	beforeSend?(targetId: string, isStopping: () => boolean): Promise<void> | undefined;
	/**
	 * Asked last, once the send gate let the request through: false when the target is no longer this
	 * worker's (a fleet lease that lapsed while the worker was stopped or cut off; another worker may be
	 * paying for it now). Nothing is sent then, and the fetch ends with no record.
	 */
	maySend?(targetId: string): boolean;
	onRetry(targetId: string, kind: string): void;
	/**
	 * A failed attempt was charged and its retry is due (`kind`: why it failed): counted at once (the
	 * domain's breaker, charged failures in a row). False: the retry is not sent — the target's record says
	 * this failure, or a stop leaves it for a resume. `chargedSoFar`: what this fetch's attempts were
	 * charged, this one included (no booking holds them yet: the retry must fit beside them).
	 */
	chargedRetry?(
		targetId: string,
		url: string,
		kind: string,
		credits: number,
		chargedSoFar: number,
	): boolean | Promise<boolean>;
	/** A 429 asked for more than the cap: said once per run by the caller. */
	onResetCapped(): void;
}

/** `wait_seconds` a navigation-timeout retry asks for: the service's advice, within its 0–60 range. */
const NAVIGATION_RETRY_WAIT_SECONDS = [5, 10, 20, 30, 45, 60] as const;

/** What one attempt came to: a result, or a failure for the classifier. */
type AttemptOutcome =
	| { readonly result: FetchResult }
	| { readonly failure: unknown; readonly decision?: FailureAction };

/** What the retry table says after a failed attempt: this result, or go round again. */
type NextStep = FetchResult | "again";

/**
 * Fetch one target: send, follow a task hand-off, and retry per the service's rules (docs/service.md, "Retries") in one explicit loop (in the
 * style of ky's `_retry`): each failure is classified once, then a `switch` decides — wait out a 429
 * without spending an attempt, wait out an outage the same way, retry after a full-jitter backoff, fail
 * the target, or stop the run. Never throws.
 *
 * @param resumeTaskId a task id journalled by an earlier run: poll it instead of paying again.
 */
export function fetchTarget(
	targetId: string,
	params: ScrapeParams,
	deps: FetchTargetDeps,
	resumeTaskId: string | null = null,
	spill?: BodySpill,
): Promise<FetchResult> {
	return new TargetFetch(targetId, params, deps, resumeTaskId, spill).run();
}

/** One target's fetch: its attempts, what they cost, and the request as retries change it. */
class TargetFetch {
	/** Requests that reached the service, 429s not included: what the record reports. */
	private attempts = 0;
	/** Attempts that count against `retry.attempts`: failures during a (possible) outage do not. */
	private spent = 0;
	/** The outage monitor's epoch when the last attempt was sent (outage-monitor.ts, `answered`). */
	private sentInEpoch = 0;
	/** When the latest attempt was sent: a silent service's outage is counted from there. */
	private sentAt = 0;
	private taskId: string | null;
	private pendingTaskId: string | null;
	private lastHeaders: ScraperHeaders = {};
	private rateLimitWaits = 0;
	private navigationRetries = 0;
	private request: ScrapeParams;
	/**
	 * Credits the service reported for this target's earlier attempts that failed (a charged 5xx, an answer
	 * cut after its headers): booked on the record with the last attempt's, whatever the outcome.
	 */
	private chargedBefore = 0;
	private readonly targetId: string;
	private readonly params: ScrapeParams;
	private readonly deps: FetchTargetDeps;
	private readonly spill: BodySpill | undefined;

	constructor(
		targetId: string,
		params: ScrapeParams,
		deps: FetchTargetDeps,
		resumeTaskId: string | null,
		spill: BodySpill | undefined,
	) {
		this.targetId = targetId;
		this.params = params;
		this.deps = deps;
		this.spill = spill;
		this.request = params;
		this.taskId = resumeTaskId;
		this.pendingTaskId = resumeTaskId;
	}

	/** Attempts until one comes to a result, or the retry table gives up. */
	async run(): Promise<FetchResult> {
		const { deps } = this;
		for (;;) {
			let outcome: AttemptOutcome;
			try {
				outcome = await this.attempt();
			} catch (error) {
				// Only an abort gets here (a stop past its grace period): the target is left for --resume.
				if (deps.signal.aborted) return this.abandoned();
				outcome = { failure: error };
			}
			if ("result" in outcome) return this.withEarlierCharges(outcome.result);
			const next = await this.afterFailure(outcome.failure, outcome.decision ?? classifyFailure(outcome.failure));
			if (next !== "again") return next;
		}
	}

	/** A journalled task is polled first (it was paid for); else the request is sent. */
	private attempt(): Promise<AttemptOutcome> {
		const id = this.pendingTaskId;
		if (!id) return this.send();
		this.pendingTaskId = null;
		return this.followTask(id);
	}

	/** The retry table: what a classified failure leads to. */
	private async afterFailure(failure: unknown, decision: FailureAction): Promise<NextStep> {
		// What this failed attempt cost: retried or not, it is paid for.
		const charge = decision.action === "wait" ? 0 : (trustedCredits(creditsOf(failure)) ?? 0);
		if (this.deps.signal.aborted) {
			this.chargedEarlier(charge);
			return this.abandoned();
		}
		switch (decision.action) {
			case "wait":
				return this.rateLimited(failure, decision.capped === true);
			case "retry":
				return this.retried(failure, decision, charge);
			case "fail":
				if (!(decision.kind === "dns_failed" || decision.kind === "navigation_error"))
					this.deps.outage.answered(this.sentInEpoch);
				return this.withEarlierCharges(this.failedBy(decision.kind, failure));
			case "abort":
				return {
					kind: "aborted",
					reason: decision.kind,
					message: errorMessage(failure),
					charged: this.chargedBefore,
				};
			default: {
				const unreachable: never = decision;
				throw new Error(`unhandled decision ${JSON.stringify(unreachable)}`);
			}
		}
	}

	/** A 429 is the queue being full, not an attempt at the target: waited out, up to `maxRateLimitWaits` in a row. */
	private rateLimited(failure: unknown, capped: boolean): NextStep {
		const { deps } = this;
		this.attempts -= 1;
		this.spent -= 1;
		this.rateLimitWaits += 1;
		if (capped) deps.onResetCapped();
		if (deps.isStopping()) return this.leftWaiting();
		if (this.rateLimitWaits > (deps.maxRateLimitWaits ?? 20))
			return this.failed("rate_limited", errorMessage(failure), 429, { ...this.lastHeaders, ...answerOf(failure) });
		return "again";
	}

	/** A failure worth another attempt: an outage is waited out free, else one attempt is spent, then a backoff. */
	private async retried(
		failure: unknown,
		decision: Extract<FailureAction, { action: "retry" }>,
		charge: number,
	): Promise<NextStep> {
		const { deps } = this;
		// This attempt's slot is released already: what the gate counts in flight are other fetches.
		let sign = decision.serviceDown
			? deps.outage.failed(this.targetId, deps.gate.inFlight > 0, isNoAnswer(failure), this.sentAt)
			: "count";
		if (sign === "probe") {
			try {
				sign = await deps.outage.confirm(this.waits);
			} catch {
				return this.abandoned();
			}
			// A stop cut the probe short: it said nothing of the service, so the target is not failed on it.
			if (deps.isStopping()) return this.leftWaiting();
		}
		if (sign === "outage") return this.outage(charge);
		// The service failed the fetch before this one too: maybe an outage, so this one is free.
		if (sign === "free") this.spent -= 1;
		if (!decision.serviceDown) deps.outage.answered(this.sentInEpoch);
		if (this.spent >= deps.retry.attempts) return this.withEarlierCharges(this.failedBy(decision.kind, failure));
		const retryAllowed =
			charge <= 0 ||
			deps.chargedRetry === undefined ||
			(await deps.chargedRetry(this.targetId, this.params.url, decision.kind, charge, this.chargedBefore + charge));
		if (!retryAllowed && !deps.isStopping()) return this.withEarlierCharges(this.failedBy(decision.kind, failure));
		this.chargedEarlier(charge);
		if (deps.isStopping()) return this.leftWaiting();
		deps.onRetry(this.targetId, decision.kind);
		this.adjustRequest(failure, decision);
		try {
			await deps.sleep(fullJitterDelayMs(Math.max(1, this.spent), deps.retry, deps.random), this.waits);
		} catch {
			return this.leftWaiting();
		}
		return "again";
	}

	/** An outage: the failed attempt does not count, and the target waits with the whole queue. */
	private async outage(charge: number): Promise<NextStep> {
		this.spent -= 1;
		this.chargedEarlier(charge);
		try {
			await this.deps.gate.unpaused(this.waits);
		} catch {
			return this.leftWaiting();
		}
		return this.deps.isStopping() ? this.leftWaiting() : "again";
	}

	/** The next attempt's request, as the failure asks: a task at once, or a longer navigation wait. */
	private adjustRequest(failure: unknown, decision: Extract<FailureAction, { action: "retry" }>): void {
		// A realtime call that outlived this client's deadline unanswered may still be running (and
		// charged) at the service: the next attempt asks for a task id at once (`async`), so that no
		// further attempt can outlive a deadline unseen and be paid for again.
		if (outlivedDeadline(failure)) this.request = { ...this.request, async: true };
		if (decision.raiseWaitSeconds) {
			this.request = {
				...this.request,
				wait_seconds: Math.max(this.request.wait_seconds ?? 0, waitSecondsFor(this.navigationRetries)),
			};
			this.navigationRetries += 1;
		}
	}

	/** One request to the service, through the send gate: an answer, a task to follow, or a failure. */
	private async send(): Promise<AttemptOutcome> {
		const { deps } = this;
		const slot = deps.beforeSend?.(this.targetId, deps.isStopping);
		if (slot !== undefined) await slot;
		if (!deps.gate.tryAcquire()) {
			try {
				await deps.gate.acquire(this.waits);
			} catch {
				return { result: this.leftWaiting() };
			}
		}
		// The gate may have held the request for a 429's reset, long enough for the lease to lapse.
		if (deps.maySend && !deps.maySend(this.targetId)) {
			deps.gate.release(undefined);
			return { result: this.lapsed() };
		}
		this.sentInEpoch = deps.outage.epoch;
		this.sentAt = deps.clock();
		this.attempts += 1;
		this.spent += 1;
		let releaseHold: (() => void) | undefined;
		let outcome: Awaited<ReturnType<ScraperClient["realtime"]>>;
		try {
			outcome = await deps.client.realtime(this.request, {
				signal: deps.signal,
				method: deps.method ?? "POST",
				maxBodyBytes: deps.maxBodyBytes,
				spill: this.spill,
				// A 429 holds every other send from its status line on, not from when its body has been read.
				onStatus: (status) => {
					if (status === 429) releaseHold = deps.gate.hold("rate_limited");
				},
			});
		} catch (error) {
			deps.gate.release(undefined);
			if (error instanceof BodySinkError) {
				releaseHold?.();
				return { result: outputFailed(error, this.chargedBefore) };
			}
			const decision = classifyFailure(error);
			if (decision.action === "wait") deps.gate.pause(decision.resetMs);
			releaseHold?.();
			return { failure: error, decision };
		}
		releaseHold?.();
		deps.gate.release(outcome.headers.rateLimitRemaining);
		this.lastHeaders = outcome.headers;
		deps.onHeaders(outcome.headers, this.sentAt);
		deps.outage.answered(this.sentInEpoch);
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
						attempts: this.attempts,
						taskId: this.taskId,
						json: outcome.json,
						finalUrl: outcome.headers.finalUrl,
						spilled: outcome.spilled,
					},
				};
			case "target_error":
				// The service already retried inside; the target's own answer is final (docs/service.md, "Where the documentation is silent").
				return {
					result: this.failed(
						`target_http_${outcome.targetStatus}`,
						`the target answered ${outcome.targetStatus}`,
						outcome.targetStatus,
					),
				};
			case "task":
				this.taskId = outcome.task.task_id;
				deps.onTaskId(this.targetId, this.taskId);
				return this.followTask(this.taskId);
			default: {
				const unreachable: never = outcome;
				throw new Error(`unhandled outcome ${JSON.stringify(unreachable)}`);
			}
		}
	}

	/** A task to its end: finished, failed at the target, or a failure for the classifier. */
	private async followTask(id: string): Promise<AttemptOutcome> {
		const { deps } = this;
		const outcome = await pollTask(deps.client, id, {
			...deps.taskPoll,
			gate: deps.gate,
			clock: deps.clock,
			sleep: deps.sleep,
			signal: deps.signal,
			...(deps.stopped ? { stopped: deps.stopped } : {}),
		});
		switch (outcome.kind) {
			case "stopped":
				return { result: this.leftWaiting() };
			case "deadline":
				return {
					result: this.failed(
						"task_timeout",
						`task ${id} still ${outcome.lastStatus} after ${Math.round(outcome.deadlineMs / 1000)} s`,
						null,
					),
				};
			case "expired":
				return { result: this.failed("task_expired", `task ${id} is unknown or its result expired`, 404) };
			case "error":
				return { failure: outcome.error };
			case "finished":
				return this.finishedTask(id, outcome.task);
			default: {
				const unreachable: never = outcome;
				throw new Error(`unhandled poll outcome ${JSON.stringify(unreachable)}`);
			}
		}
	}

	private finishedTask(id: string, task: FinishedTask): AttemptOutcome {
		this.deps.onHeaders(task.headers, this.sentAt);
		if (task.state === "failed") {
			// The target's own answer, as for a realtime passthrough: final, not retried.
			if (task.targetStatus !== undefined) {
				return {
					result: this.failed(`target_http_${task.targetStatus}`, task.message, task.targetStatus, task.headers),
				};
			}
			// The service's scraping error: its message decides retrying, as for a realtime 500, and what it
			// was charged is booked as a realtime 500's is.
			return {
				failure: Object.assign(new Error(task.message), {
					creditsUsed: task.creditsUsed ?? task.headers.creditsUsed,
					creditsRemaining: task.creditsRemaining,
					modeUsed: task.modeUsed,
				}),
				decision: classifyScrapingError(500, "Scraping failed", task.message),
			};
		}
		// `delivery: json`: the task's JSON body is what was paid for; keep it whole, as for a realtime answer.
		const wholeJson = this.params.delivery === "json" && task.raw !== undefined;
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
				attempts: Math.max(this.attempts, 1),
				taskId: id,
				json: wholeJson ? task.json : undefined,
				finalUrl: task.headers.finalUrl,
				spilled: undefined,
			},
		};
	}

	/** A failed attempt's charge, held until the fetch ends, and said to the runner at once (`onCharged`). */
	private chargedEarlier(charge: number): void {
		if (charge <= 0) return;
		this.chargedBefore += charge;
		this.deps.onCharged?.(this.targetId, charge);
	}

	private abandoned(): FetchResult {
		return { kind: "abandoned", taskId: this.taskId, attempts: this.attempts, charged: this.chargedBefore };
	}

	/** Given up between attempts by a stop: nothing of it was out at the service (its charges are known). */
	private leftWaiting(): FetchResult {
		const { taskId, attempts, chargedBefore: charged } = this;
		return { kind: "abandoned", taskId, attempts, charged, betweenAttempts: true };
	}

	/** What a wait between attempts listens on: the stop itself when the runner gives it, else the grace's end. */
	private get waits(): AbortSignal {
		return this.deps.stopped ?? this.deps.signal;
	}

	/** Given up before a send: the worker's fleet lease on the target lapsed (`maySend`). */
	private lapsed(): FetchResult {
		const { taskId, attempts, chargedBefore: charged } = this;
		return { kind: "abandoned", taskId, attempts, charged, leaseLapsed: true };
	}

	/** The result with the earlier attempts' charges added (a last answer that said no cost: its worst case). */
	private withEarlierCharges(result: FetchResult): FetchResult {
		if (this.chargedBefore === 0 || (result.kind !== "ok" && result.kind !== "failed")) return result;
		// An answer that did not say its cost is its worst case, as anywhere — here with the earlier
		// attempts' charges on top, which a bare unknown would have let the booking drop.
		const last = result.creditsUsed ?? creditCostRange(this.request).max;
		return { ...result, creditsUsed: last + this.chargedBefore, chargedBefore: this.chargedBefore };
	}

	private failed(
		error: string,
		message: string,
		httpStatus: number | null,
		headers = this.lastHeaders,
		reported?: number,
		answered = true,
	): FetchResult {
		const sentMode = answered ? namedMode(this.request) : undefined;
		return failedResult({ error, message, httpStatus }, headers, this.attempts, this.taskId, reported, sentMode);
	}

	/**
	 * The target failed as the classifier named it, with what the failure says it cost, and the balance and
	 * mode its answer reported (over an earlier answer's, e.g. the task's hand-off).
	 */
	private failedBy(kind: string, failure: unknown): FetchResult {
		const headers = { ...this.lastHeaders, ...answerOf(failure) };
		return this.failed(
			kind,
			errorMessage(failure),
			statusOf(failure),
			headers,
			creditsOf(failure),
			!isNoAnswer(failure),
		);
	}
}

function waitSecondsFor(retry: number): number {
	return NAVIGATION_RETRY_WAIT_SECONDS[Math.min(retry, NAVIGATION_RETRY_WAIT_SECONDS.length - 1)]!;
}
