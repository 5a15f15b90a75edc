import { existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Database, Statement } from "better-sqlite3";
import {
	CLI_WORDS,
	errorMessage,
	jsonlLines,
	NativeModuleError,
	type OptionWords,
	UsageError,
} from "../common/index.js";
import { OutputError, type ResultRecord } from "../output/index.js";
import { type ContractStateName, isHeldBack, readContractState, writeContractState } from "./contract-state.js";
import { openReader, openStore } from "./open-store.js";
import { ForwardRecordReader, parseRecord, readRecordAt } from "./results-lines.js";
import { StoreBatch } from "./store-batch.js";
import { StoreWriter, WRITER_AFTER_TARGETS } from "./store-writer.js";

/** The job's store: `<out>/<job>/history.sqlite` (docs/guides/incremental-runs.md, "The job store: `history.sqlite`"). */
export const HISTORY_FILE = "history.sqlite";
/** The home-made index of earlier versions: replaced by the store, removed once the store is rebuilt. */
export const OLD_HISTORY_FILE = ".history";

/** What the store keeps per target that freshness, --retry-failed and change tracking read. */
export interface TargetHistory {
	/** The latest record's status in the job's runs: "ok", "failed" (any other status counts as failed). */
	readonly latest: "ok" | "failed" | null;
	/** The latest ok record's finish time (epoch ms), or null. */
	readonly okAt: number | null;
	/** Its `content_hash`, or null. */
	readonly okHash: string | null;
	/** Its run (folder name) and byte offset in that run's results.jsonl, to read it back; null when none. */
	readonly okRun: string | null;
	readonly okOffset: number;
}

/** A crawled page whose latest record failed: its id, URL, depth and parent as recorded. */
export interface FailedCrawledPage {
	readonly id: string;
	readonly url: string;
	readonly depth: number;
	readonly parent: string | null;
}

/**
 * The job's history across its runs (incremental runs: freshness, change tracking, --retry-failed,
 * `export --latest`), kept in SQLite (`history.sqlite`, tables `runs` and `targets`) as a cache of the run
 * folders: each run's results.jsonl is the record of truth, and `runs.results_bytes` says how much of
 * it the store holds. Whatever was appended since (a run killed before its last batch, a resumed
 * session) is folded in at open; a missing, damaged or older store is rebuilt from the run folders, a
 * run folder deleted or rewritten shorter (`--resume --repair`) rebuilds it too.
 *
 * A run's records go in in batches of up to 2,000, one transaction each, on the caller's thread; once the
 * store holds `WRITER_AFTER_TARGETS` a writer thread takes them, in merges of `MERGE_ROWS` (store-writer.ts).
 * Lookups see what is committed.
 */
