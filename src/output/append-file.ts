import { closeSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { OutputError } from "./output-error.js";

/**
 * An append-only file written with synchronous writes. A record handed to `append` is in the kernel's
 * page cache when the call returns, so a killed process (SIGKILL, OOM) loses nothing it had finished;
 * `sync` adds fdatasync for power loss, called on a timer rather than per record. A write that fails
 * part-way (a full disk) is cut back to the line before it: the file only ever holds whole lines.
 * Failures are `OutputError`s.
 */
export interface AppendFile {
	/** Append text (UTF-8) or bytes. */
	append(data: string | Uint8Array): void;
	/** Append `text` and a newline (a JSONL line): the same write, without a string joined for it first. */
	appendLine(text: string): void;
	sync(): void;
	/**
	 * Take the last append back (a record written after the run's lease was lost): the file is cut back
	 * to where that append began, but only while it still ends with that append's bytes — a line another
	 * process appended after it is never cut. Asked once, right after the append. Returns whether the
	 * bytes were taken back.
	 */
	retractLast(): boolean;
	close(): void;
	readonly path: string;
	/** Bytes in the file: where the next append lands. */
	readonly size: number;
}

/**
 * Where `appendLine` puts a line's bytes before its write: one buffer for the process, since every
 * write is synchronous and so one at a time. Joining the line with its newline first would build a
 * second copy of every record on the heap (a cons string flattened by the write), all garbage.
 */
const LINE_STAGE = Buffer.allocUnsafe(64 * 1024);
/** Lines of at most this many UTF-16 code units fit the stage whatever they hold (≤ 3 bytes each). */
const LINE_STAGE_UNITS = Math.floor((LINE_STAGE.length - 1) / 3);
const NEWLINE = 0x0a;

export function openAppendFile(path: string): AppendFile {
	let fd: number;
	let size: number;
	try {
		fd = openSync(path, "a");
		size = fstatSync(fd).size;
	} catch (error) {
		throw new OutputError(path, error);
	}
	let closed = false;
	let dirty = false;
	/**
	 * The last append, for `retractLast`: its text (held, not copied: the bytes are rebuilt only to take
	 * it back) and the end of the file as this process knew it before the write (-1: nothing to take back).
	 */
	let lastText: string | Uint8Array = "";
	let lastNewline = false;
	let lastStart = -1;
	/** Cut a half-written line back off, so a resume never meets a torn line in the middle. */
	const failed = (written: number, error: unknown): OutputError => {
		if (written > 0) {
			try {
				ftruncateSync(fd, size);
			} catch {
				// The truncate failed too: the resume's torn-tail cut is the last guard.
			}
		}
		return new OutputError(path, error);
	};
	const appendBytes = (bytes: Uint8Array, length: number) => {
		lastStart = size;
		let written = 0;
		try {
			while (written < length) written += writeSync(fd, bytes, written, length - written);
		} catch (error) {
			throw failed(written, error);
		}
		size += written;
		dirty = true;
	};
	const file: AppendFile = {
		path,
		get size() {
			return size;
		},
		append(data) {
			lastText = data;
			lastNewline = false;
			if (typeof data !== "string") return appendBytes(data, data.length);
			lastStart = size;
			let written = 0;
			try {
				// Strings go straight to the kernel; only a short write (rare on regular files) needs the bytes.
				written = writeSync(fd, data);
				const length = Buffer.byteLength(data);
				if (written < length) {
					const buffer = Buffer.from(data, "utf8");
					while (written < length) written += writeSync(fd, buffer, written);
				}
			} catch (error) {
				throw failed(written, error);
			}
			size += written;
			dirty = true;
		},
		appendLine(text) {
			if (text.length > LINE_STAGE_UNITS) return file.append(`${text}\n`);
			const length = LINE_STAGE.write(text, 0, "utf8");
			LINE_STAGE[length] = NEWLINE;
			appendBytes(LINE_STAGE, length + 1);
			// The stage is shared and rewritten by the next line: the text is what can rebuild these bytes.
			lastText = text;
			lastNewline = true;
		},
		sync() {
			if (!closed && dirty) {
				try {
					fdatasyncSync(fd);
				} catch (error) {
					throw new OutputError(path, error);
				}
				dirty = false;
			}
		},
		retractLast() {
			const start = lastStart;
			lastStart = -1;
			if (closed || start < 0) return false;
			const ours =
				typeof lastText === "string"
					? Buffer.from(lastNewline ? `${lastText}\n` : lastText, "utf8")
					: Buffer.from(lastText);
			lastText = "";
			try {
				// Another writer may have appended before this write landed (this process was paused after
				// its lease check): the line is then past the end this process knew. It is cut only where it
				// still ends the file; a line appended after it leaves it in the middle, as it is.
				const end = fstatSync(fd).size;
				const at = end - ours.length;
				if (ours.length === 0 || at < start || !endsWith(path, at, ours)) return false;
				ftruncateSync(fd, at);
				size = at;
			} catch {
				return false;
			}
			return true;
		},
		close() {
			if (closed) return;
			// The descriptor is let go even when the last flush failed (the run goes on to write its summary).
			let failure: OutputError | null = null;
			try {
				file.sync();
			} catch (error) {
				failure = error as OutputError;
			}
			closed = true;
			try {
				closeSync(fd);
			} catch (error) {
				failure ??= new OutputError(path, error);
			}
			if (failure) throw failure;
		},
	};
	return file;
}

/** Whether the file holds exactly `bytes` from `at` (read through a descriptor of its own: appends are write-only). */
function endsWith(path: string, at: number, bytes: Buffer): boolean {
	const fd = openSync(path, "r");
	try {
		const tail = Buffer.allocUnsafe(bytes.length);
		let read = 0;
		while (read < tail.length) {
			const n = readSync(fd, tail, read, tail.length - read, at + read);
			if (n === 0) return false;
			read += n;
		}
		return tail.equals(bytes);
	} finally {
		closeSync(fd);
	}
}
