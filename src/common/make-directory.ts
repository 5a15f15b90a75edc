import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * `mkdirSync(path, { recursive: true })`, level by level from the deepest folder that exists: Node's own
 * loops for ever, at full CPU and deaf to signals, where a file system refuses a new folder with ENOENT
 * though its parent exists (`--out /proc/x`). Returns the first folder it made, undefined when none.
 */
export function makeDirectory(path: string): string | undefined {
	const missing: string[] = [];
	for (let current = resolve(path); ; ) {
		try {
			const found = statSync(current);
			if (missing.length === 0 && !found.isDirectory()) {
				throw Object.assign(new Error(`EEXIST: file already exists, mkdir '${path}'`), {
					code: "EEXIST",
					syscall: "mkdir",
					path,
				});
			}
			break;
		} catch (error) {
			if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
			missing.push(current);
			const parent = dirname(current);
			if (parent === current) break;
			current = parent;
		}
	}
	let first: string | undefined;
	for (let index = missing.length - 1; index >= 0; index--) {
		const dir = missing[index]!;
		try {
			mkdirSync(dir);
			first ??= dir;
		} catch (error) {
			// Made meanwhile by another process (two shards starting together): as good.
			if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
		}
	}
	return first;
}
