import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { ScrapejobError } from "./errors.js";

/**
 * A file the product reads back (a run folder's records, pages and summaries, a metrics file) that is
 * not a regular file: a FIFO would block its reader for good, a link to /dev/zero never ends. Files
 * from outside are hostile until checked (docs/behaviour.md, "Bounded input"). Thrown by `runJobFile`
 * (a resume, a `metrics` file) and `extractJobFile`; code `SCRAPEJOB_USAGE`.
 */
export class NotRegularFileError extends ScrapejobError {
	readonly path: string;
	constructor(path: string, what: string) {
		super("SCRAPEJOB_USAGE", `${path} is not a regular file (${what}); it was not read`);
		this.path = path;
	}
}

/**
 * A file over the size its reader allows: not read, so memory stays bounded. Thrown where
 * `NotRegularFileError` is; code `SCRAPEJOB_USAGE`.
 */
export class FileTooLargeError extends ScrapejobError {
	readonly path: string;
	constructor(path: string, size: number, maxBytes: number) {
		super("SCRAPEJOB_USAGE", `${path} is ${size} bytes, over the ${maxBytes} this file may have; it was not read`);
		this.path = path;
	}
}

function kindOf(stat: ReturnType<typeof fstatSync>): string {
	if (stat.isDirectory()) return "a directory";
	if (stat.isFIFO()) return "a pipe";
	if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
	if (stat.isSocket()) return "a socket";
	return "not a file";
}

/**
 * Open `path` for reading only when it is a regular file (links followed), without blocking: a FIFO is
 * opened non-blocking (an ordinary open waits for a writer for good), then refused by its fstat.
 * Throws ENOENT and the like as `openSync` does. Returns the descriptor and the file's size.
 */
export function openRegularFile(path: string): { fd: number; size: number } {
	const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
	try {
		const stat = fstatSync(fd);
		if (!stat.isFile()) throw new NotRegularFileError(path, kindOf(stat));
		return { fd, size: stat.size };
	} catch (error) {
		closeSync(fd);
		throw error;
	}
}

/** A regular file's bytes, refused (FileTooLargeError) past `maxBytes`, read once whole. */
export function readRegularFile(path: string, maxBytes: number): Buffer {
	const { fd, size } = openRegularFile(path);
	try {
		if (size > maxBytes) throw new FileTooLargeError(path, size, maxBytes);
		const buffer = Buffer.allocUnsafe(size);
		let read = 0;
		while (read < size) {
			const got = readSync(fd, buffer, read, size - read, read);
			if (got === 0) break;
			read += got;
		}
		return read === size ? buffer : buffer.subarray(0, read);
	} finally {
		closeSync(fd);
	}
}

/** Small JSON-ish files of a run folder (summary, run.json, contract.json) are read within this. */
export const SMALL_FILE_MAX_BYTES = 16 * 1024 * 1024;
