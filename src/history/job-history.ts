import { randomBytes } from "node:crypto";
import {
	closeSync,
	existsSync,
	fstatSync,
	mkdirSync,
	openSync,
	readdirSync,
	readSync,
	renameSync,
	rmSync,
	statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OutputError, type ResultRecord } from "../output/index.js";
import { idKey, ROW_BYTES, type TargetHistory } from "./history-rows.js";
import { PendingRows } from "./pending-rows.js";
import { mergeRows, openScratchFile, RowWriter, SortedRowsFile, writeAll } from "./sorted-rows.js";

/** The per-job history file: `output/<job>/.history` (one file, replaced atomically). */
export const HISTORY_FILE = ".history";
/** Bumped whenever the layout changes: an older file is then rebuilt from the run folders. */
const MAGIC = "SJH4";
const TEMPORARY_SUFFIX = ".tmp";

interface FoldedRun {
	/** Run folder name. */
	readonly id: string;
	/** Bytes of its results.jsonl folded into the history so far. */
	bytes: number;
}

/**
 * The job's history across its runs (incremental runs: freshness, change tracking, --retry-failed):
 * for each target its latest status and its latest ok record's time, content hash and place.
 *
 * Kept by scrapejob in one file replaced atomically (temp + rename) at the end of each run, so an
 * interrupted run never corrupts it. It remembers how many bytes of each run's results.jsonl it has
 * folded in; whatever was appended since (a run killed before it saved, a resumed session) is folded
 * in when the history is next opened, and a deleted or damaged file is rebuilt from the run folders.
 *
 * The file is rows sorted by target key, looked up one block at a time from disk; the records a run
 * adds wait in bounded memory (`PendingRows`) and are merged in by `save`, so memory stays flat
 * whatever the job's size (issue #9). Lookups see the history as opened (or last saved): a run looks
 * up each target before it records it, and records each once.
 */
export interface JobHistory {
	get(id: string): TargetHistory | null;
	/** The index of a run folder among the folded runs (added when new). */
	runIndex(runId: string): number;
	/** Note a record just appended to a run's results.jsonl at `offset`. */
	record(record: ResultRecord, runIndex: number, offset: number, endOffset: number): void;
	/** The ok record a history entry points at, read back from its run's results.jsonl; null when gone. */
	readOkRecord(entry: TargetHistory): ResultRecord | null;
	/** Write the history file (atomically), the records noted since it was opened merged in. */
	save(): void;
	/** Every target's newest ok record across the runs, read back from the run folders (grouped by run, in file order). */
	latestOkRecords(): Generator<ResultRecord>;
	/** Targets in the history as opened or last saved. */
	readonly size: number;
	/** Close its files (records noted and not saved are dropped: the next open folds them in again). */
	close(): void;
}

export interface JobHistoryOptions {
	/** Rows held in memory before they are sorted into a scratch file. @default 65,536 */
	readonly chunkRows?: number;
	/** Where scratch files go: the first folder one can be made in. @default [the job's folder, the system's temporary folder] */
	readonly scratchDirs?: readonly string[];
}

