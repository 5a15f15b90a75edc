import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createJsonlSink, type RecordSink, type ResultRecord } from "../../src/output/index.js";
import { createStopController } from "../../src/run/flow/stop-controller.js";
import { lockJobOutput } from "../../src/run/locks/job-lock.js";
import { acquireRunLock } from "../../src/run/locks/run-lock.js";
import { createRecordWriter } from "../../src/run/records/record-writer.js";
import { createRunStatistics } from "../../src/run/records/run-statistics.js";
import { readRecords, tempDir, waitForRecords, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

/**
 * Lease fencing (docs/behaviour.md, "Locks"): a run never writes after its lease is
 * lost. It knows before each append that its lease is current; a holder that was paused past its
 * lease (a stalled node, a frozen VM) while another host resumed the run writes nothing more, and
 * exits 4 — never two records of one target, never one paid twice by both.
 */

let service: TestService | undefined;
beforeAll(() => assertBuilt());
afterEach(async () => {
	await service?.close();
	service = undefined;
});

describe("lease fencing", () => {
	it("a holder paused past its lease while another host resumes writes nothing when it wakes: exit 4, one record per target", async () => {
		// Slow answers: when host A is paused, fetches of its are in flight and answer while it sleeps.
		service = await startTestService({ concurrency: 2, latency_ms: 400 });
		const dir = tempDir();
		const out = join(dir, "out");
		const total = 8;
		const urls = Array.from({ length: total }, (_, index) => `  - ${service!.site.url}/product/${index + 1}`);
		const job = writeJob(dir, "shop", ["name: shop", "defaults: {mode: request}", "targets:", ...urls, ""].join("\n"));
		const lease = { SCRAPEJOB_LOCK_LEASE_MS: "1000" };
		const hostA = spawnCli(["run", job, "--out", out, "--quiet"], {
			...service.env,
			...lease,
			SCRAPEJOB_HOSTNAME: "host-a",
		});
		const runDir = await waitForRecords(join(out, "shop"), 1);
		// Host A freezes with fetches in flight; its heartbeat stops.
		hostA.child.kill("SIGSTOP");
		const lockPath = join(out, "shop", ".lock");
		const frozenBeat = JSON.parse(readFileSync(lockPath, "utf8")).heartbeat_at as string;
		// Host B resumes once A's lease has run out (it retries until the lock is free: an event on disk).
		let resumed: Awaited<ReturnType<typeof spawnCli>["done"]> | undefined;
		const deadline = Date.now() + 20_000;
		while (Date.now() < deadline) {
			resumed = await spawnCli(["run", job, "--out", out, "--resume", "--quiet"], {
				...service.env,
				...lease,
				SCRAPEJOB_HOSTNAME: "host-b",
			}).done;
			if (resumed.code !== 4) break;
		}
		expect(resumed?.code).toBe(0);
		expect(Date.parse(frozenBeat)).toBeLessThan(Date.now() - 1000);
		const afterB = readFileSync(join(runDir, "results.jsonl"), "utf8");
		// Host A wakes: its answers arrived while it slept; it must notice before it appends any.
		hostA.child.kill("SIGCONT");
		const ended = await hostA.done;
		expect(ended.code, ended.stderr).toBe(4);
		expect(ended.stderr).toMatch(/lease lost/);
		expect(readFileSync(join(runDir, "results.jsonl"), "utf8")).toBe(afterB);
		const ids = readRecords(runDir).map((record) => record.id);
		expect(new Set(ids).size).toBe(ids.length);
		expect(ids).toHaveLength(total);
		expect(existsSync(join(runDir, "summary.json"))).toBe(true);
	}, 60_000);

	it("isHeld answers from the last confirmed beat, and reads the lock again once that is old: a takeover is seen before the next append, without waiting for the heartbeat timer", () => {
		const jobDir = join(tempDir(), "shop");
		mkdirSync(jobDir, { recursive: true });
		let clock = 1_000_000;
		const lock = acquireRunLock(jobDir, "run-a", { leaseMs: 60_000, host: "host-a", now: () => clock });
		const lost: string[] = [];
		lock.onLost?.((holder) => lost.push(holder.host));
		try {
			expect(lock.isHeld?.()).toBe(true);
			// Another host takes the lock over; this process's heartbeat timer (every 5 s) has not run.
			const theirs = { pid: 4242, host: "host-b", run_id: "run-b", started_at: new Date().toISOString() };
			writeFileSync(`${lock.path}.b`, `${JSON.stringify(theirs)}\n`);
			renameSync(`${lock.path}.b`, lock.path);
			// Within half the lease of the last confirmed beat nobody can have taken it: no I/O, still held.
			clock += 29_000;
			expect(lock.isHeld?.()).toBe(true);
			// Past it, the file is read again before the append: taken over, the run is told.
			clock += 2_000;
			expect(lock.isHeld?.()).toBe(false);
			expect(lost).toEqual(["host-b"]);
		} finally {
			lock.release();
		}
	});

	it("the job lock the CLI and runJobFile take (lockJobOutput) fences too: a takeover is seen at the next isHeld", () => {
		const outRoot = tempDir();
		// A lease of 2 ms: half of it has passed by the time the file is replaced, so isHeld reads the file.
		const lock = lockJobOutput(outRoot, "shop", "run-a", ".lock", { leaseMs: 2 });
		try {
			const theirs = { pid: 4242, host: "host-b", run_id: "run-b", started_at: new Date().toISOString() };
			writeFileSync(`${lock.path}.b`, `${JSON.stringify(theirs)}\n`);
			renameSync(`${lock.path}.b`, lock.path);
			const until = Date.now() + 5;
			while (Date.now() < until) {
				// the lease's half passes (2 ms of the process's clock)
			}
			expect(lock.isHeld()).toBe(false);
		} finally {
			lock.release();
		}
	});

	describe("a pause between the fence's check and the append (the record path)", () => {
		const LEASE_MS = 60_000;
		const EARLIER = `${JSON.stringify({ id: "earlier" })}\n`;
		/**
		 * A run's record path over a real lock and a real results.jsonl; `pauseInside` is a sink written just
		 * before results.jsonl is (after every check before the append): there the test "freezes" the
		 * process — its clocks jump past the lease — while host B takes the lock over and resumes.
		 */
		function recordPath(pauseInside: (lockPath: string, resultsPath: string) => void) {
			const jobDir = join(tempDir(), "shop");
			mkdirSync(jobDir, { recursive: true });
			let clock = 1_000_000;
			const lock = acquireRunLock(jobDir, "run-a", {
				leaseMs: LEASE_MS,
				host: "host-a",
				now: () => clock,
				monotonic: () => clock,
			});
			const stops = createStopController({
				signal: new AbortController().signal,
				lock,
				log: pino({ level: "silent" }),
			});
			const resultsPath = join(jobDir, "results.jsonl");
			// An earlier record of the run.
			writeFileSync(resultsPath, EARLIER);
			const jsonl = createJsonlSink(resultsPath);
			const pause: RecordSink = {
				write: () => {
					clock += LEASE_MS + 1;
					pauseInside(lock.path, resultsPath);
				},
				sync: () => undefined,
				close: async () => undefined,
			};
			const write = createRecordWriter({
				scrub: (record) => record,
				changes: null,
				fill: null,
				contract: null,
				jsonl,
				sinks: [pause, jsonl],
				history: null,
				historyRun: 0,
				stats: createRunStatistics(),
				report: null,
				fence: stops,
			});
			return { write, stops, lock, jsonl, resultsPath };
		}
		const record = (id: string) => ({ id, url: `http://127.0.0.1/${id}`, status: "ok" }) as ResultRecord;
		const hostB = (lockPath: string) => {
			unlinkSync(lockPath);
			writeFileSync(lockPath, `${JSON.stringify({ pid: 4242, host: "host-b", run_id: "run-b", started_at: "" })}\n`, {
				flag: "wx",
			});
		};

		it("a record appended after another host took the lock over is taken back, and the run stops lease_lost", async () => {
			const { write, stops, lock, jsonl, resultsPath } = recordPath((lockPath) => hostB(lockPath));
			try {
				expect(write(record("late"), null)).toBe(false);
				// The line went out after the takeover (the checks before it saw a recent beat): it is cut back off.
				expect(readFileSync(resultsPath, "utf8")).toBe(EARLIER);
				expect(stops.reason).toBe("lease_lost");
				expect(stops.mayWrite()).toBe(false);
			} finally {
				await jsonl.close();
				lock.release();
			}
		});

		it("the late line is never cut when host B appended after it: B's line stays whole", async () => {
			const theirs = `${JSON.stringify({ id: "theirs" })}\n`;
			const { write, stops, lock, jsonl, resultsPath } = recordPath((lockPath) => hostB(lockPath));
			const original = jsonl.write.bind(jsonl);
			// B's append lands right after A's late line.
			jsonl.write = (written) => {
				original(written);
				appendFileSync(resultsPath, theirs);
			};
			try {
				expect(write(record("late"), null)).toBe(false);
				expect(readFileSync(resultsPath, "utf8")).toMatch(new RegExp(`^${EARLIER}.*"late".*\n${theirs}$`));
				expect(stops.reason).toBe("lease_lost");
			} finally {
				await jsonl.close();
				lock.release();
			}
		});

		it("a record whose lease is still ours after the pause stays (the lock file is read once: still ours, renewed)", async () => {
			const { write, stops, lock, jsonl, resultsPath } = recordPath(() => undefined);
			try {
				// The pause sink moved the clock past the lease: the beat is renewed once (the file is ours) and the line stays.
				expect(write(record("kept"), null)).toBe(true);
				expect(readFileSync(resultsPath, "utf8")).toContain('"kept"');
				expect(stops.reason).toBe(null);
			} finally {
				await jsonl.close();
				lock.release();
			}
		});
	});
});
