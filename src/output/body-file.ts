import { randomUUID } from "node:crypto";
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { BodySink } from "../common/index.js";
import { makeDirectory } from "../common/index.js";
import { OutputError } from "./output-error.js";

/**
 * The name prefix of a body written as it arrives (`openBodyFile`), until its record names it (the
 * page store renames it into place). A name with it that no record names is a leftover of a killed
 * run: the next run removes it.
 */
export const PARTIAL_BODY_PREFIX = ".partial-";

/**
 * A body sink (`api`'s `BodySpill.open`) that writes to a new hidden `.partial-*` file in `dir`, as
 * the body arrives. `end()` closes it and returns its path (the caller renames it into place);
 * `abort()` closes and removes it, so a body that did not finish leaves nothing behind. Every write
 * error is an `OutputError` naming the file.
 *
 * Synchronous writes: a spilled body is rare and large, its chunks land in the page cache in
 * microseconds, and the answer's events need no pausing in between.
 */
export function openBodyFile(dir: string): BodySink {
	const path = join(dir, `${PARTIAL_BODY_PREFIX}${randomUUID()}`);
	let fd: number | null;
	try {
		makeDirectory(dir);
		fd = openSync(path, "wx");
	} catch (error) {
		throw new OutputError(path, error);
	}
	const close = () => {
		const open = fd;
		fd = null;
		if (open !== null) closeSync(open);
	};
	return {
		write(chunk) {
			if (fd === null) throw new OutputError(path, new Error("the file was closed already"));
			try {
				for (let written = 0; written < chunk.length; ) written += writeSync(fd, chunk, written);
			} catch (error) {
				throw new OutputError(path, error);
			}
		},
		end() {
			try {
				close();
			} catch (error) {
				throw new OutputError(path, error);
			}
			return path;
		},
		abort() {
			try {
				close();
			} catch {
				// Removed below all the same.
			}
			try {
				rmSync(path, { force: true });
			} catch {
				// Left as `.partial-*`: the next run of the folder removes it (page store, `removeUnfinished`).
			}
		},
	};
}