export function openJobHistory(jobDir: string, options: JobHistoryOptions = {}): JobHistory {
	removeStaleTemporaries(jobDir);
	const path = join(jobDir, HISTORY_FILE);
	const scratchDirs = options.scratchDirs ?? [jobDir, tmpdir()];
	let sorted: SortedRowsFile | null = null;
	let runs: FoldedRun[] = [];
	try {
		({ sorted, runs } = readHistoryFile(path));
	} catch {
		// Missing or damaged: rebuilt below from the run folders themselves.
	}
	// A run folder deleted (old runs pruned) or a results.jsonl that shrank (`--resume --repair` rewrites
	// it) leaves entries pointing at records that are gone: start again from the run folders as they are.
	if (runs.some((run) => resultsSize(jobDir, run.id) < run.bytes)) {
		sorted?.close();
		sorted = null;
		runs = [];
	}
	const byId = new Map(runs.map((run, position) => [run.id, position]));
	const runIndex = (runId: string) => {
		let position = byId.get(runId);
		if (position === undefined) {
			position = runs.length;
			runs.push({ id: runId, bytes: 0 });
			byId.set(runId, position);
		}
		return position;
	};
	let pending = new PendingRows(scratchDirs, options.chunkRows);
	try {
		// Fold what the file does not know yet, oldest run first (run ids sort by time).
		for (const name of runFolders(jobDir)) {
			const position = runIndex(name);
			const run = runs[position]!;
			run.bytes = foldResults(pending, join(jobDir, name, "results.jsonl"), position, run.bytes);
		}
		// What was folded is merged in at once (into a scratch file; the saved file is replaced by `save`
		// only): lookups then read one sorted file.
		if (pending.size > 0) {
			const fd = openScratchFile(scratchDirs);
			const merged = new SortedRowsFile(fd, 0, merge(sorted, pending, new RowWriter(fd, 0)));
			sorted?.close();
			sorted = merged;
		}
	} catch (error) {
		sorted?.close();
		// The disk full or unreadable: a run without its history would refetch what is fresh and call
		// every page new, so it does not start (exit 5, like any output failure).
		throw new OutputError(path, error);
	} finally {
		pending.close();
	}
	pending = new PendingRows(scratchDirs, options.chunkRows);
	/** Why this run's records could not be kept for the history (a scratch file failed), if they could not. */
	let lost: unknown = null;
	return {
		get(id) {
			if (sorted === null) return null;
			const key = idKey(id);
			return sorted.get(key[0], key[1]);
		},
		runIndex,
		record(record, position, offset, endOffset) {
			if (lost !== null) return;
			try {
				pending.add(record, position, offset);
			} catch (error) {
				// The record itself is safe in results.jsonl: the history goes unsaved and the next open
				// folds this run in from there. The run goes on.
				lost = error;
				pending.close();
				return;
			}
			const run = runs[position];
			if (run && endOffset > run.bytes) run.bytes = endOffset;
		},
		readOkRecord(entry) {
			const run = runs[entry.okRun];
			if (!run || entry.okOffset < 0) return null;
			return readLineAt(join(jobDir, run.id, "results.jsonl"), entry.okOffset);
		},
		save() {
			if (lost !== null) {
				throw new Error(
					`this run's records could not be kept for it (${lost instanceof Error ? lost.message : String(lost)}); the next run folds them in from results.jsonl`,
				);
			}
			mkdirSync(jobDir, { recursive: true });
			const header = Buffer.from(JSON.stringify({ runs }), "utf8");
			const head = Buffer.alloc(8);
			head.write(MAGIC, 0, "latin1");
			head.writeUInt32LE(header.length, 4);
			// pid and random: shards on other hosts may save the same job's history at the same moment.
			const temporary = `${path}.${process.pid}-${randomBytes(4).toString("hex")}${TEMPORARY_SUFFIX}`;
			const fd = openSync(temporary, "wx+");
			let saved: SortedRowsFile;
			try {
				writeAll(fd, head, 0);
				writeAll(fd, header, 8);
				const start = 8 + header.length;
				// One pass over the saved rows and this run's, front to back: nothing is held whole.
				saved = new SortedRowsFile(fd, start, merge(sorted, pending, new RowWriter(fd, start)));
				renameSync(temporary, path);
			} catch (error) {
				closeSync(fd);
				rmSync(temporary, { force: true });
				throw error;
			}
			// Lookups now read the file just saved; the merged rows are no longer pending.
			sorted?.close();
			sorted = saved;
			pending.close();
			pending = new PendingRows(scratchDirs, options.chunkRows);
		},
		get size() {
			return sorted?.count ?? 0;
		},
		*latestOkRecords() {
			if (sorted === null) return;
			// Places as one sortable 64-bit key each (run in the high 24 bits, offset in the low 40), so a
			// million of them sort natively, then each run's results.jsonl is read once, front to back.
			const keys = new BigUint64Array(sorted.count);
			let count = 0;
			for (const cursor = sorted.cursor(); !cursor.done; cursor.advance()) {
				const place = cursor.rows.okPlace(cursor.row);
				if (place) keys[count++] = (BigInt(place.run) << 40n) | BigInt(place.offset);
			}
			const places = keys.subarray(0, count).sort();
			let at = 0;
			while (at < places.length) {
				const run = Number(places[at]! >> 40n);
				const offsets: number[] = [];
				for (; at < places.length && Number(places[at]! >> 40n) === run; at += 1) {
					offsets.push(Number(places[at]! & 0xff_ffff_ffffn));
				}
				const folder = runs[run];
				if (folder) yield* readLinesAt(join(jobDir, folder.id, "results.jsonl"), offsets);
			}
		},
		close() {
			sorted?.close();
			sorted = null;
			pending.close();
		},
	};
}

