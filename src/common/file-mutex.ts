import { closeSync, openSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { sleep as realSleep, type Sleep } from "./sleep.js";

export interface FileMutexOptions {
	/** How long to wait for another holder, ms; then `fn` runs without the lock. @default 2000 */
	readonly waitMs?: number;
	/** A lock file older than this was left by a holder that died: taken over, ms. @default 10000 */
	readonly staleMs?: number;
	readonly sleep?: Sleep;
}

/**
 * Runs `fn`, a read-modify-write of `path` that other processes make too (one metrics file for every
 * shard of a job), holding `.<name>.lock` beside it, created exclusively. Without it, two processes that
 * read the file at once each wrote back their own series and dropped the other's. A side channel must
 * not hold a run: past `waitMs`, or when the lock cannot be made at all, `fn` runs without it.
 */
export async function withFileMutex<T>(path: string, fn: () => Promise<T>, options: FileMutexOptions = {}): Promise<T> {
	const lock = join(dirname(path), `.${basename(path)}.lock`);
	const waitMs = options.waitMs ?? 2000;
	const staleMs = options.staleMs ?? 10_000;
	const sleep = options.sleep ?? realSleep;
	const started = Date.now();
	let held = false;
	for (;;) {
		try {
			closeSync(openSync(lock, "wx"));
			held = true;
			break;
		} catch (error) {
			if ((error as NodeJS.ErrnoException).code !== "EEXIST") break;
		}
		try {
			if (Date.now() - statSync(lock).mtimeMs > staleMs) {
				rmSync(lock, { force: true });
				continue;
			}
		} catch {
			// Released between the two calls: try again at once.
			continue;
		}
		if (Date.now() - started >= waitMs) break;
		await sleep(10);
	}
	try {
		return await fn();
	} finally {
		if (held) rmSync(lock, { force: true });
	}
}
