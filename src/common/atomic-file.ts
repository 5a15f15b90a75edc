import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * The one way a whole file is replaced (docs/architecture.md, "Where a new feature goes"): written under a
 * temporary name beside it, then renamed over it, so a reader (a resume, a collector, a crash) sees the
 * old file or the new one, never half of one. The temporary name is the only scheme in the project:
 * `.<name>.<pid>-<12 hex>.tmp`, created exclusively (O_CREAT | O_EXCL: never an existing file, never
 * through a symbolic link), so two writers of the same file never share one. Whatever fails, the
 * temporary file is removed and the error thrown as the file system gave it (callers wrap it:
 * `OutputError` for the run folder).
 */
export interface AtomicFile {
	/** The temporary file's path. */
	readonly path: string;
	/** Open for writing. */
	readonly fd: number;
	/** fsync (when asked), close and rename over the destination; the temporary file is removed if that fails. */
	commit(): void;
	/** Close and remove (nothing is left behind). */
	discard(): void;
}

export interface AtomicWriteOptions {
	/** fsync the file before the rename (what is renamed into place is on the disk). @default false */
	readonly fsync?: boolean;
	/** The new file's mode (before the umask). @default 0o666, as `writeFileSync` */
	readonly mode?: number;
}

/** Whether a file name is one of `openAtomicFile`'s temporary names (left behind only by a killed process). */
export function isAtomicTemporaryName(name: string): boolean {
	return /^\..+\.\d+-[0-9a-f]{12}\.tmp$/.test(name);
}

/** A temporary file beside `path`, to write by its `fd` and rename over `path` with `commit()`. */
export function openAtomicFile(path: string, options: AtomicWriteOptions = {}): AtomicFile {
	const temporary = join(dirname(path), `.${basename(path)}.${process.pid}-${randomBytes(6).toString("hex")}.tmp`);
	const fd = openSync(temporary, "wx", options.mode ?? 0o666);
	let open = true;
	const close = () => {
		if (!open) return;
		open = false;
		closeSync(fd);
	};
	const discard = () => {
		try {
			close();
		} finally {
			rmSync(temporary, { force: true });
		}
	};
	return {
		path: temporary,
		fd,
		commit() {
			try {
				if (options.fsync) fsyncSync(fd);
				close();
				renameSync(temporary, path);
			} catch (error) {
				try {
					discard();
				} catch {
					// The first error is the one to report.
				}
				throw error;
			}
		},
		discard,
	};
}

/**
 * Write all of `data` at the file's position: `writeSync` may write less than it was given (a disk
 * that fills up mid-write answers a short count first, ENOSPC only at the next call), so what it did not
 * take is written again until all is written or the file system refuses with an error.
 */
export function writeAll(fd: number, data: string | Uint8Array): void {
	const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
	for (let offset = 0; offset < bytes.byteLength; ) offset += writeSync(fd, bytes, offset);
}

/** Replace `path` with `data`, atomically (see `openAtomicFile`). Throws the file system's error; nothing is left behind. */
export function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
	const file = openAtomicFile(path, options);
	try {
		writeAll(file.fd, data);
	} catch (error) {
		try {
			file.discard();
		} catch {
			// The write's error is the one to report.
		}
		throw error;
	}
	file.commit();
}
