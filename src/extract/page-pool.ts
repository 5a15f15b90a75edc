import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { createTaskQueue } from "../common/index.js";
import type { ExtractPlan } from "./compile-fields.js";
import { fieldsTextOf } from "./compile-fields.js";
import { type PageTask, type PageTaskResult, runPageTask } from "./page-task.js";

/**
 * Where pages are parsed, their fields extracted and their links found: worker threads (piscina),
 * so that one hostile page (300k unclosed `<div>`, a `:has()` selector 3000 levels deep, 20 MB of
 * `<br>`) cannot stall the run's event loop — signals, heartbeats, progress and other targets keep
 * their timing — and is bounded in time (`page_timeout`) and memory (its worker's heap): past either,
 * the worker is ended and the page is `page_too_complex`; the run goes on.
 */
export interface PagePool {
	/**
	 * The page's fields and links; rejects with `PageTooComplexError` past the time or memory bound
	 * (the time counts from when a worker takes the page, not while it waits for one), and with the
	 * signal's reason when `signal` aborts first (a stop past its grace period: the worker is ended).
	 */
	run(
		page: {
			html: string | Uint8Array;
			/** The answer's Content-Type: its `charset` decodes bytes (html-charset.ts). */
			contentType?: string;
			url: string;
			plan: ExtractPlan | null;
			links: boolean;
			blockCss?: readonly string[];
		},
		signal?: AbortSignal,
	): Promise<PageTaskResult>;
	/** Whether pages run in worker threads (false where the worker's file is missing: TypeScript sources). */
	readonly threaded: boolean;
	close(): Promise<void>;
}

export interface PagePoolOptions {
	/** Longest one page's parse + fields + links may take, ms (`page_timeout`). @default 10,000 */
	readonly timeoutMs?: number;
	/** Heap of each worker, MB: a page past it ends its worker. @default 192 */
	readonly maxHeapMb?: number;
	/** Worker threads. @default the cores but one (at least 1, at most 4) */
	readonly threads?: number;
	/**
	 * Told of what the pool reports outside any page (an answer that came after its page was given up, a
	 * worker that ended between pages): no page's record depends on it.
	 */
	readonly onError?: (error: Error) => void;
}

/** A page past `page_timeout` or its worker's memory bound. */
export class PageTooComplexError extends Error {
	readonly code = "page_too_complex";
	constructor(message: string, options?: { cause?: unknown }) {
		super(message, options);
		this.name = "PageTooComplexError";
	}
}

export const DEFAULT_PAGE_TIMEOUT_MS = 10_000;

/** Worker threads of a page pool unless told: the cores but one (at least 1, at most 4), leaving one for the run's own loop. */
export function defaultPageThreads(): number {
	return Math.min(4, Math.max(1, availableParallelism() - 1));
}
const DEFAULT_HEAP_MB = 192;

/** The built worker beside this module (dist/extract/page-worker.js); absent when running from sources. */
function workerFile(): string | null {
	const path = fileURLToPath(new URL("./page-worker.js", import.meta.url));
	return existsSync(path) ? path : null;
}

export async function createPagePool(options: PagePoolOptions = {}): Promise<PagePool> {
	const timeoutMs = options.timeoutMs ?? DEFAULT_PAGE_TIMEOUT_MS;
	const filename = workerFile();
	if (filename === null) return inlinePool();
	// Loaded only when a run reads pages: a list run without extract or crawl never starts a thread.
	const { Piscina } = await import("piscina");
	const threads = options.threads ?? defaultPageThreads();
	const heapMb = options.maxHeapMb ?? DEFAULT_HEAP_MB;
	const pool = new Piscina({
		filename,
		minThreads: 1,
		maxThreads: threads,
		// A worker ended by a page is replaced for the next one; an idle one lingers for a while.
		idleTimeout: 30_000,
		resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 16 },
		// piscina loads the worker with require() first, which Node 20.19+ runs for an ES module
		// synchronously; a worker ended in the middle of that (a run that ends while its first worker
		// still loads) aborted the whole process once under load (exit 134, in `runSync`). With
		// require(esm) off, the worker is loaded by import(), which an ending worker abandons safely.
		execArgv: [...process.execArgv, "--no-experimental-require-module"],
	});
	// piscina emits these as "error" events, which throw (ending the process) with no listener: an answer
	// posted just before its page was given up (a run stopping, a page past its timeout) arrives after it.
	pool.on("error", (error: Error) => options.onError?.(error));
	// Pages wait here, not in piscina's queue, so that a page's time starts when a worker takes it.
	const slots = createTaskQueue({ concurrency: threads });
	return {
		threaded: true,
		run: (page, signal) =>
			slots.run(async () => {
				signal?.throwIfAborted();
				// A page's bytes cross without a string's structured clone (which holds the page twice more on this
				// thread while it is sent): shared memory as it is (a large answer is read into it), else a copy
				// moved to the worker. The caller keeps its own.
				const shared = typeof page.html !== "string" && page.html.buffer instanceof SharedArrayBuffer;
				const bytes = typeof page.html === "string" || shared ? null : new Uint8Array(page.html);
				const task: PageTask = {
					html: bytes ?? page.html,
					...(page.contentType ? { contentType: page.contentType } : {}),
					url: page.url,
					fields: page.plan ? fieldsTextOf(page.plan) : null,
					links: page.links,
					...(page.blockCss && page.blockCss.length > 0 ? { blockCss: page.blockCss } : {}),
				};
				const timeout = AbortSignal.timeout(timeoutMs);
				try {
					return (await pool.run(task, {
						signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
						...(bytes ? { transferList: [bytes.buffer] } : {}),
					})) as PageTaskResult;
				} catch (error) {
					if (signal?.aborted) throw signal.reason;
					if (timeout.aborted) {
						throw new PageTooComplexError(`the page took more than page_timeout (${timeoutMs} ms) to parse and read`, {
							cause: error,
						});
					}
					const code = (error as { code?: unknown }).code;
					if (code === "ERR_WORKER_OUT_OF_MEMORY" || /out of memory|heap/i.test(String(error))) {
						throw new PageTooComplexError(`the page needed more than its worker's ${heapMb} MB to parse and read`, {
							cause: error,
						});
					}
					// A worker that died any other way on this page: the page is what could not be read, and
					// its target gets a record saying so (never a run without one).
					throw new PageTooComplexError(
						`the page could not be read: its worker ended (${error instanceof Error ? error.message : String(error)})`,
						{ cause: error },
					);
				}
			}),
		close: async () => {
			slots.clear();
			await pool.destroy();
		},
	};
}

/** Without a built worker (tests importing TypeScript sources): the same work on this thread, unbounded. */
function inlinePool(): PagePool {
	return {
		threaded: false,
		run: async (page, signal) => {
			signal?.throwIfAborted();
			return runPageTask({
				html: page.html,
				...(page.contentType ? { contentType: page.contentType } : {}),
				url: page.url,
				fields: page.plan ? fieldsTextOf(page.plan) : null,
				links: page.links,
				...(page.blockCss && page.blockCss.length > 0 ? { blockCss: page.blockCss } : {}),
			});
		},
		close: async () => undefined,
	};
}
