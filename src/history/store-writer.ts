import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import type { PendingRow } from "./store-batch.js";
import { CELL, CELLS, type WriterMessage, type WriterSetup } from "./store-writer-protocol.js";

/**
 * Rows of a run the writer thread writes in one transaction (one merge). Ids are random: past ~400,000
 * targets a 2,000-row batch dirties ~2,000 pages of the id index, a merge of 20,000 in id order fewer a
 * row. The store alone at 1,000,000 rows: ~9 µs of CPU a row (both threads) against ~12.5 for batches on
 * the run's thread; 50,000 saved no more and held more memory (bench/README.md, issue #47).
 * @default 20,000
 */
export const MERGE_ROWS = 20_000;
/** Characters of extracted data a merge holds before it is written, whatever its count (as a batch does). */
export const MERGE_DATA_CHARS = 8 << 20;
const WRITER_YOUNG_MB = 8;
const WRITER_OLD_MB = 96;
/**
 * Targets in the store (with the run's rows written so far) before the writer thread starts. Below it the
 * id index is mostly in the cache, a batch is cheap, and handing rows to a thread costs more than larger
 * merges save (the store alone at 200,000 rows: ~8 µs a row with the writer against ~6 without; even at
 * 500,000), and the thread would add its ~60 MB to a small run.
 * @default 400,000
 */
export const WRITER_AFTER_TARGETS = 400_000;
/** A writer that shows no progress for this long has died or hung: the run's records are then not kept. */
const STALL_MS = 30_000;
/** The same at close: longer than a write waits on another process's lock (`BUSY_TIMEOUT_MS`). */
const CLOSE_STALL_MS = 10_000;

/** The built writer beside this module (dist/history/store-worker.js); absent when running from sources. */
function workerFile(): string | null {
	const path = fileURLToPath(new URL("./store-worker.js", import.meta.url));
	return existsSync(path) ? path : null;
}

/**
 * The run's side of the store's writer thread: rows are posted as they come (a 2,000-row batch a
 * message), and only `settle` and `close` wait for it. It never keeps the process alive, and a failure
 * of any kind (the store locked, the thread dead) is one error `failure()` returns: the records are safe
 * in results.jsonl, and the next open folds them in.
 */
export class StoreWriter {
	readonly #worker: Worker;
	readonly #state: Int32Array;
	readonly #port: MessagePort;
	readonly #mergeRows: number;
	#posted = 0;
	#seq = 0;
	#error: unknown = null;
	#closed = false;

	/** Start a writer for the store at `path` (opened and folded already); null when none can start. */
	static start(path: string, options: { mergeRows?: number; mergeChars?: number } = {}): StoreWriter | null {
		const file = workerFile();
		if (file === null) return null;
		try {
			return new StoreWriter(file, path, options.mergeRows ?? MERGE_ROWS, options.mergeChars ?? MERGE_DATA_CHARS);
		} catch {
			return null;
		}
	}

	private constructor(file: string, path: string, mergeRows: number, mergeChars: number) {
		const state = new SharedArrayBuffer(CELLS * 4);
		const { port1, port2 } = new MessageChannel();
		const setup: WriterSetup = { path, state, port: port2, mergeRows, mergeChars };
		this.#worker = new Worker(file, {
			workerData: setup,
			transferList: [port2],
			// V8 grows an unbounded heap to ~160 MB under a merge's short-lived rows; these bounds keep it
			// near what a merge holds (a merge's rows and their text: MERGE_DATA_CHARS).
			resourceLimits: { maxYoungGenerationSizeMb: WRITER_YOUNG_MB, maxOldGenerationSizeMb: WRITER_OLD_MB },
		});
		this.#state = new Int32Array(state);
		this.#port = port1;
		this.#mergeRows = mergeRows;
		this.#worker.unref();
		this.#port.unref();
		this.#worker.on("error", (error) => {
			this.#error ??= error;
		});
		this.#worker.on("exit", (code) => {
			if (!this.#closed) this.#error ??= new Error(`the job store's writer thread ended (exit code ${code})`);
		});
	}

	/** Hand a run's rows (contiguous in its results.jsonl, in file order) to the writer. */
	post(runId: string, rows: readonly PendingRow[], chars: number): void {
		if (rows.length === 0 || this.failure() !== null) return;
		const message: WriterMessage = { type: "rows", run: runId, rows: JSON.stringify(rows), count: rows.length, chars };
		this.#worker.postMessage(message);
		this.#posted += rows.length;
		// A writer that falls behind (a store on a slow disk) makes the run wait, not its memory grow.
		if (this.#posted - Atomics.load(this.#state, CELL.merged) > 2 * this.#mergeRows)
			this.#wait(() => this.#posted - Atomics.load(this.#state, CELL.merged) <= this.#mergeRows);
	}

	/** Why the writer could not keep the records, or null. */
	failure(): unknown {
		if (this.#error === null && Atomics.load(this.#state, CELL.failed) === 1) {
			const reply = receiveMessageOnPort(this.#port)?.message as { message: string; code?: string } | undefined;
			this.#error = Object.assign(new Error(reply?.message ?? "the job store's writer thread failed"), {
				code: reply?.code,
			});
		}
		return this.#error;
	}

	/** Write everything posted (the last merge included) and wait for it; a failure is `failure()`'s. */
	settle(): void {
		if (this.failure() !== null || this.#closed) return;
		const seq = ++this.#seq;
		this.#worker.postMessage({ type: "flush", seq } satisfies WriterMessage);
		this.#wait(() => Atomics.load(this.#state, CELL.settled) >= seq);
	}

	/** Drop what is not written (the merge under way is rolled back) and end the thread. */
	close(): void {
		if (this.#closed) return;
		this.#closed = true;
		Atomics.store(this.#state, CELL.cancel, 1);
		this.#worker.postMessage({ type: "close" });
		// Its connection closed before this returns: the store may be opened again at once.
		this.#wait(() => Atomics.load(this.#state, CELL.closed) === 1, CLOSE_STALL_MS);
		this.#worker.terminate().catch(() => {});
	}

	/** Block until `done` (or the writer failed, or stalled: then `failure()` says so). */
	#wait(done: () => boolean, stallMs = STALL_MS): void {
		let beat = Atomics.load(this.#state, CELL.beat);
		let since = performance.now();
		for (;;) {
			const seen = Atomics.load(this.#state, CELL.signal);
			if (done() || Atomics.load(this.#state, CELL.failed) === 1 || this.#error !== null) return;
			Atomics.wait(this.#state, CELL.signal, seen, 100);
			const now = Atomics.load(this.#state, CELL.beat);
			if (now !== beat) {
				beat = now;
				since = performance.now();
			} else if (performance.now() - since > stallMs) {
				this.#error ??= new Error(`the job store's writer thread made no progress for ${stallMs / 1000} s`);
				this.#worker.terminate().catch(() => {});
				return;
			}
		}
	}
}
