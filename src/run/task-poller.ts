import { classifyFailure, NetworkError, type ScraperClient, ServiceError, type TaskState } from "../api/index.js";
import { type Clock, ScrapejobError, type Sleep } from "../shared/index.js";
import type { SendGate } from "./send-gate.js";

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

/** The task did not finish before the deadline. Its id is in the record, so it can still be looked up. */
export class TaskDeadlineError extends ScrapejobError {
	readonly taskId: string;
	constructor(taskId: string, lastStatus: string, deadlineMs: number) {
		super("SCRAPEJOB_TASK_DEADLINE", `task ${taskId} still ${lastStatus} after ${Math.round(deadlineMs / 1000)} s`);
		this.taskId = taskId;
	}
}

export type FinishedTask = Extract<TaskState, { state: "completed" | "failed" }>;

/**
 * Poll one task until it reaches a terminal state (completed or failed), the deadline passes, or the
 * signal aborts. Polls are free, so a network error or 5xx while polling just means "poll again";
 * a 429 closes the shared gate like any other; 401/402 are thrown for the runner to stop on.
 */
export async function pollTask(
	client: ScraperClient,
	taskId: string,
	options: TaskPollOptions & { gate: SendGate; clock: Clock; sleep: Sleep; signal?: AbortSignal },
): Promise<FinishedTask> {
	const started = options.clock();
	let interval = options.initialIntervalMs;
	let lastStatus = "processing";
	let notFoundStreak = 0;
	for (;;) {
		const remaining = started + options.deadlineMs - options.clock();
		if (remaining <= 0) throw new TaskDeadlineError(taskId, lastStatus, options.deadlineMs);
		await options.sleep(Math.min(interval, remaining), options.signal);
		interval = Math.min(options.maxIntervalMs, Math.ceil(interval * 1.5));
		await options.gate.unpaused(options.signal);
		let state: TaskState;
		try {
			state = await client.task(taskId, options.signal);
		} catch (error) {
			if (options.signal?.aborted) throw error;
			const decision = classifyFailure(error);
			if (decision.action === "wait") {
				options.gate.pause(decision.resetMs);
				continue;
			}
			if (decision.action === "abort") throw error;
			if (error instanceof NetworkError || (error instanceof ServiceError && error.status >= 500)) continue;
			throw error;
		}
		switch (state.state) {
			case "completed":
			case "failed":
				return state;
			case "pending":
			case "unknown":
				lastStatus = state.status;
				notFoundStreak = 0;
				break;
			case "not_found":
				// Right after a hand-off the task may not be visible yet; three misses in a row mean it is gone.
				notFoundStreak += 1;
				if (notFoundStreak >= 3) {
					throw new ServiceError({
						status: 404,
						errorType: "Task not found",
						detail: `task ${taskId} is unknown or its result expired`,
						endpoint: "GET /scraper/tasks/:id",
					});
				}
				break;
			default: {
				const unreachable: never = state;
				throw new Error(`unhandled task state ${JSON.stringify(unreachable)}`);
			}
		}
	}
}
