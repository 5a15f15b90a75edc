import type { Database, Statement, Transaction } from "better-sqlite3";
import type { ResultRecord } from "../output/index.js";
import { UPSERT_RUN, UPSERT_TARGET } from "./store-schema.js";

/** Records a batch holds before it is written in one transaction. @default 2,000 */
export const BATCH_RECORDS = 2_000;
/** Bytes of extracted data a batch holds before it is written, whatever its count. */
export const BATCH_DATA_CHARS = 8 << 20;

/** What the store keeps of one record (the record itself, with its content, is not held). */
export interface PendingRow {
	readonly id: string;
	readonly url: string;
	readonly status: string;
	readonly at: string;
	readonly okAt: string | null;
	readonly hash: string | null;
	/**
	 * The record says `change: unchanged` though its hash may differ (a field the job's `extract:` gained
	 * since: docs/behaviour.md, "Change tracking"): it does not move `changed_at`.
	 */
	readonly unchanged: boolean;
	readonly data: string | null;
	readonly credits: number;
	/** A crawled page's depth and parent (null outside a crawl): `--retry-failed` retries it where it was. */
	readonly depth: number | null;
	readonly parent: string | null;
	readonly offset: number;
	readonly end: number;
}

/**
 * `Date#toISOString`'s form for years 0–9999, fields in range: a record's `finished_at` as the runner
 * writes it. Text order of such times is time order, which is all the store needs of them.
 */
const STORE_TIME = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/** A finish time as the store writes it (ISO, milliseconds, UTC), so that text order is time order. */
export function storeTime(text: string): string {
	// Already in that form (every record the runner writes): kept, not parsed and printed again (~1 µs).
	if (STORE_TIME.test(text)) return text;
	const at = Date.parse(text);
	return new Date(Number.isFinite(at) ? at : 0).toISOString();
}

/**
 * One run's records on their way into the store, written a batch at a time in one transaction each (so
 * a record costs an upsert, not a transaction). A batch starts where the store's `runs.results_bytes`
 * says it must: records another process folded meanwhile (a run folded by a shard's open while it
 * runs) are not counted twice.
 */
export class StoreBatch {
	readonly #runId: string;
	readonly #write: Transaction<(rows: readonly PendingRow[]) => void>;
	#rows: PendingRow[] = [];
	#dataChars = 0;

	constructor(db: Database, runId: string) {
		this.#runId = runId;
		this.#write = rowsWriter(db, runId);
	}

	get size(): number {
		return this.#rows.length;
	}

	/** Note a record that ends at byte `end` of the run's results.jsonl; true when the batch is due. */
	add(record: ResultRecord, offset: number, end: number): boolean {
		const row = pendingRow(record, offset, end);
		this.#rows.push(row);
		this.#dataChars += row.data?.length ?? 0;
		return this.#rows.length >= BATCH_RECORDS || this.#dataChars >= BATCH_DATA_CHARS;
	}

	/** Hand over what is held, unsorted and unwritten (a writer thread writes it). */
	take(): PendingRow[] {
		const rows = this.#rows;
		this.#rows = [];
		this.#dataChars = 0;
		return rows;
	}

	/** Write what is held in one transaction (busy-waiting on another process's, up to the store's timeout). */
	flush(): void {
		if (this.#rows.length === 0) return;
		const rows = this.#rows;
		this.#rows = [];
		this.#dataChars = 0;
		// In key order: the upserts then walk the id index's pages once each, in order (ids are random).
		// A stable sort: a target twice in one batch keeps its order.
		rows.sort(byId);
		this.#write.immediate(rows);
	}

	/** Drop what is held (its records are folded in from results.jsonl at the next open). */
	drop(): void {
		this.#rows = [];
		this.#dataChars = 0;
	}

	get runId(): string {
		return this.#runId;
	}
}

/** A record as the store keeps it. */
export function pendingRow(record: ResultRecord, offset: number, end: number): PendingRow {
	const ok = record.status === "ok";
	const data = ok && record.data != null ? JSON.stringify(record.data) : null;
	const credits = Number(record.credits_used);
	const at = storeTime(record.finished_at);
	return {
		id: record.id,
		url: String(record.url),
		status: String(record.status),
		at,
		okAt: ok ? at : null,
		hash: ok && typeof record.content_hash === "string" ? record.content_hash : null,
		unchanged: ok && record.change === "unchanged",
		data,
		credits: Number.isFinite(credits) ? credits : 0,
		depth: Number.isSafeInteger(record.depth) ? record.depth : null,
		parent: typeof record.parent === "string" ? record.parent : null,
		offset,
		end,
	};
}

/**
 * One transaction writing a run's rows (contiguous in its results.jsonl) and adding them to its `runs`
 * figures. It starts where `runs.results_bytes` says: rows another connection folded meanwhile are
 * skipped, so a batch cut by a kill, or folded twice, never counts a credit twice. `each` is called
 * before every 1,024th row (a writer thread's progress and cancel check: a throw rolls the batch back).
 */
export function rowsWriter(
	db: Database,
	runId: string,
	each?: () => void,
): Transaction<(rows: readonly PendingRow[]) => void> {
	const statements = storeStatements(db);
	return db.transaction((rows: readonly PendingRow[]) => {
		const folded = (statements.runBytes.get(runId) as number | undefined) ?? 0;
		const run = { id: runId, bytes: folded, records: 0, ok: 0, failed: 0, credits: 0, first: null, last: null } as {
			id: string;
			bytes: number;
			records: number;
			ok: number;
			failed: number;
			credits: number;
			first: string | null;
			last: string | null;
		};
		for (let index = 0; index < rows.length; index++) {
			const row = rows[index]!;
			if (each !== undefined && (index & 1023) === 0) each();
			if (row.offset < folded) continue;
			// UPSERT_TARGET's order: id, url, status, status_at, ok_run, ok_offset, finished_at, content_hash,
			// changed_at, data, credits, depth, parent; then whether the record says it is unchanged.
			statements.target.run(
				row.id,
				row.url,
				row.status,
				row.at,
				row.okAt === null ? null : runId,
				row.okAt === null ? null : row.offset,
				row.okAt,
				row.hash,
				row.okAt,
				row.data,
				row.credits,
				row.depth,
				row.parent,
				row.unchanged ? 1 : 0,
			);
			run.records += 1;
			if (row.status === "ok") run.ok += 1;
			else run.failed += 1;
			run.credits += row.credits;
			if (run.first === null || row.at < run.first) run.first = row.at;
			if (run.last === null || row.at > run.last) run.last = row.at;
			if (row.end > run.bytes) run.bytes = row.end;
		}
		statements.run.run(run);
	});
}

export function byId(a: PendingRow, b: PendingRow): number {
	return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

interface StoreStatements {
	readonly target: Statement;
	readonly run: Statement;
	readonly runBytes: Statement;
}

const prepared = new WeakMap<Database, StoreStatements>();

function storeStatements(db: Database): StoreStatements {
	let statements = prepared.get(db);
	if (!statements) {
		statements = {
			target: db.prepare(UPSERT_TARGET),
			run: db.prepare(UPSERT_RUN),
			runBytes: db.prepare("SELECT results_bytes FROM runs WHERE id = ?").pluck(),
		};
		prepared.set(db, statements);
	}
	return statements;
}
