import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processState } from "../../src/common/index.js";
import { acquireRunLock, LockHeldError } from "../../src/run/locks/run-lock.js";
import { isRunFolderName, readRecords, tempDir, waitForRecords, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

let service: TestService | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) cleanup();
	await service?.close();
	service = undefined;
});

function writeLock(dir: string, info: Record<string, unknown>): string {
	mkdirSync(dir, { recursive: true });
	const path = join(dir, ".lock");
	writeFileSync(path, `${JSON.stringify({ started_at: "2026-11-22T00:00:00.000Z", run_id: "old-run", ...info })}\n`);
	return path;
}

/**
 * A real zombie: a shell forks a child and then execs into `sleep 60`, which never waits for it. The child
 * exits only once its parent is `sleep` (a child that exited before the exec could be reaped by the shell,
 * under load, and never become a zombie).
 */
async function zombiePid(): Promise<number> {
	const script = 'p=$$; (while [ "$(cat /proc/$p/comm)" != sleep ]; do sleep 0.01; done) & echo $!; exec sleep 60';
	const parent = spawn("sh", ["-c", script], { stdio: ["ignore", "pipe", "ignore"] });
	cleanups.push(() => parent.kill("SIGKILL"));
	const pid = await new Promise<number>((resolve) =>
		parent.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
	);
	for (let tries = 0; tries < 3000 && processState(pid).state !== "zombie"; tries += 1)
		await new Promise((resolve) => setTimeout(resolve, 10));
	return pid;
}

