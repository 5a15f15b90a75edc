/** What the run's thread and the store's writer thread (store-worker.ts) share. */
import type { MessagePort } from "node:worker_threads";

/** Cells of the shared Int32Array: the run's thread waits on them without its event loop. */
export const CELL = {
	/** Bumped (and notified) whenever the cells below change. */
	signal: 0,
	/** Rows written or dropped: what was posted and is not yet is the writer's backlog. */
	merged: 1,
	/** The last `flush` written through. */
	settled: 2,
	/** 1 once the writer failed (its error is posted on the port). */
	failed: 3,
	/** 1 once the writer closed its connection. */
	closed: 4,
	/** Set by the run's thread: drop what is held, roll back the merge under way. */
	cancel: 5,
	/** Bumped as the writer works: a writer that stops bumping it has died or hung. */
	beat: 6,
} as const;
export const CELLS = 7;

export interface WriterSetup {
	readonly path: string;
	readonly state: SharedArrayBuffer;
	readonly port: MessagePort;
	readonly mergeRows: number;
	readonly mergeChars: number;
}

export type WriterMessage =
	/** `rows`: a JSON array of `PendingRow`s (JSON text is cloned and parsed faster than the objects). */
	| {
			readonly type: "rows";
			readonly run: string;
			readonly rows: string;
			readonly count: number;
			readonly chars: number;
	  }
	| { readonly type: "flush"; readonly seq: number };