export interface JobHistory {
	get(id: string): TargetHistory | null;
	/**
	 * `get` for change tracking: the target's entry from the job's earlier runs. While the store holds no
	 * target but this run's own (empty once opened and folded, as on a job's first run, and no run folded
	 * in since by `accept` or `foldRun`), no earlier record can exist and this answers null without a
	 * lookup: a run never looks up a record of its own (each target is written once a run; a resumed
	 * session finds its earlier sessions folded in, so its store is not empty), and a shard's peers
	 * write other targets.
	 */
	previous(id: string): TargetHistory | null;
	/** The index of a run folder for `record` (the run is added to the store with its first batch). */
	runIndex(runId: string): number;
	/**
	 * Note a record just appended to a run's results.jsonl at `offset` (ending at `endOffset`). Never throws:
	 * a store that fails goes unsaved (`save` says so) and the next open folds the run in from results.jsonl.
	 */
	record(record: ResultRecord, runIndex: number, offset: number, endOffset: number): void;
	/** The ok record a history entry points at, read back from its run's results.jsonl; null when gone. */
	readOkRecord(entry: TargetHistory): ResultRecord | null;
	/** Commit the records noted and not yet written. Throws when some could not be kept. */
	save(): void;
	/**
	 * Write the records noted so far and wait for them (the writer thread's merges), so that a write of
	 * the caller's own through `db` does not wait behind one. Never throws: `save` reports a failure.
	 */
	settle(): void;
	/**
	 * Every target's newest ok record, read back from the run folders (grouped by run, in file order).
	 * Read through a connection of its own: the store may be looked up (`get`) while it is iterated.
	 */
	latestOkRecords(): Generator<ResultRecord>;
	/** The same, each with the run (folder name) it was read from. */
	latestOkEntries(): Generator<{ readonly record: ResultRecord; readonly run: string }>;
	/** Targets that never had an ok record (id, url), through a connection of its own. */
	neverOk(): Generator<{ id: string; url: string }>;
	/**
	 * Fold a run's records into the store from its results.jsonl (what is not folded yet), whatever its
	 * contract state: a run that passed its contract is promoted this way when it ends.
	 */
	foldRun(runId: string): void;
	/**
	 * `--accept RUN_ID`: promote a run held back by its contract. Its folder's `contract.json` says
	 * `accepted` (a rebuild keeps it), and its records go into the store (the later finish still wins
	 * per target). Throws `UsageError` for a run that is not there or not finished; returns false when
	 * there was nothing to accept (the run was promoted already).
	 */
	accept(runId: string): boolean;
	/** Crawled pages (seeds included) whose latest record failed, with where the crawl found them. */
	failedCrawledPages(): Generator<FailedCrawledPage>;
	/** Targets in the store. */
	readonly size: number;
	/**
	 * What the open found and repaired, for the caller to show (a rebuilt store, a replaced `.history`):
	 * one sentence each, without a trailing period.
	 */
	readonly warnings: readonly string[];
	/** The open database, for a caller's own queries (export). */
	readonly db: Database;
	/** Close the store (records noted and not saved are dropped: the next open folds them in again). */
	close(): void;
}

/**
 * What `--accept RUN_ID` would find: throws `UsageError` for a run id that is not one of the job's runs
 * or a run not judged yet; otherwise the run's contract state (`held` is the one that can be accepted).
 * Reads only the run folder: a caller checks it before anything is sent.
 */
export function acceptableState(
	jobDir: string,
	runId: string,
	words: OptionWords = CLI_WORDS,
): ContractStateName | null {
	if (!/^[\w.-]+$/.test(runId) || runId.startsWith("."))
		throw new UsageError(
			`${words.accept}: ${JSON.stringify(runId)} is not a run id (a folder name under output/<job>/)`,
		);
	const runDir = join(jobDir, runId);
	if (!existsSync(join(runDir, "results.jsonl"))) throw new UsageError(`${words.accept}: no run ${runId} in ${jobDir}`);
	const state = readContractState(runDir)?.state ?? null;
	if (state === "pending")
		throw new UsageError(
			`${words.accept}: run ${runId} has not completed (its contract is judged when it does): finish it with ${words.resumeOn} first`,
		);
	return state;
}

/**
 * `run --accept RUN_ID` promotes a held run and then runs the job: a run that is not held makes the
 * whole command a mistake (a paid run nobody asked for), refused before anything is sent.
 */
export function assertAcceptable(jobDir: string, runId: string, words: OptionWords = CLI_WORDS): void {
	const state = acceptableState(jobDir, runId, words);
	if (state === "held") return;
	throw new UsageError(
		`${words.accept}: run ${runId} is not held back by its data contract (${state === null ? "it has no contract verdict" : `it is ${state}`}): nothing to accept, and nothing was sent. To run the job, leave out ${words.accept}`,
	);
}

/** For tests: when the writer thread starts and how much a merge holds. */
export interface StoreWriterOptions {
	readonly writerAfterTargets?: number;
	readonly mergeRows?: number;
}

