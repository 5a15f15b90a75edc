import { closeSync, fstatSync, ftruncateSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ownStartTicks, processState, ScrapejobError, writeAll } from "../../common/index.js";

/** Another live run of the same job holds the lock (cron overlap). Nothing was sent. */
export class LockHeldError extends ScrapejobError {
	readonly holder: LockInfo;
	constructor(path: string, holder: LockInfo, why: string) {
		super(
			"SCRAPEJOB_LOCK_HELD",
			`another run of this job is in progress (pid ${holder.pid} on ${holder.host}, run ${holder.run_id}, since ${holder.started_at}; ${why}); lock file ${path}`,
		);
		this.holder = holder;
	}
}

/**
 * The lock path is not a lock file (a directory, say): nothing can hold or take it until it is removed.
 * Thrown by `runJobFile`, `extractJobFile` and `lockJobOutput` before anything is sent; code `SCRAPEJOB_USAGE`.
 */
export class LockPathError extends ScrapejobError {
	constructor(path: string, what: string) {
		super("SCRAPEJOB_USAGE", `the lock path ${path} is ${what}, not a lock file: remove it and run again`);
	}
}

export interface LockInfo {
	pid: number;
	host: string;
	started_at: string;
	run_id: string;
	/** The holder's process start time (/proc/<pid>/stat), so a reused pid is not mistaken for it. */
	pid_start?: string | null;
	/** Renewed every few seconds while the holder runs; older than `lease_ms`, the lock is free. */
	heartbeat_at?: string;
	lease_ms?: number;
}

/** A held job lock: a lease renewed while the run goes on, released when it ends. */
export interface RunLock {
	/** The lock file. */
	readonly path: string;
	/** Set when a stale lock (dead, zombie, reused pid, or expired lease) was taken over. */
	readonly tookOver: LockInfo | null;
	/** Stop renewing the lease and remove the lock file if it is still this holder's. */
	release(): void;
	/**
	 * Called once if another process takes the lock over while this one holds it (this process's lease
	 * ran out: it was paused or cut off from the shared volume longer than the lease). From then on the
	 * folder is the other process's: the holder must stop writing to it.
	 */
	onLost?(listener: (holder: LockInfo) => void): void;
	/**
	 * Whether the lease is certainly still ours, asked before each append (fencing). Free while the last
	 * confirmed heartbeat is recent; past ~half the lease (the heartbeat was starved, or the process was
	 * paused) the lock file is read again: still ours, the beat is renewed; taken over, the `onLost`
	 * listeners are told and it answers false from then on.
	 */
	isHeld(): boolean;
}

export interface LockOptions {
	/**
	 * How long a holder on another host is trusted without a heartbeat, ms (the caller's
	 * SCRAPEJOB_LOCK_LEASE_MS). @default 30000. The one assumption: the hosts' clocks agree to well
	 * within the lease.
	 */
	readonly leaseMs?: number;
	/** The name written as the holder's host (the caller's SCRAPEJOB_HOSTNAME). @default os.hostname() */
	readonly host?: string;
	/** The wall clock the heartbeats are written with (other hosts compare them with theirs). @default Date.now */
	readonly now?: () => number;
	/**
	 * A clock that never steps (ms): `isHeld` trusts a recent beat only while both clocks say it is recent,
	 * so a wall clock stepped back (NTP) cannot stretch that trust. @default performance.now
	 */
	readonly monotonic?: () => number;
	/** The lock file's name in the job folder. @default ".lock" (shards: ".lock-shard-I-of-N") */
	readonly name?: string;
}

/**
 * How locks are taken and judged, the same for every lock of one process: the lease and this host's
 * name (resolved once by the caller from its configuration; each has its default).
 */
export type LockLease = Pick<LockOptions, "leaseMs" | "host">;

const DEFAULT_LEASE_MS = 30_000;

/** Why a holder no longer holds the lock, or null when it still does. */
function staleness(
	holder: LockInfo,
	self: { host: string },
	leaseMs: number,
	now: number,
	mtimeMs: number,
): string | null {
	if (holder.host === self.host) {
		// This host's processes can be asked directly: no need to wait for a lease to run out.
		const state = processState(holder.pid);
		if (state.state === "gone") return "its process is gone";
		if (state.state === "zombie") return "its process has exited (a zombie)";
		if (holder.pid_start && state.startTicks && holder.pid_start !== state.startTicks) {
			return "its pid now belongs to another process";
		}
		return null;
	}
	const heartbeat = holder.heartbeat_at ? Date.parse(holder.heartbeat_at) : mtimeMs;
	const lease = holder.lease_ms && holder.lease_ms > 0 ? Math.max(holder.lease_ms, leaseMs) : leaseMs;
	const age = now - (Number.isFinite(heartbeat) ? heartbeat : mtimeMs);
	return age > lease ? `its heartbeat is ${Math.round(age / 1000)} s old (lease ${Math.round(lease / 1000)} s)` : null;
}

/**
 * The live holder of the lock file at `path`, or null when there is none: no file, or a holder that is
 * dead, a zombie, a reused pid or past its lease (as `acquireRunLock` judges it). Reads only.
 */
