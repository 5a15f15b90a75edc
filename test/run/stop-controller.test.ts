import { once } from "node:events";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { OutputError } from "../../src/output/index.js";
import { createStopController } from "../../src/run/flow/stop-controller.js";
import type { LockInfo, RunLock } from "../../src/run/locks/run-lock.js";

/** A lock whose takeover the test triggers: `lose()` tells the listeners, as the heartbeat would. */
function lockForTest() {
	const listeners: Array<(holder: LockInfo) => void> = [];
	let held = true;
	const lock: RunLock = {
		path: "/nonexistent/lock",
		tookOver: null,
		release: () => undefined,
		onLost: (listener) => listeners.push(listener),
		isHeld: () => held,
	};
	const lose = () => {
		held = false;
		for (const listener of listeners) listener({ pid: 4242, host: "other-host", started_at: "", run_id: "other" });
	};
	return { lock, lose };
}

/** run.log and the terminal, captured. */
function logs() {
	const lines: Array<Record<string, unknown>> = [];
	const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
	return { log, lines };
}

describe("stop controller", () => {
	it("keeps the first reason, runs its stop listeners once, and gives work in flight its grace period", async () => {
		const signal = new AbortController();
		const { log, lines } = logs();
		const stops = createStopController({ signal: signal.signal, gracePeriodMs: 30, lock: lockForTest().lock, log });
		let cleared = 0;
		stops.onStop(() => {
			cleared += 1;
		});
		expect(stops.stopping).toBe(false);
		stops.stop("budget_exhausted", "stopping: max_credits 10 reached");
		stops.stop("service_unavailable", "a later reason");
		signal.abort();
		expect(stops.reason).toBe("budget_exhausted");
		expect(stops.message).toBe("stopping: max_credits 10 reached");
		expect(cleared).toBe(1);
		// Not at once: the fetches in flight may finish within the grace period.
		expect(stops.inflight.aborted).toBe(false);
		await once(stops.inflight, "abort");
		expect(String(stops.inflight.reason)).toContain("grace period over");
		expect(lines.filter((line) => line.event === "run_stopping").map((line) => line.reason)).toEqual([
			"budget_exhausted",
		]);
		stops.close();
	});

	it("turns the run's signal into `interrupted`, even one aborted before it was made, and a late listener still runs", () => {
		const signal = new AbortController();
		signal.abort();
		const stops = createStopController({ signal: signal.signal, lock: lockForTest().lock, log: logs().log });
		expect(stops.reason).toBe("interrupted");
		let ran = false;
		stops.onStop(() => {
			ran = true;
		});
		expect(ran).toBe(true);
		stops.close();
	});

	it("an output error stops the run at once (`output_failed`), fences every later write, and any other error is thrown on", () => {
		const stops = createStopController({
			signal: new AbortController().signal,
			lock: lockForTest().lock,
			log: logs().log,
		});
		expect(stops.guardOutput(() => 7)).toBe(7);
		expect(() => stops.guardOutput(() => JSON.parse("{"))).toThrow(SyntaxError);
		expect(stops.stopping).toBe(false);
		const error = new OutputError("/out/results.jsonl", Object.assign(new Error("no space"), { code: "ENOSPC" }));
		expect(
			stops.guardOutput(() => {
				throw error;
			}),
		).toBeUndefined();
		expect(stops.reason).toBe("output_failed");
		expect(stops.outputFailure).toBe(error);
		// Fetches in flight end now: their answers could not be written anyway.
		expect(stops.inflight.aborted).toBe(true);
		let wrote = false;
		stops.guardOutput(() => {
			wrote = true;
		});
		expect(wrote).toBe(false);
		expect(stops.mayWrite()).toBe(false);
		stops.close();
	});

	it("a lost lease stops the run (`lease_lost`) and nothing more is written, not even its stop line in run.log", () => {
		const { lock, lose } = lockForTest();
		const { log, lines } = logs();
		const stops = createStopController({ signal: new AbortController().signal, lock, log });
		expect(stops.mayWrite()).toBe(true);
		lose();
		expect(stops.reason).toBe("lease_lost");
		expect(stops.leaseLost).toBe(true);
		expect(stops.message).toContain("pid 4242 on other-host");
		expect(stops.mayWrite()).toBe(false);
		expect(stops.inflight.aborted).toBe(true);
		expect(lines.some((line) => line.event === "run_stopping")).toBe(false);
		stops.close();
	});

	it("a fence closed before any onLost fired blocks the write: the lock itself is asked before each append", () => {
		// The lock says it is no longer held (its lease ran out, the takeover not yet seen by a heartbeat):
		// no listener was told, so the stop controller has no flag of its own to go by.
		const { lock } = lockForTest();
		let held = true;
		const fenced: RunLock = { ...lock, onLost: () => undefined, isHeld: () => held };
		const stops = createStopController({ signal: new AbortController().signal, lock: fenced, log: logs().log });
		let writes = 0;
		expect(stops.guardOutput(() => ++writes)).toBe(1);
		held = false;
		expect(stops.mayWrite()).toBe(false);
		expect(stops.guardOutput(() => ++writes)).toBeUndefined();
		expect(writes).toBe(1);
		expect(stops.leaseLost).toBe(false);
		stops.close();
	});

	it("a reason found once the work is over is kept only when none is set", () => {
		const stops = createStopController({
			signal: new AbortController().signal,
			lock: lockForTest().lock,
			log: logs().log,
		});
		stops.conclude("contract_failed", "broke its contract");
		expect(stops.reason).toBe("contract_failed");
		expect(stops.stopping).toBe(false);
		stops.conclude("invalid_source", null);
		expect(stops.reason).toBe("contract_failed");
		stops.close();
	});
	it("an output failure found after the lease passed on is the lost lease (exit 4), not the disk (exit 5)", () => {
		// The holder was paused past its lease; the new holder's resume swept its temporary page file, so
		// the rename failed. The lock, asked, finds the takeover (as a real lock's isHeld does).
		const { lock, lose } = lockForTest();
		let takenOver = false;
		const asked: RunLock = {
			...lock,
			isHeld: () => {
				if (takenOver) lose();
				return lock.isHeld();
			},
		};
		const stops = createStopController({ signal: new AbortController().signal, lock: asked, log: logs().log });
		takenOver = true;
		stops.outputFailed(new OutputError("/out/shop/run/pages/a.html", new Error("ENOENT: no such file or directory")));
		expect(stops.reason).toBe("lease_lost");
		expect(stops.outputFailure).toBeNull();
		stops.close();
	});
});
