import { classifyFailure, type ScraperClient, type TaskState } from "../../api/index.js";
import type { Clock, Sleep } from "../../common/index.js";
import type { SendGate } from "../flow/send-gate.js";

export interface TaskPollOptions {
	/** Give up on a task this long after polling began, milliseconds. @default 600000 */
	readonly deadlineMs: number;
	/** First wait before polling, milliseconds; grows by half each poll. @default 1000 */
	readonly initialIntervalMs: number;
	/** Longest wait between polls, milliseconds. @default 10000 */
	readonly maxIntervalMs: number;
}

export const DEFAULT_TASK_POLL: TaskPollOptions = {
	deadlineMs: 600_000,
	initialIntervalMs: 1000,
	maxIntervalMs: 10_000,
};

export type FinishedTask = Extract<TaskState, { state: "completed" | "failed" }>;

/** How polling one task ended; the caller turns it into a record (or a stop). */
export type PollOutcome =
	| { readonly kind: "finished"; readonly task: FinishedTask }
	/** Still not done when the deadline passed (`task_timeout`); its id is in the record for a later look. */
	| { readonly kind: "deadline"; readonly lastStatus: string; readonly deadlineMs: number }
	/** The service no longer knows the task (404 three times in a row): `task_expired`. */
	| { readonly kind: "expired" }
	/** A poll failed in a way the classifier says not to poll through (401/402 stop the run; 4xx fail it). */
	| { readonly kind: "error"; readonly error: unknown }
	/**
	 * The run stopped while no poll could get an answer (the service unreachable or erring, or a 429's pause):
	 * the task's id is stored, so a `--resume` polls it; waiting out the grace period could not collect it.
	 */
	| { readonly kind: "stopped" };

/** Three 404s in a row: right after a hand-off a task may not be visible yet, so one miss is not enough. */
const NOT_FOUND_LIMIT = 3;

/**
 * Poll one task until it reaches a terminal state, the deadline passes, or the signal aborts (then it
 * throws the signal's reason). Polls are free, so whatever `classifyFailure` would retry is simply polled
 * again; a 429 closes the shared gate like any other. Each poll is cut at the deadline, so a poll whose
 * answer trickles in cannot hold a task past `deadlineMs`.
 */
export async function pollTask(
	client: ScraperClient,
	taskId: string,
	options: TaskPollOptions & {
		gate: SendGate;
		clock: Clock;
		sleep: Sleep;
		signal?: AbortSignal;
		/** Aborted as the run's stop begins (before `signal`, the grace period's end). */
		stopped?: AbortSignal;
	},
): Promise<PollOutcome> {
	const started = options.clock();
	const deadline = started + options.deadlineMs;
	let interval = options.initialIntervalMs;
	let lastStatus = "processing";
	let notFoundStreak = 0;
	// After a poll the service did not answer, a stop ends the wait for the next: nothing is out, the id is kept.
	let unanswered = false;
	const { stopped } = options;
	const waitSignal = (): AbortSignal | undefined =>
		unanswered && stopped ? (options.signal ? AbortSignal.any([options.signal, stopped]) : stopped) : options.signal;
	for (;;) {
		const remaining = deadline - options.clock();
		if (remaining <= 0) return { kind: "deadline", lastStatus, deadlineMs: options.deadlineMs };
		if (unanswered && stopped?.aborted) return { kind: "stopped" };
		try {
			await options.sleep(Math.min(interval, remaining), waitSignal());
			interval = Math.min(options.maxIntervalMs, Math.ceil(interval * 1.5));
			// A 429's pause or an outage's hold is no answer either: the stop ends the wait for it.
			unanswered ||= options.gate.pauseReason() !== null;
			await options.gate.unpaused(waitSignal());
		} catch (error) {
			if (options.signal?.aborted || !stopped?.aborted) throw error;
			return { kind: "stopped" };
		}
		const left = deadline - options.clock();
		if (left <= 0) return { kind: "deadline", lastStatus, deadlineMs: options.deadlineMs };
		const pollSignal = options.signal
			? AbortSignal.any([options.signal, AbortSignal.timeout(left)])
			: AbortSignal.timeout(left);
		let state: TaskState;
		try {
			state = await client.task(taskId, pollSignal);
		} catch (error) {
			if (options.signal?.aborted) throw options.signal.reason;
			if (pollSignal.aborted) return { kind: "deadline", lastStatus, deadlineMs: options.deadlineMs };
			const decision = classifyFailure(error);
			switch (decision.action) {
				case "wait":
					options.gate.pause(decision.resetMs);
					unanswered = true;
					continue;
				case "retry":
					unanswered = true;
					continue;
				case "fail":
				case "abort":
					return { kind: "error", error };
				default: {
					const unreachable: never = decision;
					throw new Error(`unhandled decision ${JSON.stringify(unreachable)}`);
				}
			}
		}
		unanswered = false;
		switch (state.state) {
			case "completed":
			case "failed":
				return { kind: "finished", task: state };
			case "pending":
			case "unknown":
				lastStatus = state.status;
				notFoundStreak = 0;
				break;
			case "not_found":
				notFoundStreak += 1;
				if (notFoundStreak >= NOT_FOUND_LIMIT) return { kind: "expired" };
				break;
			default: {
				const unreachable: never = state;
				throw new Error(`unhandled task state ${JSON.stringify(unreachable)}`);
			}
		}
	}
}