/** The sorted rows and the pending ones, merged through `writer` (the sorted file's rows are the older). */
function merge(sorted: SortedRowsFile | null, pending: PendingRows, writer: RowWriter) {
	return mergeRows(writer, sorted ? [sorted.cursor(), ...pending.cursors()] : pending.cursors());
}

function readHistoryFile(path: string): { sorted: SortedRowsFile; runs: FoldedRun[] } {
	const fd = openSync(path, "r");
	try {
		const size = fstatSync(fd).size;
		const head = Buffer.alloc(8);
		if (readSync(fd, head, 0, 8, 0) !== 8 || head.subarray(0, 4).toString("latin1") !== MAGIC) {
			throw new Error("not a history file");
		}
		const headerLength = head.readUInt32LE(4);
		if (8 + headerLength > size) throw new Error("not a history file");
		const headerBytes = Buffer.alloc(headerLength);
		if (readSync(fd, headerBytes, 0, headerLength, 8) !== headerLength) throw new Error("not a history file");
		const header = JSON.parse(headerBytes.toString("utf8")) as { runs: FoldedRun[] };
		if (!Array.isArray(header.runs)) throw new Error("not a history file");
		const start = 8 + headerLength;
		if ((size - start) % ROW_BYTES !== 0) throw new Error("not a history file");
		// The file stays open for lookups (a save elsewhere replaces the name, never these bytes).
		return { sorted: SortedRowsFile.scan(fd, start, (size - start) / ROW_BYTES), runs: header.runs };
	} catch (error) {
		closeSync(fd);
		throw error;
	}
}

/**
 * A save's temporary file left by a killed process: removed at open once it is an hour old (younger
 * ones may be another host's save in progress, shards sharing the volume).
 */
function removeStaleTemporaries(jobDir: string): void {
	let names: string[];
	try {
		names = readdirSync(jobDir);
	} catch {
		return;
	}
	const hourAgo = Date.now() - 3_600_000;
	for (const name of names) {
		if (!name.startsWith(`${HISTORY_FILE}.`) || !name.endsWith(TEMPORARY_SUFFIX)) continue;
		try {
			if (statSync(join(jobDir, name)).mtimeMs < hourAgo) rmSync(join(jobDir, name), { force: true });
		} catch {
			// Gone already, or not ours to remove.
		}
	}
}

/** The size of a run's results.jsonl, -1 when it is gone. */
function resultsSize(jobDir: string, runId: string): number {
	try {
		return statSync(join(jobDir, runId, "results.jsonl")).size;
	} catch {
		return -1;
	}
}

/** Run folders of the job (those with results), oldest first. */
function runFolders(jobDir: string): string[] {
	if (!existsSync(jobDir)) return [];
	return readdirSync(jobDir, { withFileTypes: true })
		.filter((entry) => entry.isDirectory() && existsSync(join(jobDir, entry.name, "results.jsonl")))
		.map((entry) => entry.name)
		.sort();
}

