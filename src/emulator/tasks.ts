/**
 * Background scrape tasks (docs/service.md, "Tasks" and "Where the documentation is silent"): created by `async: true` or by a fetch that
 * outlives `timeoutMs`; `processing` until the fetch ends, then `completed` or `failed`, kept
 * `taskTtlMs` after that and then forgotten (404). A task is visible only to the key that started it.
 */
import { randomBytes } from "node:crypto";
import type { ServiceExtraction } from "./scheme-extract.js";

export type TaskStatus = "processing" | "completed" | "failed";

export interface CompletedTaskResult {
	readonly status: "completed";
	readonly statusCode: number;
	readonly modeUsed: string;
	readonly creditsUsed: number;
	readonly creditsRemaining: number;
	readonly content: string;
	/** Where the target's redirects ended, when that is not the task's URL. */
	readonly finalUrl?: string;
	/** The page title, answered with `delivery: json` as a realtime JSON delivery has it. */
	readonly title?: string;
	/** Service-side extraction results (`extract_scheme`, `ai_enhance`), answered with `delivery: json`. */
	readonly extraction?: ServiceExtraction;
}

export interface FailedTaskResult {
	readonly status: "failed";
	readonly error: string;
	readonly message: string;
	readonly modeUsed: string;
	/** The target's status when it answered non-2xx. */
	readonly statusCode?: number;
	/** What the failure was charged: only a `scraping_error` fault given `credits`. */
	readonly creditsUsed?: number;
}

export type TaskResult = CompletedTaskResult | FailedTaskResult;

export interface Task {
	readonly id: string;
	readonly key: string;
	readonly url: string;
	readonly mode: string;
	readonly createdAt: number;
	status: TaskStatus;
	finishedAt: number | null;
	result: TaskResult | null;
}

export class TaskStore {
	readonly #ttlMs: number;
	readonly #tasks = new Map<string, Task>();
	readonly #sweeper: NodeJS.Timeout;

	constructor(ttlMs: number) {
		this.#ttlMs = ttlMs;
		// Forget expired tasks even if nobody polls them; unref'd so it never holds a process open.
		this.#sweeper = setInterval(() => this.#sweep(Date.now()), Math.min(Math.max(ttlMs, 1000), 60_000));
		this.#sweeper.unref();
	}

	get size(): number {
		return this.#tasks.size;
	}

	create(key: string, url: string, mode: string): Task {
		const task: Task = {
			id: `task_${randomBytes(8).toString("hex")}`,
			key,
			url,
			mode,
			createdAt: Date.now(),
			status: "processing",
			finishedAt: null,
			result: null,
		};
		this.#tasks.set(task.id, task);
		return task;
	}

	finish(task: Task, result: TaskResult): void {
		task.status = result.status;
		task.result = result;
		task.finishedAt = Date.now();
	}

	/** The key's task, or null when unknown, another key's, or expired. */
	get(key: string, id: string): Task | null {
		const task = this.#tasks.get(id);
		if (!task || task.key !== key) return null;
		if (this.#isExpired(task, Date.now())) {
			this.#tasks.delete(id);
			return null;
		}
		return task;
	}

	close(): void {
		clearInterval(this.#sweeper);
	}

	#isExpired(task: Task, now: number): boolean {
		return task.finishedAt !== null && now - task.finishedAt >= this.#ttlMs;
	}

	#sweep(now: number): void {
		for (const [id, task] of this.#tasks) {
			if (this.#isExpired(task, now)) this.#tasks.delete(id);
		}
	}
}