export function openJobHistory(jobDir: string, options: StoreWriterOptions = {}): JobHistory {
	const path = join(jobDir, HISTORY_FILE);
	const warnings: string[] = [];
	let db: Database;
	let created: boolean;
	try {
		const opened = openStore(path);
		db = opened.db;
		created = opened.created;
		if (opened.unusable !== null) warnings.push(`${path}: ${opened.unusable}; rebuilt from the run folders`);
	} catch (error) {
		// The addon or the Node, not the disk: said as what it is.
		if (error instanceof NativeModuleError || error instanceof UsageError) throw error;
		// No store can be made (a read-only folder, a full disk, a lock held past the busy timeout): a run
		// without its history would refetch what is fresh and call every page new, so it does not start
		// (exit 5, like any output failure).
		throw storeOutputError(path, error);
	}
	try {
		const folders = runFolders(jobDir);
		const oldIndex = join(jobDir, OLD_HISTORY_FILE);
		if (existsSync(oldIndex)) {
			warnings.push(
				`${oldIndex} (the history of an earlier scrapejob) is replaced by ${HISTORY_FILE}, rebuilt from the run folders`,
			);
		} else if (created && folders.length > 0 && warnings.length === 0) {
			warnings.push(`${path} was missing; rebuilt from the run folders`);
		}
		foldRunFolders(db, jobDir, folders);
		rmSync(oldIndex, { force: true });
	} catch (error) {
		db.close();
		throw storeOutputError(path, error);
	}
	return createJobHistory(db, jobDir, warnings, options);
}

/** The store could not be opened or folded into: a lock held elsewhere says who may hold it, as `save` does. */
function storeOutputError(path: string, error: unknown): OutputError {
	const hinted = lockedHint(error);
	return new OutputError(path, hinted === errorMessage(error) ? error : new Error(hinted, { cause: error }));
}

