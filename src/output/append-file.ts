import { closeSync, fdatasyncSync, openSync, writeSync } from "node:fs";

/**
 * An append-only file written with synchronous writes. A record handed to `append` is in the kernel's
 * page cache when the call returns, so a killed process (SIGKILL, OOM) loses nothing it had finished;
 * `sync` adds fdatasync for power loss, called on a timer rather than per record.
 */
export interface AppendFile {
	append(text: string): void;
	sync(): void;
	close(): void;
	readonly path: string;
}

export function openAppendFile(path: string): AppendFile {
	const fd = openSync(path, "a");
	let closed = false;
	let dirty = false;
	return {
		path,
		append(text) {
			// Strings go straight to the kernel; only a short write (rare on regular files) needs the bytes.
			const written = writeSync(fd, text);
			const buffer = written < Buffer.byteLength(text) ? Buffer.from(text, "utf8") : null;
			if (buffer) for (let offset = written; offset < buffer.length; ) offset += writeSync(fd, buffer, offset);
			dirty = true;
		},
		sync() {
			if (!closed && dirty) {
				fdatasyncSync(fd);
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
