import { closeSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, writeSync } from "node:fs";
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
	sync(): void;
	close(): void;
	readonly path: string;
	/** Bytes in the file: where the next append lands. */
	readonly size: number;
}

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
	return {
		path,
		get size() {
			return size;
		},
		append(data) {
			let written = 0;
			try {
				// Strings go straight to the kernel; only a short write (rare on regular files) needs the bytes.
				if (typeof data === "string") {
					written = writeSync(fd, data);
					const length = Buffer.byteLength(data);
					if (written < length) {
						const buffer = Buffer.from(data, "utf8");
						while (written < length) written += writeSync(fd, buffer, written);
					}
				} else {
					while (written < data.length) written += writeSync(fd, data, written);
				}
			} catch (error) {
				// Cut a half-written line back off, so a resume never meets a torn line in the middle.
				if (written > 0) {
					try {
						ftruncateSync(fd, size);
					} catch {
						// The truncate failed too: the resume's torn-tail cut is the last guard.
					}
				}
				throw new OutputError(path, error);
			}
			size += written;
			dirty = true;
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
		close() {
			if (closed) return;
			this.sync();
			closed = true;
			closeSync(fd);
		},
	};
}
