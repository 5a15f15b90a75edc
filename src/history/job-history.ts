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
	writeSync,
} from "node:fs";
import { join } from "node:path";
import type { ResultRecord } from "../output/index.js";
import { HistoryIndex, type TargetHistory } from "./history-index.js";

/** The per-job history file: `output/<job>/.history` (one file, replaced atomically). */
export const HISTORY_FILE = ".history";
/** Bumped whenever the layout changes: an older file is then rebuilt from the run folders. */
const MAGIC = "SJH3";
const TEMPORARY_SUFFIX = ".tmp";

interface FoldedRun {
	/** Run folder name. */
	readonly id: string;
	/** Bytes of its results.jsonl folded into the index so far. */
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
 */
export interface JobHistory {
	get(id: string): TargetHistory | null;
	/** The index of a run folder among the folded runs (added when new). */
	runIndex(runId: string): number;
	/** Note a record just appended to a run's results.jsonl at `offset`. */
	record(record: ResultRecord, runIndex: number, offset: number, endOffset: number): void;
	/** The ok record a history entry points at, read back from its run's results.jsonl; null when gone. */
	readOkRecord(entry: TargetHistory): ResultRecord | null;
	/** Write the history file (atomically). */
	save(): void;
	/**
	 * Make room for `count` targets in all at once (a run that knows its count; most of an incremental
	 * run's targets are in the history already): no growing step by step while the run goes.
	 */
	reserve(count: number): void;
	/** Every target's newest ok record across the runs, read back from the run folders (grouped by run, in file order). */
	latestOkRecords(): Generator<ResultRecord>;
	readonly size: number;
}

export function openJobHistory(jobDir: string): JobHistory {
	removeStaleTemporaries(jobDir);
	let index = new HistoryIndex();
	let runs: FoldedRun[] = [];
	const path = join(jobDir, HISTORY_FILE);
	try {
		const loaded = readHistoryFile(path);
		index = loaded.index;
		runs = loaded.runs;
	} catch {
		// Missing or damaged: rebuilt below from the run folders themselves.
		index = new HistoryIndex();
		runs = [];
	}
	// A run folder deleted (old runs pruned) or a results.jsonl that shrank (`--resume --repair` rewrites
	// it) leaves entries pointing at records that are gone: start again from the run folders as they are.
	if (runs.some((run) => resultsSize(jobDir, run.id) < run.bytes)) {
		index = new HistoryIndex();
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
	// Fold what the file does not know yet, oldest run first (run ids sort by time).
	for (const name of runFolders(jobDir)) {
		const position = runIndex(name);
		const run = runs[position]!;
		run.bytes = foldResults(index, join(jobDir, name, "results.jsonl"), position, run.bytes);
	}
	return {
		get: (id) => index.get(id),
		runIndex,
		record(record, position, offset, endOffset) {
			index.record(record.id, record.status, Date.parse(record.finished_at), record.content_hash, position, offset);
			const run = runs[position];
			if (run && endOffset > run.bytes) run.bytes = endOffset;
		},
		readOkRecord(entry) {
			const run = runs[entry.okRun];
			if (!run || entry.okOffset < 0) return null;
			return readLineAt(join(jobDir, run.id, "results.jsonl"), entry.okOffset);
		},
		save() {
			mkdirSync(jobDir, { recursive: true });
			const header = Buffer.from(JSON.stringify({ runs }), "utf8");
			const head = Buffer.alloc(8);
			head.write(MAGIC, 0, "latin1");
			head.writeUInt32LE(header.length, 4);
			// pid and random: shards on other hosts may save the same job's history at the same moment.
			const temporary = `${path}.${process.pid}-${randomBytes(4).toString("hex")}${TEMPORARY_SUFFIX}`;
			const fd = openSync(temporary, "wx");
			try {
				writeSync(fd, head);
				writeSync(fd, header);
				// Column by column from memory: the table is never copied whole to be saved.
				index.writeTo(fd);
				closeSync(fd);
			} catch (error) {
				closeSync(fd);
				rmSync(temporary, { force: true });
				throw error;
			}
			renameSync(temporary, path);
		},
		reserve(count) {
			index.reserve(count);
		},
		get size() {
			return index.size;
		},
		*latestOkRecords() {
			// Places as one sortable 64-bit key each (run in the high 24 bits, offset in the low 40), so a
			// million of them sort natively, then each run's results.jsonl is read once, front to back.
			const keys = new BigUint64Array(index.size);
			let count = 0;
			for (const place of index.okPlaces()) keys[count++] = (BigInt(place.run) << 40n) | BigInt(place.offset);
			const sorted = keys.subarray(0, count).sort();
			let at = 0;
			while (at < sorted.length) {
				const run = Number(sorted[at]! >> 40n);
				const offsets: number[] = [];
				for (; at < sorted.length && Number(sorted[at]! >> 40n) === run; at += 1) {
					offsets.push(Number(sorted[at]! & 0xff_ffff_ffffn));
				}
				const folder = runs[run];
				if (folder) yield* readLinesAt(join(jobDir, folder.id, "results.jsonl"), offsets);
			}
		},
	};
}

function readHistoryFile(path: string): { index: HistoryIndex; runs: FoldedRun[] } {
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
		const at = 8 + headerLength;
		return { index: HistoryIndex.readFrom(fd, at, size - at), runs: header.runs };
	} finally {
		closeSync(fd);
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
function foldResults(index: HistoryIndex, path: string, position: number, from: number): number {
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
				foldLine(index, data.subarray(lineStart, newline), position, carryStart + lineStart);
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

function foldLine(index: HistoryIndex, line: Buffer, position: number, offset: number): void {
	if (line.length === 0) return;
	try {
		const record = JSON.parse(line.toString("utf8")) as ResultRecord;
		if (typeof record.id !== "string" || typeof record.finished_at !== "string") return;
		index.record(
			record.id,
			record.status,
			Date.parse(record.finished_at),
			record.content_hash ?? null,
			position,
			offset,
		);
	} catch {
		// A line that is not a record: not history.
	}
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
