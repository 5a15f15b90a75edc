import { closeSync, openSync, readSync } from "node:fs";
import type { ResultRecord } from "../output/index.js";

const CHUNK_BYTES = 1 << 20;

/** A line's record, or null when it is not one (a line of another program, a torn write). */
export function parseRecord(text: string): ResultRecord | null {
	let record: ResultRecord;
	try {
		record = JSON.parse(text) as ResultRecord;
	} catch {
		return null;
	}
	if (record === null || typeof record !== "object") return null;
	if (typeof record.id !== "string" || typeof record.finished_at !== "string") return null;
	return record;
}

/**
 * Reads the records at ascending byte offsets of one results.jsonl in one forward pass; memory stays at
 * about a chunk (plus the longest record) whatever the file's size.
 */
export class ForwardRecordReader {
	readonly #fd: number;
	#buffer = Buffer.alloc(0);
	#bufferStart = 0;
	#fileAt = 0;
	readonly #chunk = Buffer.alloc(CHUNK_BYTES);

	/** Throws when the file cannot be opened. */
	constructor(path: string) {
		this.#fd = openSync(path, "r");
	}

	/** The record starting at `offset`, null when there is none (the file was rewritten since). */
	at(offset: number): ResultRecord | null {
		if (offset < this.#bufferStart || offset > this.#bufferStart + this.#buffer.length) {
			this.#buffer = Buffer.alloc(0);
			this.#bufferStart = offset;
			this.#fileAt = offset;
		}
		let newline = this.#buffer.indexOf(10, offset - this.#bufferStart);
		while (newline < 0) {
			const read = readSync(this.#fd, this.#chunk, 0, this.#chunk.length, this.#fileAt);
			if (read === 0) return null;
			this.#fileAt += read;
			// Only from this record on is kept.
			this.#buffer = Buffer.concat([this.#buffer.subarray(offset - this.#bufferStart), this.#chunk.subarray(0, read)]);
			this.#bufferStart = offset;
			newline = this.#buffer.indexOf(10);
		}
		return parseRecord(this.#buffer.toString("utf8", offset - this.#bufferStart, newline));
	}

	close(): void {
		closeSync(this.#fd);
	}
}

/** The record at `offset` of a results.jsonl; null when the file or the record is gone. */
export function readRecordAt(path: string, offset: number): ResultRecord | null {
	let reader: ForwardRecordReader;
	try {
		reader = new ForwardRecordReader(path);
	} catch {
		return null;
	}
	try {
		return reader.at(offset);
	} catch {
		return null;
	} finally {
		reader.close();
	}
}
