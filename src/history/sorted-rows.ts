import { closeSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { HistoryRows, keyBefore, ROW_BYTES, type TargetHistory } from "./history-rows.js";

/** Rows per block of a sorted file: the unit one lookup reads (3 KiB). */
const BLOCK_ROWS = 64;
/** Rows read or written at a time when a sorted file is streamed (48 KiB). */
const STREAM_ROWS = 1024;

/** Where rows are read from, one at a time, in key order. */
export interface RowCursor {
	readonly done: boolean;
	/** The current row is `rows`' row number `row`. */
	readonly rows: HistoryRows;
	readonly row: number;
	advance(): void;
}

/** Fill `bytes` from `position`; returns how many bytes there were. */
function readAll(fd: number, bytes: Uint8Array, position: number): number {
	let read = 0;
	while (read < bytes.length) {
		const got = readSync(fd, bytes, read, bytes.length - read, position + read);
		if (got === 0) break;
		read += got;
	}
	return read;
}

/** Write all of `bytes` at `position` (a short write is continued, not taken for the whole). */
export function writeAll(fd: number, bytes: Uint8Array, position: number): void {
	for (let written = 0; written < bytes.length; ) {
		written += writeSync(fd, bytes, written, bytes.length - written, position + written);
	}
}

/**
 * A file for rows nobody else needs to see (a spilled chunk, the history as opened), removed from
 * its folder at once so that a killed process leaves nothing behind: in the first of `dirs` where one
 * can be made (the job's folder, on the volume the outputs are on, then the system's temporary folder).
 */
export function openScratchFile(dirs: readonly string[]): number {
	let failure: unknown = new Error("no folder for a scratch file");
	for (const dir of dirs) {
		const path = join(dir, `.history.${process.pid}-${Math.random().toString(16).slice(2, 10)}.tmp`);
		let fd: number;
		try {
			fd = openSync(path, "wx+");
		} catch (error) {
			failure = error;
			continue;
		}
		try {
			unlinkSync(path);
		} catch {
			// A system that cannot remove an open file: in the job folder the next open sweeps it once stale.
		}
		return fd;
	}
	throw failure;
}

/** The rows `count` rows long from byte `start` of a file, streamed front to back. */
export class FileCursor implements RowCursor {
	readonly rows = new HistoryRows(STREAM_ROWS);
	row = 0;
	done = false;
	readonly #fd: number;
	readonly #start: number;
	readonly #count: number;
	/** Rows read from the file so far, and how many of them are in the buffer. */
	#read = 0;
	#filled = 0;

	constructor(fd: number, start: number, count: number) {
		this.#fd = fd;
		this.#start = start;
		this.#count = count;
		this.#fill();
	}

	advance(): void {
		this.row += 1;
		if (this.row === this.#filled) this.#fill();
	}

	#fill(): void {
		const rows = Math.min(STREAM_ROWS, this.#count - this.#read);
		this.row = 0;
		this.#filled = rows;
		if (rows === 0) {
			this.done = true;
			return;
		}
		const bytes = this.rows.bytes.subarray(0, rows * ROW_BYTES);
		if (readAll(this.#fd, bytes, this.#start + this.#read * ROW_BYTES) !== bytes.length) {
			throw new Error("not a history file: shorter than its rows");
		}
		this.#read += rows;
	}
}

/** Rows of an in-memory chunk in a given order (its sorted order). */
export class OrderCursor implements RowCursor {
	readonly rows: HistoryRows;
	row = 0;
	done: boolean;
	readonly #order: Uint32Array;
	#at = 0;

	constructor(rows: HistoryRows, order: Uint32Array) {
		this.rows = rows;
		this.#order = order;
		this.done = order.length === 0;
		if (!this.done) this.row = order[0]!;
	}

	advance(): void {
		this.#at += 1;
		this.done = this.#at >= this.#order.length;
		if (!this.done) this.row = this.#order[this.#at]!;
	}
}

/** Where a sorted file's blocks start: the first key of every BLOCK_ROWS rows. */
export interface BlockIndex {
	readonly count: number;
	readonly firstHi: Uint32Array;
	readonly firstLo: Uint32Array;
}

/**
 * Writes rows in key order at a file's position, folding rows of one key into one (`combine`, later
 * rows win), and notes the first key of each block as it goes.
 */
export class RowWriter {
	readonly #fd: number;
	#position: number;
	readonly #rows = new HistoryRows(STREAM_ROWS);
	#filled = 0;
	#count = 0;
	#firstHi: number[] = [];
	#firstLo: number[] = [];

	constructor(fd: number, position: number) {
		this.#fd = fd;
		this.#position = position;
	}

	add(source: HistoryRows, from: number): void {
		const hi = source.hi(from);
		const lo = source.lo(from);
		if (this.#filled > 0) {
			const last = this.#filled - 1;
			const lastHi = this.#rows.hi(last);
			const lastLo = this.#rows.lo(last);
			if (lastHi === hi && lastLo === lo) {
				this.#rows.combine(last, source, from);
				return;
			}
			if (keyBefore(hi, lo, lastHi, lastLo)) throw new Error("history rows written out of key order");
		}
		// The last row stays in the buffer until the next key arrives: a later row of its key folds into it.
		if (this.#filled === STREAM_ROWS) this.#flush();
		if (this.#count % BLOCK_ROWS === 0) {
			this.#firstHi.push(hi);
			this.#firstLo.push(lo);
		}
		this.#rows.copy(this.#filled, source, from);
		this.#filled += 1;
		this.#count += 1;
	}

	#flush(): void {
		writeAll(this.#fd, this.#rows.bytes.subarray(0, this.#filled * ROW_BYTES), this.#position);
		this.#position += this.#filled * ROW_BYTES;
		this.#filled = 0;
	}

	finish(): BlockIndex {
		this.#flush();
		return {
			count: this.#count,
			firstHi: Uint32Array.from(this.#firstHi),
			firstLo: Uint32Array.from(this.#firstLo),
		};
	}
}

/** Write the rows of all cursors in key order; of rows with one key, a later cursor's win (oldest first). */
export function mergeRows(writer: RowWriter, cursors: readonly RowCursor[]): BlockIndex {
	const live = cursors.filter((cursor) => !cursor.done);
	while (live.length > 0) {
		// Few cursors (the history as saved, and one per 65,536 new rows): a scan beats a heap here.
		let min = 0;
		for (let at = 1; at < live.length; at += 1) {
			const cursor = live[at]!;
			const best = live[min]!;
			if (
				keyBefore(
					cursor.rows.hi(cursor.row),
					cursor.rows.lo(cursor.row),
					best.rows.hi(best.row),
					best.rows.lo(best.row),
				)
			)
				min = at;
		}
		const next = live[min]!;
		writer.add(next.rows, next.row);
		next.advance();
		if (next.done) live.splice(min, 1);
	}
	return writer.finish();
}

/**
 * A file of history rows sorted by key, read through a block index (8 bytes a block of 64 rows in
 * memory): a lookup reads one 3 KiB block. The file descriptor is the reader's to close.
 */
export class SortedRowsFile {
	readonly fd: number;
	readonly start: number;
	readonly count: number;
	readonly #firstHi: Uint32Array;
	readonly #firstLo: Uint32Array;
	readonly #block = new HistoryRows(BLOCK_ROWS);

	constructor(fd: number, start: number, index: BlockIndex) {
		this.fd = fd;
		this.start = start;
		this.count = index.count;
		this.#firstHi = index.firstHi;
		this.#firstLo = index.firstLo;
	}

	/**
	 * The `count` rows from byte `start` of an open file, read once front to back for their block index;
	 * rows not in strictly ascending key order mean the file is not one of ours (throws).
	 */
	static scan(fd: number, start: number, count: number): SortedRowsFile {
		const firstHi = new Uint32Array(Math.ceil(count / BLOCK_ROWS));
		const firstLo = new Uint32Array(firstHi.length);
		const cursor = new FileCursor(fd, start, count);
		let hi = 0;
		let lo = 0;
		for (let row = 0; !cursor.done; row += 1, cursor.advance()) {
			const nextHi = cursor.rows.hi(cursor.row);
			const nextLo = cursor.rows.lo(cursor.row);
			if (row > 0 && !keyBefore(hi, lo, nextHi, nextLo)) throw new Error("not a history file: rows out of order");
			hi = nextHi;
			lo = nextLo;
			if (row % BLOCK_ROWS === 0) {
				firstHi[row / BLOCK_ROWS] = hi;
				firstLo[row / BLOCK_ROWS] = lo;
			}
		}
		return new SortedRowsFile(fd, start, { count, firstHi, firstLo });
	}

	get(hi: number, lo: number): TargetHistory | null {
		const firstHi = this.#firstHi;
		const firstLo = this.#firstLo;
		if (this.count === 0 || keyBefore(hi, lo, firstHi[0]!, firstLo[0]!)) return null;
		// The last block whose first key is not after the key.
		let low = 0;
		let high = firstHi.length - 1;
		while (low < high) {
			const mid = (low + high + 1) >>> 1;
			if (keyBefore(hi, lo, firstHi[mid]!, firstLo[mid]!)) high = mid - 1;
			else low = mid;
		}
		const first = low * BLOCK_ROWS;
		const length = Math.min(BLOCK_ROWS, this.count - first);
		const block = this.#block;
		const bytes = block.bytes.subarray(0, length * ROW_BYTES);
		if (readAll(this.fd, bytes, this.start + first * ROW_BYTES) !== bytes.length) return null;
		let from = 0;
		let to = length - 1;
		while (from <= to) {
			const mid = (from + to) >>> 1;
			const midHi = block.hi(mid);
			const midLo = block.lo(mid);
			if (midHi === hi && midLo === lo) return block.target(mid);
			if (keyBefore(midHi, midLo, hi, lo)) from = mid + 1;
			else to = mid - 1;
		}
		return null;
	}

	cursor(): FileCursor {
		return new FileCursor(this.fd, this.start, this.count);
	}

	close(): void {
		closeSync(this.fd);
	}
}
