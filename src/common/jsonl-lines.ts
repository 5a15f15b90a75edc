import { closeSync, fstatSync, ftruncateSync, openSync, readSync } from "node:fs";
import { openRegularFile } from "./regular-file.js";

/** One whole line of a JSON-lines file: its text (without `\n` or `\r\n`), where it starts and ends, its number. */
export interface JsonlLine {
	readonly text: string;
	/** Byte offset of its first byte. */
	readonly offset: number;
	/** Byte offset past its newline. */
	readonly end: number;
	/** 1-based from where reading began, counting empty lines (which are not returned): what an error names. */
	readonly number: number;
}

/**
 * A cursor over a JSON-lines file that may still be growing: `next()` returns the next whole line, or
 * null at the end of what is written so far — call it again once more was appended.
 */
export interface JsonlReader {
	next(): JsonlLine | null;
	/** Byte offset past the last line returned: where a later reader should start. */
	readonly position: number;
	close(): void;
}

const CHUNK_BYTES = 1 << 20;

export interface JsonlReadOptions {
	/** Byte offset to start at (a line's `end`). @default 0 */
	readonly from?: number;
	/**
	 * Return a last line that lacks its newline too, once the file's end is reached: for a file nothing
	 * writes any more whose every line is judged (merge reads a killed shard's torn last write as a bad
	 * last line, which it allows). @default false
	 */
	readonly unterminated?: boolean;
	/**
	 * Byte offset to stop at, a line's start: only the lines of [from, until) are read (a range of a
	 * file that grows past it meanwhile). @default the file's end
	 */
	readonly until?: number;
	/** @default 1 MiB */
	readonly chunkBytes?: number;
}

/**
 * Every JSONL file the runner reads back (results, journal, frontier, inboxes, discovery answers,
 * run.log) is read here. Lines are cut on bytes, a chunk at a time, so memory stays at a chunk plus the
 * longest line whatever the file's size, and a character split by a chunk's edge is never mangled. A
 * last line without its newline is a write still under way or torn by a crash: it is not returned
 * (every writer here ends its lines) until it is whole. A missing file has no lines.
 * Synchronous on purpose: callers read at a run's start or end, or a small file while running.
 */
export function openJsonlReader(path: string, options: JsonlReadOptions = {}): JsonlReader {
	const { from = 0, chunkBytes = CHUNK_BYTES, unterminated = false, until = Number.POSITIVE_INFINITY } = options;
	let fd: number | null;
	try {
		// A FIFO or device put where a run's file belongs is refused, never read for good.
		fd = openRegularFile(path).fd;
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
		fd = null;
	}
	const chunk = Buffer.alloc(fd === null ? 0 : chunkBytes);
	/** Bytes read but not yet returned as lines, starting at file offset `dataStart`. */
	let data: Buffer = Buffer.alloc(0);
	let dataStart = from;
	let lineStart = 0;
	let number = 0;

	/** Append the next chunk to what is pending; false at the end of the file. */
	const refill = (): boolean => {
		if (fd === null) return false;
		const fileAt = dataStart + data.length;
		const wanted = Math.min(chunk.length, until - fileAt);
		if (wanted <= 0) return false;
		const read = readSync(fd, chunk, 0, wanted, fileAt);
		if (read === 0) return false;
		// Only the unreturned rest is kept, copied: `chunk` is overwritten by the next read.
		data = Buffer.concat([data.subarray(lineStart), chunk.subarray(0, read)]);
		dataStart += lineStart;
		lineStart = 0;
		return true;
	};

	return {
		next() {
			for (;;) {
				const newline = data.indexOf(10, lineStart);
				if (newline < 0) {
					if (refill()) continue;
					if (!unterminated || lineStart >= data.length) return null;
					// The unterminated last line, once: the cursor moves past it.
					const start = lineStart;
					lineStart = data.length;
					number += 1;
					return {
						text: data.toString("utf8", start),
						offset: dataStart + start,
						end: dataStart + data.length,
						number,
					};
				}
				number += 1;
				const start = lineStart;
				lineStart = newline + 1;
				const textEnd = newline > start && data[newline - 1] === 13 ? newline - 1 : newline;
				if (textEnd === start) continue;
				return {
					text: data.toString("utf8", start, textEnd),
					offset: dataStart + start,
					end: dataStart + newline + 1,
					number,
				};
			}
		},
		get position() {
			return dataStart + lineStart;
		},
		close() {
			if (fd !== null) closeSync(fd);
			fd = null;
		},
	};
}

/** The whole lines of a JSON-lines file (see `openJsonlReader`). */
export function* jsonlLines(path: string, options: JsonlReadOptions = {}): Generator<JsonlLine> {
	const reader = openJsonlReader(path, options);
	try {
		for (let line = reader.next(); line !== null; line = reader.next()) yield line;
	} finally {
		reader.close();
	}
}

/** A line's JSON value, or undefined when the line is not JSON (another program's line, a torn middle). */
export function parseJsonLine(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

/**
 * Cut a JSON-lines file back to its last complete line (a crash can tear the line being written), before
 * appending to it again. Returns the bytes cut; a missing file has none.
 */
export function cutTornTail(path: string): number {
	let fd: number;
	try {
		fd = openSync(path, "r+");
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
		throw error;
	}
	try {
		const size = fstatSync(fd).size;
		if (size === 0) return 0;
		const chunk = Buffer.alloc(64 * 1024);
		let end = size;
		while (end > 0) {
			const start = Math.max(0, end - chunk.length);
			const length = end - start;
			readSync(fd, chunk, 0, length, start);
			const newline = chunk.subarray(0, length).lastIndexOf(0x0a);
			if (newline >= 0) {
				const keep = start + newline + 1;
				if (keep < size) ftruncateSync(fd, keep);
				return size - keep;
			}
			end = start;
		}
		ftruncateSync(fd, 0);
		return size;
	} finally {
		closeSync(fd);
	}
}
