/**
 * Background work other than a single scrape, polled by id: an async crawl (`/scraper/crawl/tasks/<id>`)
 * and a config generation (`/account/configs/generate/tasks/<id>`). Like scrape tasks (tasks.ts): visible
 * only to the key that started it, `processing` until it ends, kept `ttlMs` after that, then forgotten.
 */
import { randomBytes } from "node:crypto";

export type JobStatus = "processing" | "completed" | "failed";

export interface BackgroundJob<T> {
	readonly id: string;
	readonly key: string;
	status: JobStatus;
	/** What the finished job answers: its result when completed, its error when failed. */
	result: T | null;
	finishedAt: number | null;
}

export class BackgroundJobStore<T> {
	readonly #ttlMs: number;
	readonly #jobs = new Map<string, BackgroundJob<T>>();

	constructor(ttlMs: number) {
		this.#ttlMs = ttlMs;
	}

	/** A new job, `processing`; `idPrefix` as the service spells its ids (e.g. `crawl_`). */
	create(key: string, idPrefix: string): BackgroundJob<T> {
		this.#sweep(Date.now());
		const job: BackgroundJob<T> = {
			id: `${idPrefix}${randomBytes(8).toString("hex")}`,
			key,
			status: "processing",
			result: null,
			finishedAt: null,
		};
		this.#jobs.set(job.id, job);
		return job;
	}

	finish(job: BackgroundJob<T>, status: "completed" | "failed", result: T): void {
		job.status = status;
		job.result = result;
		job.finishedAt = Date.now();
	}

	/** The key's job, or null when unknown, another key's, or expired. */
	get(key: string, id: string): BackgroundJob<T> | null {
		const job = this.#jobs.get(id);
		if (!job || job.key !== key) return null;
		if (job.finishedAt !== null && Date.now() - job.finishedAt >= this.#ttlMs) {
			this.#jobs.delete(id);
			return null;
		}
		return job;
	}

	/** Expired jobs are dropped when new ones arrive: no timer to hold a process open. */
	#sweep(now: number): void {
		for (const [id, job] of this.#jobs) {
			if (job.finishedAt !== null && now - job.finishedAt >= this.#ttlMs) this.#jobs.delete(id);
		}
	}
}