function createJobHistory(
	db: Database,
	jobDir: string,
	warnings: readonly string[],
	options: StoreWriterOptions,
): JobHistory {
	const lookup = db
		.prepare("SELECT status, finished_at, content_hash, ok_run, ok_offset FROM targets WHERE id = ?")
		.raw();
	// A lookup costs ~10 µs (WAL read, this run's batches in the log): ~13 % of a first run's CPU with
	// the inserts (the bench's cpu row, 20,000 targets), for an answer known to be null.
	const isEmpty = db.prepare("SELECT NOT EXISTS (SELECT 1 FROM targets)").pluck();
	/** No target in the store but this run's own: read at open, again after any other run is folded in. */
	let noEarlierTargets = isEmpty.get() === 1;
	const get = (id: string): TargetHistory | null => {
		const row = lookup.get(id) as [string, string | null, string | null, string | null, number | null] | undefined;
		if (row === undefined) return null;
		const okAt = row[1] === null ? null : Date.parse(row[1]);
		return {
			latest: row[0] === "ok" ? "ok" : "failed",
			okAt,
			okHash: okAt === null ? null : row[2],
			okRun: row[3],
			okOffset: row[4] ?? -1,
		};
	};
	const runs: string[] = [];
	const batches: StoreBatch[] = [];
	/** Why this run's records could not be kept, if they could not. */
	let lost: unknown = null;
	/** Targets in the store at open (never deleted one by one: the largest rowid is their count), and rows written since. */
	let stored = db.prepare("SELECT coalesce(max(rowid), 0) FROM targets").pluck().get() as number;
	const writerAfter = options.writerAfterTargets ?? WRITER_AFTER_TARGETS;
	let writer: StoreWriter | null = null;
	let writerTried = false;
	const fail = (error: unknown) => {
		// The records are safe in results.jsonl: the next open folds them in from there.
		lost ??= error;
		for (const each of batches) each.drop();
		writer?.close();
		writer = null;
	};
	const flush = (batch: StoreBatch) => {
		try {
			if (writer === null && !writerTried && stored >= writerAfter) {
				writerTried = true;
				// Rows written so far are committed: the writer's first merge starts where they end.
				writer = StoreWriter.start(db.name, { mergeRows: options.mergeRows });
			}
			if (writer === null) {
				stored += batch.size;
				batch.flush();
				return;
			}
			const rows = batch.take();
			let chars = 0;
			for (const row of rows) chars += row.data?.length ?? 0;
			writer.post(batch.runId, rows, chars);
			const failure = writer.failure();
			if (failure !== null) fail(failure);
		} catch (error) {
			fail(error);
		}
	};
	/** The writer's merges written through (before a write of this thread's own, and at save). */
	const settle = () => {
		if (writer === null) return;
		writer.settle();
		const failure = writer.failure();
		if (failure !== null) fail(failure);
	};
	return {
		get,
		previous: (id) => (noEarlierTargets ? null : get(id)),
		runIndex(runId) {
			let index = runs.indexOf(runId);
			if (index < 0) {
				index = runs.push(runId) - 1;
				batches.push(new StoreBatch(db, runId));
			}
			return index;
		},
		record(record, index, offset, endOffset) {
			const batch = batches[index];
			if (lost !== null || batch === undefined) return;
			try {
				if (batch.add(record, offset, endOffset)) flush(batch);
			} catch (error) {
				lost = error;
			}
		},
		readOkRecord(entry) {
			if (entry.okRun === null || entry.okOffset < 0) return null;
			return readRecordAt(join(jobDir, entry.okRun, "results.jsonl"), entry.okOffset);
		},
		save() {
			for (const batch of batches) flush(batch);
			settle();
			// Its memory and connection go with the run's last records; records noted after this start
			// another writer at their next batch.
			writer?.close();
			writer = null;
			writerTried = false;
			if (lost !== null) {
				throw new Error(
					`this run's records could not be kept in the job's store (${lockedHint(lost)}); the next run folds them in from results.jsonl`,
				);
			}
		},
		settle() {
			for (const batch of batches) flush(batch);
			settle();
		},
		*latestOkRecords() {
			for (const entry of this.latestOkEntries()) yield entry.record;
		},
		*latestOkEntries() {
			const reader = openReader(join(jobDir, HISTORY_FILE));
			try {
				yield* latestOkRecords(reader, jobDir);
			} finally {
				reader.close();
			}
		},
		*neverOk() {
			const reader = openReader(join(jobDir, HISTORY_FILE));
			try {
				const rows = reader.prepare("SELECT id, url FROM targets WHERE ok_run IS NULL ORDER BY id").raw();
				for (const [id, url] of rows.iterate() as IterableIterator<[string, string]>) yield { id, url };
			} finally {
				reader.close();
			}
		},
		foldRun(runId) {
			settle();
			foldRun(db, jobDir, runId);
			noEarlierTargets &&= isEmpty.get() === 1;
		},
		accept(runId) {
			const runDir = join(jobDir, runId);
			if (acceptableState(jobDir, runId) !== "held") return false;
			writeContractState(runDir, "accepted");
			settle();
			foldRun(db, jobDir, runId);
			noEarlierTargets &&= isEmpty.get() === 1;
			return true;
		},
		*failedCrawledPages() {
			// Its own connection: the run looks targets up (and writes) while the crawler reads these.
			const reader = openReader(join(jobDir, HISTORY_FILE));
			try {
				const rows = reader
					.prepare(
						"SELECT id, url, depth, parent FROM targets WHERE status <> 'ok' AND depth IS NOT NULL ORDER BY depth",
					)
					.raw();
				for (const [id, url, depth, parent] of rows.iterate() as IterableIterator<
					[string, string, number, string | null]
				>)
					yield { id, url, depth, parent };
			} finally {
				reader.close();
			}
		},
		get size() {
			return db.prepare("SELECT count(*) FROM targets").pluck().get() as number;
		},
		warnings,
		db,
		close() {
			for (const batch of batches) batch.drop();
			writer?.close();
			writer = null;
			if (db.open) db.close();
		},
	};
}

