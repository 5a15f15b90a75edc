import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { ScrapejobError } from "../shared/index.js";

/** Another live run of the same job holds the lock (cron overlap). Nothing was sent. */
export class LockHeldError extends ScrapejobError {
	readonly holder: LockInfo;
	constructor(path: string, holder: LockInfo) {
		super(
			"SCRAPEJOB_LOCK_HELD",
			`another run of this job is in progress (pid ${holder.pid} on ${holder.host}, run ${holder.run_id}, since ${holder.started_at}); lock file ${path}. If that process is gone, delete the lock file.`,
		);
		this.holder = holder;
	}
}

export interface LockInfo {
	pid: number;
	host: string;
	started_at: string;
	run_id: string;
}

function isAlive(pid: number): boolean {
	if (!Number.isInteger(pid) || pid <= 0) return false;
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		// EPERM: it exists but belongs to someone else — alive.
		return (error as NodeJS.ErrnoException).code === "EPERM";
	}
}

export interface RunLock {
	readonly path: string;
	/** Set when a stale lock of a dead process was taken over. */
	readonly tookOver: LockInfo | null;
	release(): void;
}

/**
 * Take the lock of one job's output folder: a file created exclusively (`wx`), holding pid, host and
 * start time. A lock left by a dead process on this host is taken over (with a warning); one held
 * by a live process, or by another host (whose processes cannot be checked), is refused.
 */
export function acquireRunLock(jobDir: string, runId: string): RunLock {
	const path = join(jobDir, ".lock");
	const info: LockInfo = { pid: process.pid, host: hostname(), started_at: new Date().toISOString(), run_id: runId };
	let tookOver: LockInfo | null = null;
	for (let tries = 0; tries < 3; tries += 1) {
		try {
			writeFileSync(path, `${JSON.stringify(info)}\n`, { flag: "wx" });
			const release = () => {
				process.removeListener("exit", release);
				try {
					const current = JSON.parse(readFileSync(path, "utf8")) as LockInfo;
					if (current.pid === info.pid && current.run_id === info.run_id) unlinkSync(path);
				} catch {
					// Already gone: nothing to release.
				}
			};
			// A second Ctrl-C exits at once; the lock goes with the process rather than waiting to be taken over.
			process.once("exit", release);
			return { path, tookOver, release };
		} catch (error) {
			if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
		}
		let holder: LockInfo;
		try {
			holder = JSON.parse(readFileSync(path, "utf8")) as LockInfo;
		} catch {
			// A lock torn by a crash mid-write holds no owner: stale.
			holder = { pid: -1, host: info.host, started_at: "unknown", run_id: "unknown" };
		}
		if (holder.host !== info.host || isAlive(holder.pid)) throw new LockHeldError(path, holder);
		tookOver = holder;
		try {
			unlinkSync(path);
		} catch {
			// Someone else removed it first; the exclusive create decides who wins.
		}
	}
	throw new LockHeldError(path, { pid: -1, host: "unknown", started_at: "unknown", run_id: "unknown" });
}