/** Fold the records of a results.jsonl from byte `from` on; returns the bytes folded (whole lines only). */
function foldResults(pending: PendingRows, path: string, position: number, from: number): number {
	let size: number;
	try {
		size = statSync(path).size;
	} catch {
		return from;
	}
	if (size <= from) return size < from ? 0 : from;
	const fd = openSync(path, "r");
	try {
		const chunk = Buffer.alloc(1 << 20);
		let offset = from;
		let carry = Buffer.alloc(0);
		let carryStart = from;
		for (;;) {
			const read = readSync(fd, chunk, 0, chunk.length, offset);
			if (read === 0) break;
			offset += read;
			const data = carry.length ? Buffer.concat([carry, chunk.subarray(0, read)]) : chunk.subarray(0, read);
			let lineStart = 0;
			for (let newline = data.indexOf(10); newline >= 0; newline = data.indexOf(10, lineStart)) {
				foldLine(pending, data.subarray(lineStart, newline), position, carryStart + lineStart);
				lineStart = newline + 1;
			}
			carry = Buffer.from(data.subarray(lineStart));
			carryStart += lineStart;
		}
		// A torn last line is not folded: the next open tries it again once it is whole.
		return carryStart;
	} finally {
		closeSync(fd);
	}
}

function foldLine(pending: PendingRows, line: Buffer, position: number, offset: number): void {
	if (line.length === 0) return;
	let record: ResultRecord;
	try {
		record = JSON.parse(line.toString("utf8")) as ResultRecord;
	} catch {
		return; // A line that is not a record: not history.
	}
	if (typeof record?.id !== "string" || typeof record.finished_at !== "string") return;
	// Outside the parse's catch: a scratch file that cannot be written is not a bad line.
	pending.add(record, position, offset);
}

/** The records starting at these byte offsets (ascending) of a results.jsonl, in one forward read. */
function* readLinesAt(path: string, offsets: readonly number[]): Generator<ResultRecord> {
	let fd: number;
	try {
		fd = openSync(path, "r");
	} catch {
		return;
	}
	try {
		let buffer = Buffer.alloc(0);
		let bufferStart = 0;
		let fileAt = 0;
		const chunk = Buffer.alloc(1 << 20);
		for (const offset of offsets) {
			if (offset < bufferStart || offset > bufferStart + buffer.length) {
				buffer = Buffer.alloc(0);
				bufferStart = offset;
				fileAt = offset;
			}
			let newline = buffer.indexOf(10, offset - bufferStart);
			while (newline < 0) {
				const read = readSync(fd, chunk, 0, chunk.length, fileAt);
				if (read === 0) break;
				fileAt += read;
				// Keep only from this record on: memory stays at about a chunk whatever the file's size.
				buffer = Buffer.concat([buffer.subarray(offset - bufferStart), chunk.subarray(0, read)]);
				bufferStart = offset;
				newline = buffer.indexOf(10);
			}
			if (newline < 0) return;
			try {
				yield JSON.parse(buffer.toString("utf8", offset - bufferStart, newline)) as ResultRecord;
			} catch {
				// Not a record any more (the file was rewritten): skipped; the next open rebuilds the history.
			}
		}
	} finally {
		closeSync(fd);
	}
}

function readLineAt(path: string, offset: number): ResultRecord | null {
	let fd: number;
	try {
		fd = openSync(path, "r");
	} catch {
		return null;
	}
	try {
		const chunks: Buffer[] = [];
		let at = offset;
		for (;;) {
			const buffer = Buffer.alloc(64 * 1024);
			const read = readSync(fd, buffer, 0, buffer.length, at);
			if (read === 0) break;
			const newline = buffer.subarray(0, read).indexOf(10);
			if (newline >= 0) {
				chunks.push(buffer.subarray(0, newline));
				break;
			}
			chunks.push(buffer.subarray(0, read));
			at += read;
		}
		return JSON.parse(Buffer.concat(chunks).toString("utf8")) as ResultRecord;
	} catch {
		return null;
	} finally {
		closeSync(fd);
	}
}
