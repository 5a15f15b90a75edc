import { accessSync, constants, existsSync } from "node:fs";
import { dirname } from "node:path";
import { ScrapejobError } from "../common/index.js";

/**
 * The output could not be written (disk full, read-only folder, permission denied): the run stops
 * sending at once — every further fetch would be paid for and lost — and exits 5. `runJobFile`,
 * `extractJobFile` and `runJob` throw it when the run folder or the job's store cannot be made or opened
 * (nothing was sent); once the run is going, a failed write ends it with `stopped_reason: output_failed`
 * in the summary instead. Code `SCRAPEJOB_OUTPUT`.
 */
export class OutputError extends ScrapejobError {
	/** The file or folder that could not be written. */
	readonly path: string;
	/** `outcome`: what the failure left, after the cause (a run's: nothing more was sent). */
	constructor(path: string, cause: unknown, outcome = "nothing more was sent") {
		super("SCRAPEJOB_OUTPUT", `output failed: cannot write ${path}: ${describeWriteError(cause)}; ${outcome}`, {
			cause,
		});
		this.path = path;
	}
}

function describeWriteError(error: unknown): string {
	const code = (error as NodeJS.ErrnoException | undefined)?.code;
	if (code === "ENOENT") {
		const real = realMkdirError(error as NodeJS.ErrnoException);
		if (real) return describeWriteError(real);
	}
	switch (code) {
		case "ENOSPC":
			return "no space left on the device (ENOSPC)";
		// SQLite's own word for it ("database or disk is full"): the job store, a SQLite export.
		case "SQLITE_FULL":
			return "no space left on the device (SQLITE_FULL)";
		case "EDQUOT":
			return "disk quota exceeded (EDQUOT)";
		case "EROFS":
			return "the file system is read-only (EROFS)";
		case "EACCES":
		case "EPERM":
			return `permission denied (${code})`;
		case "EEXIST":
		case "ENOTDIR":
			return `a file is in the way where a folder should be (${code})`;
		case "EFBIG":
			return "the file is larger than this process may write (EFBIG)";
		case "EIO":
			return "an I/O error (EIO)";
		default:
			return error instanceof Error ? error.message : String(error);
	}
}

/**
 * Node's recursive mkdir reports ENOENT when a folder cannot be made on a read-only file system
 * ("no such file or directory" for a folder that is there): ask the nearest existing folder whether it
 * may be written to, and describe that answer (EROFS, EACCES) instead.
 */
function realMkdirError(error: NodeJS.ErrnoException): NodeJS.ErrnoException | null {
	if (error.syscall !== "mkdir" || typeof error.path !== "string") return null;
	let dir = dirname(error.path);
	while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
	try {
		accessSync(dir, constants.W_OK);
		return null;
	} catch (refused) {
		return refused as NodeJS.ErrnoException;
	}
}