export function liveLockHolder(
	path: string,
	options: Pick<LockOptions, "leaseMs" | "host" | "now"> = {},
): LockInfo | null {
	const host = options.host ?? hostname();
	let stat: ReturnType<typeof statSync>;
	let holder: LockInfo;
	try {
		stat = statSync(path);
		if (!stat.isFile()) return null;
		holder = JSON.parse(readFileSync(path, "utf8")) as LockInfo;
		if (typeof holder.pid !== "number" || typeof holder.host !== "string") return null;
	} catch {
		return null;
	}
	const now = (options.now ?? Date.now)();
	return staleness(holder, { host }, options.leaseMs ?? DEFAULT_LEASE_MS, now, stat.mtimeMs) === null ? holder : null;
}

/**
 * Take the lock of one job's output folder: a lease. The file is created exclusively (`wx`) and holds
 * pid, host, process start time and a heartbeat renewed every few seconds while the run lasts. It is
 * taken over when its holder is dead, a zombie or a reused pid on this host — at once — or, whatever
 * host wrote it, when its heartbeat is older than the lease: a pod rescheduled on another node with
 * the same volume resumes without anyone deleting a file.
 */
export function acquireRunLock(jobDir: string, runId: string, options: LockOptions = {}): RunLock {
	const path = join(jobDir, options.name ?? ".lock");
	const now = options.now ?? Date.now;
	const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
	const host = options.host ?? hostname();
	const info: LockInfo = {
		pid: process.pid,
		host,
		started_at: new Date(now()).toISOString(),
		run_id: runId,
		pid_start: ownStartTicks(),
		heartbeat_at: new Date(now()).toISOString(),
		lease_ms: leaseMs,
	};
	let tookOver: LockInfo | null = null;
	for (let tries = 0; tries < 3; tries += 1) {
		try {
			createLockFile(path, `${JSON.stringify(info)}\n`);
			return holdLock(path, info, tookOver, leaseMs, now, options.monotonic ?? (() => performance.now()));
		} catch (error) {
			const code = (error as NodeJS.ErrnoException).code;
			if (code === "EISDIR") throw new LockPathError(path, "a directory");
			if (code !== "EEXIST") throw error;
		}
		let stat: ReturnType<typeof statSync>;
		try {
			stat = statSync(path);
		} catch {
			continue; // released meanwhile: try again
		}
		if (!stat.isFile()) throw new LockPathError(path, stat.isDirectory() ? "a directory" : "not a regular file");
		let text: string;
		try {
			text = readFileSync(path, "utf8");
		} catch {
			continue; // released meanwhile: try again
		}
		let holder = parseHolder(text, host);
		let why = staleness(holder, { host }, leaseMs, now(), stat.mtimeMs);
		if (why !== null) {
			// The holder renews its beat in place (holdLock): a read that raced that write could see a torn
			// heartbeat, older than the real one, or no JSON at all. Only a lock read the same twice is judged.
			let again: string;
			try {
				again = readFileSync(path, "utf8");
			} catch {
				continue;
			}
			if (again !== text) continue;
			holder = parseHolder(again, host);
			why = staleness(holder, { host }, leaseMs, now(), stat.mtimeMs);
		}
		if (why === null) {
			throw new LockHeldError(
				path,
				holder,
				holder.host === host
					? "its process is running"
					: `its lease is renewed; it expires ${Math.round(leaseMs / 1000)} s after the last heartbeat`,
			);
		}
		tookOver = holder;
		try {
			// A narrow race: two takers may both judge it stale; the exclusive create below decides who wins.
			unlinkSync(path);
		} catch {
			// Someone else removed it first.
		}
	}
	throw new LockHeldError(path, { pid: -1, host: "unknown", started_at: "unknown", run_id: "unknown" }, "contended");
}

/**
 * Create the lock file exclusively and write its holder. A write that fails (a full disk) removes the
 * file it made, while the path still names it: an empty lock left there would read as a dead holder's
 * to the next run ("took over the lock of pid -1").
 */
function createLockFile(path: string, text: string): void {
	const fd = openSync(path, "wx");
	try {
		writeAll(fd, text);
	} catch (error) {
		try {
			if (sameFile(fd, path)) unlinkSync(path);
		} catch {
			// The write's error is the one to report.
		}
		throw error;
	} finally {
		closeSync(fd);
	}
}

/** A lock file's holder; a file that holds none (torn by a crash mid-write, not JSON) is stale. */
function parseHolder(text: string, host: string): LockInfo {
	try {
		const holder = JSON.parse(text) as LockInfo;
		if (typeof holder.pid === "number" && typeof holder.host === "string") return holder;
	} catch {
		// Not a lock: no owner.
	}
	return { pid: -1, host, started_at: "unknown", run_id: "unknown" };
}

/** Whether `path` still names the file open on `fd` (false when it names another file, or none). */
function sameFile(fd: number, path: string): boolean {
	const open = fstatSync(fd);
	try {
		const named = statSync(path);
		return named.ino === open.ino && named.dev === open.dev;
	} catch {
		return false;
	}
}

