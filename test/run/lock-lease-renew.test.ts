import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { acquireRunLock, LockHeldError, type LockInfo } from "../../src/run/locks/run-lock.js";
import { tempDir } from "../helpers/job-files.js";

/**
 * The windows of a lease that a pause (SIGSTOP, a frozen VM) can fall into, each made to happen at the
 * exact point: the lock's clocks are the test's, and "the pause" is what another host does while the
 * holder's clock is read there.
 */

const LEASE_MS = 60_000;

function jobDir(): string {
	const dir = join(tempDir(), "shop");
	mkdirSync(dir, { recursive: true });
	return dir;
}

/** Host B takes the lock over as acquireRunLock does: the stale file unlinked, its own created (`wx`). */
function takeOver(path: string, beatAt: number): LockInfo {
	const theirs = {
		pid: 4242,
		host: "host-b",
		run_id: "run-b",
		started_at: new Date(beatAt).toISOString(),
		heartbeat_at: new Date(beatAt).toISOString(),
		lease_ms: LEASE_MS,
	};
	unlinkSync(path);
	writeFileSync(path, `${JSON.stringify(theirs)}\n`, { flag: "wx" });
	return theirs;
}

/**
 * A wall clock whose `pauseAt(n, during)` runs `during` inside its n-th reading from now on — as if
 * the process had been frozen there while `during` happened elsewhere.
 */
function pausableClock(start: number) {
	let time = start;
	let countdown = 0;
	let during: (() => void) | null = null;
	let paused = false;
	return {
		now: () => {
			if (during && --countdown === 0) {
				const run = during;
				during = null;
				paused = true;
				run();
			}
			return time;
		},
		/** The same time, for the monotonic clock: not a reading that `pauseAt` counts. */
		mono: () => time,
		advance: (ms: number) => {
			time += ms;
		},
		pauseAt: (reading: number, what: () => void) => {
			countdown = reading;
			during = what;
		},
		get paused() {
			return paused;
		},
	};
}

/** Host A's lock on the test's clocks. */
function holderA(dir: string, now: () => number, monotonic: () => number) {
	return acquireRunLock(dir, "run-a", { leaseMs: LEASE_MS, host: "host-a", now, monotonic });
}

describe("lease windows a pause can fall into", () => {
	it("a holder paused between its renewal's check and its write while another host takes over never writes over the new holder's lock, and knows it lost", () => {
		const dir = jobDir();
		const clock = pausableClock(1_000_000);
		const lock = holderA(dir, clock.now, clock.mono);
		const lost: string[] = [];
		lock.onLost?.((holder) => lost.push(holder.host));
		try {
			clock.advance(LEASE_MS / 2 + 1);
			// isHeld reads the clock (1), finds the beat old, reads the file (ours) and reads the clock for the
			// new beat (2): frozen there past the lease, host B takes over.
			let theirs: LockInfo | undefined;
			clock.pauseAt(2, () => {
				clock.advance(LEASE_MS + 1);
				theirs = takeOver(lock.path, 1_000_000 + LEASE_MS * 2);
			});
			const held = lock.isHeld();
			expect(clock.paused).toBe(true);
			// B's lock is still B's (a rename of A's beat over it gave it back to A: two holders).
			expect(JSON.parse(readFileSync(lock.path, "utf8"))).toEqual(theirs);
			expect(held).toBe(false);
			expect(lost).toEqual(["host-b"]);
		} finally {
			lock.release();
		}
		expect(JSON.parse(readFileSync(lock.path, "utf8"))).toMatchObject({ host: "host-b" });
	});

	it("a holder paused there while another host takes over, finishes and releases, wakes without the lock: it does not recreate it", () => {
		const dir = jobDir();
		const clock = pausableClock(1_000_000);
		const lock = holderA(dir, clock.now, clock.mono);
		const lost: number[] = [];
		lock.onLost?.((holder) => lost.push(holder.pid));
		try {
			clock.advance(LEASE_MS / 2 + 1);
			clock.pauseAt(2, () => {
				clock.advance(LEASE_MS + 1);
				takeOver(lock.path, 1_000_000 + LEASE_MS * 2);
				// B's run ends: its lock is released.
				unlinkSync(lock.path);
			});
			expect(lock.isHeld()).toBe(false);
			expect(clock.paused).toBe(true);
			expect(lost).toEqual([-1]);
			// No lock file: the next run takes it at once; a beat renamed into place would have made A its holder.
			expect(() => readFileSync(lock.path)).toThrow(/ENOENT/);
		} finally {
			lock.release();
		}
	});

	it("a wall clock stepped back does not stretch the trust in the last beat: past half the lease by the monotonic clock, the file is read", () => {
		const dir = jobDir();
		let wall = 1_000_000;
		let mono = 5_000;
		const lock = holderA(
			dir,
			() => wall,
			() => mono,
		);
		try {
			// Another host takes over; meanwhile this host's wall clock was stepped back (NTP) by a minute.
			takeOver(lock.path, wall + LEASE_MS * 2);
			mono += LEASE_MS / 2 + 1;
			wall += LEASE_MS / 2 + 1 - 60_000;
			expect(lock.isHeld()).toBe(false);
		} finally {
			lock.release();
		}
	});

	it("a lock whose beat changes between two reads (a holder renewing in place) is not taken over on the first read", () => {
		const dir = jobDir();
		const path = join(dir, ".lock");
		const base = 1_000_000;
		const holder = (beatAt: number) =>
			`${JSON.stringify({ pid: 4242, host: "host-a", run_id: "run-a", started_at: new Date(base).toISOString(), heartbeat_at: new Date(beatAt).toISOString(), lease_ms: LEASE_MS })}\n`;
		// The first read sees a beat past the lease (torn, or the write lands just after it) ...
		writeFileSync(path, holder(base));
		let readings = 0;
		const now = () => {
			readings += 1;
			// ... and the holder's fresh beat is in place by the time it is read again.
			if (readings === 3) writeFileSync(path, holder(base + LEASE_MS + 5_000));
			return base + LEASE_MS + 10_000;
		};
		expect(() => acquireRunLock(dir, "run-b", { leaseMs: LEASE_MS, host: "host-b", now })).toThrow(LockHeldError);
		expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({ host: "host-a" });
	});
});
