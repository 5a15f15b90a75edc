import { closeSync, readSync } from "node:fs";
import { openRegularFile } from "../common/index.js";
import { parseRecordLine, type ResultRecord } from "../output/index.js";

/** What a forward pass reads at a time (`latestOkRecords` reads whole runs front to back). */
const CHUNK_BYTES = 1 << 20;
/**
 * What one lookup reads first (`readRecordAt`): a record is ~0.5 KiB, a record with extracted data a few.
 * A longer one is read on in chunks of this size. A lookup used to allocate and zero a 1 MiB chunk
 * and read 1 MiB of the file: ~2 ms per changed target (measured 1.9–2.2 ms at 20,000 changed records).
 */
const LOOKUP_CHUNK_BYTES = 16 << 10;

/** A line's record, or null when it is not one (a line of another program, a torn write, a damaged record). */
export function parseRecord(text: string): ResultRecord | null {
	const record = parseRecordLine(text, true);
	return record !== null && typeof record.finished_at === "string" ? record : null;
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
	readonly #chunk: Buffer;

	/** Throws when the file cannot be opened. `chunkBytes`: what each read takes from the file. */
	constructor(path: string, chunkBytes = CHUNK_BYTES) {
		this.#fd = openRegularFile(path).fd;
		// Never read past what `readSync` filled: no need to zero it.
		this.#chunk = Buffer.allocUnsafe(chunkBytes);
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
		reader = new ForwardRecordReader(path, LOOKUP_CHUNK_BYTES);
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
