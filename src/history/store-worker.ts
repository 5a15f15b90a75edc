/**
 * The job store's writer thread (store-writer.ts starts it): a run's records arrive in the order of its
 * results.jsonl and are written in merges of up to `mergeRows` rows, one transaction each, through a
 * connection of its own. A larger merge in id order dirties fewer pages of the id index per row (ids are
 * random), and here it holds no event loop but this thread's (bench/README.md, issue #47).
 */
import { type MessagePort, parentPort, workerData } from "node:worker_threads";
import type { Database, Transaction } from "better-sqlite3";
import type { PendingRow } from "./store-batch.js";
import { CELL, type WriterMessage, type WriterSetup } from "./store-writer-protocol.js";

const setup = workerData as WriterSetup;
const state = new Int32Array(setup.state);
const port: MessagePort = setup.port;

/** Thrown between rows once the store is closed: the merge under way is rolled back. */
class Cancelled extends Error {}

const beat = () => {
	Atomics.add(state, CELL.beat, 1);
	if (Atomics.load(state, CELL.cancel) === 1) throw new Cancelled("the store was closed");
};
const signal = () => {
	Atomics.add(state, CELL.signal, 1);
	Atomics.notify(state, CELL.signal);
};

let db: Database | null = null;
let failed = false;
const writers = new Map<string, Transaction<(rows: readonly PendingRow[]) => void>>();
/** Each run's rows not written yet, as posted (JSON text): text is compact and never promoted row by row. */
const held = new Map<string, { texts: string[]; rows: number; chars: number }>();
let byId: (a: PendingRow, b: PendingRow) => number;
let rowsWriter: typeof import("./store-batch.js").rowsWriter;

function fail(error: unknown): void {
	if (failed) return;
	failed = true;
	const { message, code } = error as { message?: unknown; code?: unknown };
	port.postMessage({ message: String(message ?? error), code: typeof code === "string" ? code : undefined });
	for (const [, each] of held) Atomics.add(state, CELL.merged, each.rows);
	held.clear();
	closeDb();
	Atomics.store(state, CELL.failed, 1);
	signal();
}

function closeDb(): void {
	try {
		if (db?.open) db.close();
	} catch {
		// A connection that cannot close holds nothing a rollback would not release as the thread ends.
	}
	db = null;
}

/** Write what a run holds, in id order (stable: a target twice keeps its order). */
function merge(run: string): void {
	const each = held.get(run);
	if (each === undefined || each.rows === 0) return;
	held.delete(run);
	const rows: PendingRow[] = [];
	for (const text of each.texts) for (const row of JSON.parse(text) as PendingRow[]) rows.push(row);
	let write = writers.get(run);
	if (write === undefined) {
		write = rowsWriter(db!, run, beat);
		writers.set(run, write);
	}
	rows.sort(byId);
	write.immediate(rows);
	Atomics.add(state, CELL.merged, each.rows);
	signal();
}

function handle(message: WriterMessage): void {
	beat();
	if (message.type === "rows") {
		let each = held.get(message.run);
		if (each === undefined) {
			each = { texts: [], rows: 0, chars: 0 };
			held.set(message.run, each);
		}
		each.texts.push(message.rows);
		each.rows += message.count;
		each.chars += message.chars;
		if (each.rows >= setup.mergeRows || each.chars >= setup.mergeChars) merge(message.run);
	} else {
		for (const run of [...held.keys()]) merge(run);
		Atomics.store(state, CELL.settled, message.seq);
		signal();
	}
}

async function start(): Promise<void> {
	try {
		// Loaded here, not at the top: a module that cannot load is reported as the store's failure.
		const [{ default: Sqlite }, batch, tuning] = await Promise.all([
			import("better-sqlite3"),
			import("./store-batch.js"),
			import("./store-tuning.js"),
		]);
		byId = batch.byId;
		rowsWriter = batch.rowsWriter;
		db = new Sqlite(setup.path, { fileMustExist: true, timeout: tuning.BUSY_TIMEOUT_MS });
		tuning.tuneConnection(db);
	} catch (error) {
		fail(error);
	}
	parentPort!.on("message", (message: WriterMessage | { type: "close" }) => {
		if (message.type === "close") {
			held.clear();
			closeDb();
			Atomics.store(state, CELL.closed, 1);
			signal();
			parentPort!.close();
			port.close();
			return;
		}
		if (failed || Atomics.load(state, CELL.cancel) === 1) {
			// Dropped: the next open folds these records in from results.jsonl.
			if (message.type === "rows") Atomics.add(state, CELL.merged, message.count);
			else Atomics.store(state, CELL.settled, message.seq);
			signal();
			return;
		}
		try {
			handle(message);
		} catch (error) {
			if (error instanceof Cancelled) {
				held.clear();
				return;
			}
			fail(error);
		}
	});
}

void start();