/** Each target's newest ok record, read run by run, each run's results.jsonl once, front to back. */
function* latestOkRecords(db: Database, jobDir: string): Generator<{ record: ResultRecord; run: string }> {
	// SQLite sorts on disk past its cache: memory stays flat whatever the count.
	const places: Statement = db
		.prepare("SELECT ok_run, ok_offset FROM targets WHERE ok_run IS NOT NULL ORDER BY ok_run, ok_offset")
		.raw();
	let run: string | null = null;
	let reader: ForwardRecordReader | null = null;
	try {
		for (const [okRun, okOffset] of places.iterate() as IterableIterator<[string, number]>) {
			if (okRun !== run) {
				reader?.close();
				reader = null;
				run = okRun;
				try {
					reader = new ForwardRecordReader(join(jobDir, okRun, "results.jsonl"));
				} catch {
					// The run folder is gone: the next open rebuilds the store without it.
				}
			}
			const record = reader?.at(okOffset);
			if (record) yield { record, run: okRun };
		}
	} finally {
		reader?.close();
	}
}

/** Run folders of the job (those with results), oldest first by name. */
function runFolders(jobDir: string): string[] {
	if (!existsSync(jobDir)) return [];
	return readdirSync(jobDir, { withFileTypes: true })
		.filter((entry) => entry.isDirectory() && existsSync(join(jobDir, entry.name, "results.jsonl")))
		.map((entry) => entry.name)
		.sort();
}

/**
 * Bring the store up to the run folders: a run folder gone, or a results.jsonl shorter than what was
 * folded of it (rewritten), empties the store first; then what each results.jsonl holds past its folded
 * bytes goes in, a batch per transaction.
 */
function foldRunFolders(db: Database, jobDir: string, folders: readonly string[]): void {
	const folded = new Map(
		(db.prepare("SELECT id, results_bytes FROM runs").raw().all() as Array<[string, number]>).map(([id, bytes]) => [
			id,
			bytes,
		]),
	);
	const present = new Set(folders);
	const stale = [...folded].some(([id, bytes]) => !present.has(id) || resultsSize(jobDir, id) < bytes);
	if (stale) {
		db.exec("BEGIN IMMEDIATE; DELETE FROM targets; DELETE FROM runs; COMMIT;");
		folded.clear();
	}
	for (const id of folders) {
		const from = folded.get(id) ?? 0;
		if (resultsSize(jobDir, id) <= from) continue;
		// A run its contract holds back (or not judged yet) stays out of "latest" (contract-state.ts).
		if (isHeldBack(join(jobDir, id))) continue;
		foldFrom(db, jobDir, id, from);
	}
}

/** One run's records past what the store holds of it. */
function foldRun(db: Database, jobDir: string, runId: string): void {
	const from =
		(db.prepare("SELECT results_bytes FROM runs WHERE id = ?").pluck().get(runId) as number | undefined) ?? 0;
	foldFrom(db, jobDir, runId, from);
}

function foldFrom(db: Database, jobDir: string, runId: string, from: number): void {
	const batch = new StoreBatch(db, runId);
	for (const line of jsonlLines(join(jobDir, runId, "results.jsonl"), { from })) {
		const record = parseRecord(line.text);
		// A line that is not a record is not history; the bytes past it are still folded.
		if (record !== null && batch.add(record, line.offset, line.end)) batch.flush();
	}
	batch.flush();
}

/** The size of a run's results.jsonl, -1 when it is gone. */
function resultsSize(jobDir: string, runId: string): number {
	try {
		return statSync(join(jobDir, runId, "results.jsonl")).size;
	} catch {
		return -1;
	}
}

/** A store error in words; a lock held elsewhere says who may hold it. */
export function lockedHint(error: unknown): string {
	const text = errorMessage(error);
	return /database is locked|SQLITE_BUSY/i.test(text)
		? `${text}: another process holds a write on history.sqlite — another run of the job, an export, or a sqlite3 shell left in a transaction`
		: text;
}