describe("the job lock is a lease", () => {
	it("a zombie holder on this host is taken over at once, though kill(pid, 0) says it is alive", async () => {
		const pid = await zombiePid();
		expect(processState(pid).state).toBe("zombie");
		expect(() => process.kill(pid, 0)).not.toThrow();
		const dir = tempDir();
		writeLock(dir, { pid, host: hostname() });
		const lock = acquireRunLock(dir, "new-run", { host: hostname() });
		expect(lock.tookOver).toMatchObject({ pid });
		lock.release();
	});

	it("a live pid of this host is taken over only when it is not the process that wrote the lock", () => {
		const dir = tempDir();
		const ours = processState(process.pid);
		expect(ours.state).toBe("running");
		const start = ours.state === "running" ? ours.startTicks : null;
		writeLock(dir, { pid: process.pid, host: hostname(), pid_start: start });
		expect(() => acquireRunLock(dir, "new-run", { host: hostname() })).toThrow(LockHeldError);
		// The same pid, started at another time: the pid was reused by another process after the holder died.
		writeLock(dir, { pid: process.pid, host: hostname(), pid_start: "1" });
		const lock = acquireRunLock(dir, "new-run", { host: hostname() });
		expect(lock.tookOver).toMatchObject({ pid: process.pid, pid_start: "1" });
		lock.release();
	});

	it("another host's lock is held while its heartbeat is fresh and taken over once it is older than the lease", () => {
		const dir = tempDir();
		const now = Date.parse("2026-11-22T12:00:00.000Z");
		writeLock(dir, { pid: 4242, host: "node-a", heartbeat_at: new Date(now - 20_000).toISOString(), lease_ms: 30_000 });
		expect(() => acquireRunLock(dir, "b", { host: "node-b", leaseMs: 30_000, now: () => now })).toThrow(
			/lease is renewed/,
		);
		writeLock(dir, { pid: 4242, host: "node-a", heartbeat_at: new Date(now - 31_000).toISOString(), lease_ms: 30_000 });
		const lock = acquireRunLock(dir, "b", { host: "node-b", leaseMs: 30_000, now: () => now });
		expect(lock.tookOver).toMatchObject({ host: "node-a" });
		expect(JSON.parse(readFileSync(lock.path, "utf8"))).toMatchObject({ host: "node-b", run_id: "b" });
		lock.release();
	});

	it("renews its heartbeat while held", async () => {
		const dir = tempDir();
		const lock = acquireRunLock(dir, "r", { host: "node-a", leaseMs: 300 });
		const first = JSON.parse(readFileSync(lock.path, "utf8")).heartbeat_at as string;
		let later = first;
		for (let tries = 0; tries < 200 && later === first; tries += 1) {
			await new Promise((resolve) => setTimeout(resolve, 10));
			later = JSON.parse(readFileSync(lock.path, "utf8")).heartbeat_at as string;
		}
		expect(Date.parse(later)).toBeGreaterThan(Date.parse(first));
		lock.release();
	});

	it("a .lock that is a directory gets a clear message", () => {
		const dir = tempDir();
		mkdirSync(join(dir, ".lock"), { recursive: true });
		expect(() => acquireRunLock(dir, "r")).toThrow(/is a directory, not a lock file: remove it/);
	});

	it("a run killed on one host is resumed on another once the lease runs out", async () => {
		assertBuilt();
		service = await startTestService({ concurrency: 2, latency_ms: 30 });
		const dir = tempDir();
		const out = join(dir, "out");
		const targets = Array.from({ length: 12 }, (_, index) => `  - ${service!.site.url}/product/${index + 1}`);
		const job = writeJob(
			dir,
			"shop",
			["name: shop", "defaults:", "  mode: request", "targets:", ...targets, ""].join("\n"),
		);
		const lease = { SCRAPEJOB_LOCK_LEASE_MS: "1500" };
		const first = spawnCli(["run", job, "--out", out, "--quiet"], {
			...service.env,
			...lease,
			SCRAPEJOB_HOSTNAME: "node-a",
		});
		const lockPath = join(out, "shop", ".lock");
		// Killed once it has written a few records (so there is a run to resume).
		for (let tries = 0; tries < 2000; tries += 1) {
			const runs = existsSync(join(out, "shop")) ? readdirSync(join(out, "shop")).filter(isRunFolderName) : [];
			const file = runs[0] ? join(out, "shop", runs[0], "results.jsonl") : "";
			if (file && existsSync(file) && readFileSync(file, "utf8").split("\n").length > 2) break;
			await new Promise((resolve) => setTimeout(resolve, 10));
		}
		expect(JSON.parse(readFileSync(lockPath, "utf8")).host).toBe("node-a");
		first.child.kill("SIGKILL");
		await first.done;
		const other = { ...service.env, ...lease, SCRAPEJOB_HOSTNAME: "node-b" };
		// Within the lease, node-b cannot tell node-a's run is dead: checked at a chosen moment (the clock is
		// injected), not at whatever moment a second process manages to start on a loaded machine.
		const heartbeatAt = Date.parse(JSON.parse(readFileSync(lockPath, "utf8")).heartbeat_at);
		expect(() =>
			acquireRunLock(join(out, "shop"), "early", { host: "node-b", leaseMs: 1500, now: () => heartbeatAt + 500 }),
		).toThrow(LockHeldError);
		// Once the heartbeat is older than the lease, it is taken over and the run finishes.
		await new Promise((resolve) => setTimeout(resolve, Math.max(0, heartbeatAt + 1600 - Date.now())));
		const resumed = await spawnCli(["run", job, "--out", out, "--resume"], other).done;
		expect(resumed.stderr).toContain("took over the lock");
		expect(resumed.code).toBe(0);
		const runs = readRecords(
			join(out, "shop", (await import("node:fs")).readdirSync(join(out, "shop")).find(isRunFolderName)!),
		);
		expect(new Set(runs.map((record) => record.id)).size).toBe(12);
	}, 30_000);

	it("a run whose lock is taken over stops at once: exit 4, lease_lost, nothing more written to the folder", async () => {
		assertBuilt();
		service = await startTestService({ concurrency: 1, latency_ms: 40 });
		const dir = tempDir();
		const out = join(dir, "out");
		const urls = Array.from({ length: 40 }, (_, index) => `  - ${service!.site.url}/product/${index + 1}`);
		const job = writeJob(dir, "shop", ["name: shop", "defaults: {mode: request}", "targets:", ...urls, ""].join("\n"));
		const run = spawnCli(["run", job, "--out", out], { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: "600" });
		const runDir = await waitForRecords(join(out, "shop"), 3);
		// Another node decided this run's lease had run out (it was paused, or cut off from the volume).
		const lockPath = join(out, "shop", ".lock");
		const theirs = { pid: 4242, host: "node-b", run_id: "their-run", started_at: new Date().toISOString() };
		writeFileSync(`${lockPath}.theirs`, `${JSON.stringify({ ...theirs, heartbeat_at: new Date().toISOString() })}\n`);
		renameSync(`${lockPath}.theirs`, lockPath);
		const takenAt = readRecords(runDir).length;
		const ended = await run.done;
		expect(ended.code).toBe(4);
		expect(ended.stderr).toMatch(/lease lost: pid 4242 on node-b took the job's lock over/);
		// At most the fetch in flight when the heartbeat noticed (every 200 ms here) was written after.
		const records = readRecords(runDir);
		expect(records.length).toBeLessThan(40);
		expect(records.length).toBeLessThanOrEqual(takenAt + 6);
		// The folder is theirs now: no summary, no report, and their lock stays.
		expect(existsSync(join(runDir, "summary.json"))).toBe(false);
		expect(existsSync(join(runDir, "report.html"))).toBe(false);
		expect(JSON.parse(readFileSync(lockPath, "utf8"))).toMatchObject(theirs);
	}, 30_000);
});