const GONE: LockInfo = { pid: -1, host: "unknown", run_id: "unknown", started_at: "unknown" };

/**
 * Renew the heartbeat every few seconds, in place: the beat is written through the descriptor whose
 * content was just read as ours, never by a rename over the path. A takeover unlinks the lock and
 * creates a new file (`wx`), so a holder paused between its check and its write (SIGSTOP, a frozen VM)
 * that wakes after a takeover writes its beat into its own unlinked file, never over the new holder's:
 * a rename there put the old holder's beat back in place and both processes believed they held the lock.
 */
function holdLock(
	path: string,
	info: LockInfo,
	tookOver: LockInfo | null,
	leaseMs: number,
	now: () => number,
	monotonic: () => number,
): RunLock {
	const mine = (current: LockInfo) =>
		current.pid === info.pid && current.run_id === info.run_id && current.host === info.host;
	const lostListeners: Array<(holder: LockInfo) => void> = [];
	/** When a beat last confirmed the file was ours and renewed it: the wall clock's time and the monotonic one's. */
	let confirmedAt = now();
	let confirmedMono = monotonic();
	let lost = false;
	const markLost = (holder: LockInfo) => {
		lost = true;
		clearInterval(heartbeat);
		for (const listener of lostListeners.splice(0)) listener(holder);
	};
	const renew = () => {
		if (lost) return;
		let fd: number;
		try {
			fd = openSync(path, "r+");
		} catch (error) {
			// Gone: another process took it over and has released it since. Not ours either way.
			if ((error as NodeJS.ErrnoException).code === "ENOENT") markLost(GONE);
			// Anything else is a missed beat: survivable, the lease allows several.
			return;
		}
		let beat: { wall: number; mono: number } | null = null;
		let unlinked = false;
		try {
			const text = readFileSync(fd, "utf8");
			const current = JSON.parse(text) as LockInfo;
			if (!mine(current)) {
				// Taken over (our lease ran out): not ours to renew, nor ours to write under any more.
				markLost(current);
				return;
			}
			const wall = now();
			const mono = monotonic();
			// The same length as the file's (only heartbeat_at changes, a fixed-width ISO time): a reader sees
			// the old beat or the new one, and the truncate below is for a change of format only.
			const bytes = Buffer.from(`${JSON.stringify({ ...info, heartbeat_at: new Date(wall).toISOString() })}\n`);
			writeSync(fd, bytes, 0, bytes.length, 0);
			if (Buffer.byteLength(text) > bytes.length) ftruncateSync(fd, bytes.length);
			// The path still names the file written: the beat is the lock's. Another file there (or none), the
			// lock was taken over while this process was between its read and its write: the beat went to a
			// file nobody reads. Asked of the path, not of the descriptor's link count: an NFS client keeps an
			// unlinked open file under another name (".nfs…"), linked.
			if (sameFile(fd, path)) beat = { wall, mono };
			else unlinked = true;
		} catch {
			// A missed beat (a torn read, an I/O error) is survivable: the lease allows several.
		} finally {
			try {
				closeSync(fd);
			} catch {
				// A network volume reports a failed write at close: the beat is not confirmed.
				beat = null;
			}
		}
		if (unlinked) {
			markLost(currentHolder());
			return;
		}
		if (beat) {
			confirmedAt = beat.wall;
			confirmedMono = beat.mono;
		}
	};
	/** Who holds the lock now (for the lost listeners' words), or GONE. */
	const currentHolder = (): LockInfo => {
		try {
			return parseHolder(readFileSync(path, "utf8"), "unknown");
		} catch {
			return GONE;
		}
	};
	/**
	 * Whether the last confirmed beat is younger than half the lease by both clocks. A wall clock stepped
	 * back makes the beat look younger than it is (or from the future): the monotonic clock still counts
	 * the real time, so the trust ends on time and the file is read.
	 */
	const recent = () => {
		const wall = now() - confirmedAt;
		return wall >= 0 && Math.max(wall, monotonic() - confirmedMono) < leaseMs / 2;
	};
	/**
	 * Another host takes the lock only once our heartbeat is older than the lease (by its clock); while
	 * our last confirmed beat is younger than half of it, nobody can have, and no I/O is needed.
	 */
	const isHeld = () => {
		if (lost) return false;
		if (recent()) return true;
		renew();
		return !lost && recent();
	};
	const heartbeat = setInterval(renew, Math.max(100, Math.min(5000, Math.floor(leaseMs / 3))));
	heartbeat.unref();
	const release = () => {
		clearInterval(heartbeat);
		try {
			if (mine(JSON.parse(readFileSync(path, "utf8")) as LockInfo)) unlinkSync(path);
		} catch {
			// Already gone: nothing to release.
		}
	};
	// No process hook here (library code): the CLI releases its locks when a second Ctrl-C ends it; a
	// process that dies holding one leaves it to be taken over at once (its pid is gone).
	return { path, tookOver, release, onLost: (listener) => lostListeners.push(listener), isHeld };
}
