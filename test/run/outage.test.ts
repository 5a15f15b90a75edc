import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type DemoSite, type Emulator, startDemoSite, startEmulator } from "../../src/emulator/index.js";
import { createOutageMonitor } from "../../src/run/flow/outage-monitor.js";
import { createSendGate } from "../../src/run/flow/send-gate.js";
import {
	isRunFolderName,
	journalLines,
	onlyRunDir,
	readRecords,
	readSummary,
	tempDir,
	waitForRecords,
	writeJob,
} from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { assertBuilt, endedWithin, type SpawnedCli, spawnCli } from "../helpers/spawn-cli.js";
import { startTcpRelay } from "../helpers/tcp-relay.js";
import { until } from "../helpers/until.js";

let closers: Array<() => Promise<void>> = [];
afterEach(async () => {
	for (const close of closers.reverse()) await close();
	closers = [];
});

async function site(latencyMs = 0): Promise<DemoSite> {
	const started = await startDemoSite({ latencyMs });
	closers.push(() => started.close());
	return started;
}

async function emulator(scenario: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
	const started = await startEmulator(scenario);
	closers.push(() => started.close());
	return started;
}

const envOf = (service: Emulator) => ({ SCRAPEJOB_ACCOUNT_KEY: service.accountKey, SCRAPEJOB_API_URL: service.apiUrl });

function jobText(siteUrl: string, count: number, extra = ""): string {
	return [
		"name: shop",
		"defaults:",
		"  mode: request",
		"retry:",
		"  attempts: 2",
		"  backoff_ms: 5",
		"  max_backoff_ms: 20",
		extra,
		"targets:",
		...Array.from({ length: count }, (_, index) => `  - ${siteUrl}/product/${index + 1}`),
		"",
	].join("\n");
}

/** Resolves when the run's stderr (its log lines) first holds `text`. */
function said(run: SpawnedCli, text: string): Promise<void> {
	let seen = "";
	return new Promise((resolve) => {
		run.child.stderr?.on("data", (chunk: Buffer) => {
			seen += chunk.toString();
			if (seen.includes(text)) resolve();
		});
	});
}

/**
 * A 30-target run (the built CLI) whose service is killed once 4 records are in: the run, its folder,
 * the dead emulator's ledger, and when the run said it paused for the outage.
 */
async function serviceKilledMidRun(flags: string[]) {
	assertBuilt();
	const demo = await site(40);
	const first = await startEmulator({ scenario: { concurrency: 3 } });
	let firstClosed = false;
	closers.push(async () => {
		if (!firstClosed) await first.close();
	});
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(dir, "shop", jobText(demo.url, 30));
	const run = spawnCli(["run", job, "--out", out, ...flags], envOf(first));
	const paused = said(run, "the service looks down");
	const runDir = await waitForRecords(join(out, "shop"), 4);
	firstClosed = true;
	await first.close();
	return { run, runDir, job, out, first, paused };
}

describe("the outage monitor", () => {
	function monitor(options: { clock?: () => number; threshold?: number } = {}) {
		const clock = options.clock ?? Date.now;
		const gate = createSendGate(clock, async () => undefined);
		const events: string[] = [];
		const outage = createOutageMonitor({
			gate,
			probe: () => new Promise(() => undefined), // never answers: the hold stays
			clock,
			sleep: () => new Promise(() => undefined),
			timeoutMs: 600_000,
			threshold: options.threshold ?? 5,
			onOutage: () => events.push("outage"),
			onRecovered: () => events.push("recovered"),
			onTimeout: () => events.push("timeout"),
		});
		closers.push(async () => outage.close());
		return { outage, gate, events };
	}

	it("one target failing again and again is that target's trouble: every failure counts, no outage", () => {
		const { outage, events } = monitor();
		expect(Array.from({ length: 8 }, () => outage.failed("a"))).toEqual(Array(8).fill("count"));
		expect(events).toEqual([]);
	});

	it("failures of two targets in a row are free; at the threshold the whole queue is held until a fetch gets through", () => {
		const { outage, gate, events } = monitor();
		expect(["a", "b", "a", "b", "c"].map((id) => outage.failed(id))).toEqual([
			"count",
			"free",
			"free",
			"free",
			"outage",
		]);
		expect(events).toEqual(["outage"]);
		expect(gate.tryAcquire()).toBe(false);
		expect(gate.pauseReason()).toBe("service_unavailable");
		outage.answered();
		expect(events).toEqual(["outage", "recovered"]);
		expect(gate.tryAcquire()).toBe(true);
		expect(outage.failed("a")).toBe("count");
	});

	it("a silent service's outage counts from the unanswered send, not from the client's deadline: outage_timeout bounds it whole", () => {
		let now = 1_000_000;
		const clock = () => now;
		// Two fetches sent at 1,000,000 hang until the client's 120 s deadline: no status line at all.
		now += 120_000;
		const silent = monitor({ clock, threshold: 2 }).outage;
		expect(silent.failed("a", true, true, 1_000_000)).toBe("count");
		expect(silent.failed("b", false, true, 1_000_000)).toBe("outage");
		expect(silent.totalMs()).toBe(120_000);
		// A failure with an answer (a 503) starts counting when it came.
		const answered = monitor({ clock, threshold: 2 }).outage;
		expect(answered.failed("a", true, false, 1_000_000)).toBe("count");
		expect(answered.failed("b", false, false, 1_000_000)).toBe("outage");
		expect(answered.totalMs()).toBe(0);
	});

	it("an answer to a fetch sent before the failures began does not break their streak (a server shutting down answers what it had)", () => {
		const { outage } = monitor();
		const before = outage.epoch;
		expect(outage.failed("a")).toBe("count");
		// Sent before the first failure, answered after it: no news about the service now.
		outage.answered(before);
		expect(outage.failed("b")).toBe("free");
		// Sent during the streak and answered: the service is there, the streak ends.
		outage.answered(outage.epoch);
		expect(outage.failed("a")).toBe("count");
		// The same target failing again while other fetches are out: not counted until their answers tell.
		expect(outage.failed("a", true)).toBe("free");
		expect(outage.failed("a", false)).toBe("count");
	});
});

describe("no answer at all from the service, one target at a time", () => {
	it("is not spent until a free health check says whether the service is there", async () => {
		let up = false;
		const gate = createSendGate(Date.now, async () => undefined);
		const events: string[] = [];
		const outage = createOutageMonitor({
			gate,
			probe: async () => {
				if (!up) throw new Error("connection refused");
			},
			clock: Date.now,
			sleep: () => new Promise(() => undefined),
			timeoutMs: 600_000,
			onOutage: () => events.push("outage"),
			onRecovered: () => events.push("recovered"),
			onTimeout: () => events.push("timeout"),
		});
		closers.push(async () => outage.close());
		// A gateway's 5xx to one target is still that target's trouble; no answer at all is asked about first.
		expect(outage.failed("a", false, false)).toBe("count");
		outage.answered(outage.epoch);
		expect(outage.failed("a", false, true)).toBe("probe");
		expect(await outage.confirm(new AbortController().signal)).toBe("outage");
		expect(events).toEqual(["outage"]);
		expect(gate.pauseReason()).toBe("service_unavailable");
		outage.answered();
		up = true;
		expect(outage.failed("b", false, true)).toBe("probe");
		expect(await outage.confirm(new AbortController().signal)).toBe("count");
	});

	it("the service killed under a run at concurrency 1: the target in flight gets no failed record; --resume finishes", async () => {
		assertBuilt();
		const demo = await site(40);
		const first = await startEmulator({ scenario: { concurrency: 1 } });
		let firstClosed = false;
		closers.push(async () => {
			if (!firstClosed) await first.close();
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobText(demo.url, 12, "concurrency: 1"));
		const run = spawnCli(["run", job, "--out", out, "--outage-timeout", "2s"], envOf(first));
		const runDir = await waitForRecords(join(out, "shop"), 3);
		firstClosed = true;
		await first.close();
		const ended = await run.done;
		expect(ended.code).toBe(3);
		const records = readRecords(runDir);
		expect(records.filter((record) => record.status !== "ok")).toEqual([]);
		const second = await emulator({ scenario: { concurrency: 1 } });
		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env: envOf(second) });
		expect(resumed.code).toBe(0);
		expect(readRecords(runDir).filter((record) => record.status === "ok")).toHaveLength(12);
	});
});

describe("outages: the service down for a while pauses the whole queue instead of failing the list", () => {
	it("a burst of 503s to everything, longer than the attempt limit, ends with every target ok", async () => {
		const demo = await site();
		// The first 7 fetches, whatever their target, answer 503: with 2 attempts a target, a plain retry
		// loop would fail several of them; an outage costs no attempts.
		const service = await emulator({
			scenario: { concurrency: 2, faults: [{ kind: "unavailable", match: "/./", times: 7 }] },
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobText(demo.url, 8));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: envOf(service) });
		expect(result.code).toBe(0);
		const runDir = join(out, "shop", readdirSync(join(out, "shop")).find(isRunFolderName)!);
		const records = readRecords(runDir);
		expect(records).toHaveLength(8);
		expect(records.every((record) => record.status === "ok")).toBe(true);
		// The outage was noticed and logged as a pause of every send, then its end.
		const log = readFileSync(join(runDir, "run.log"), "utf8");
		expect(log).toMatch(/"event":"pause","reason":"service_unavailable"/);
		expect(log).toMatch(/"recovered":true/);
		// While it lasted, the queue was held: health probes went out, not a stream of fetches.
		expect(service.ledger.byEndpoint("health").length).toBeGreaterThan(1);
		expect(service.ledger.byEndpoint("realtime").length).toBeLessThan(7 + 8 + 2 * 2);
	});

	it("the service killed mid-run: past outage_timeout the run stops (exit 3) leaving the rest to --resume", async () => {
		const { run, runDir, job, out } = await serviceKilledMidRun(["--outage-timeout", "2s"]);
		const ended = await run.done;
		expect(ended.code).toBe(3);
		expect(ended.stderr).toMatch(/the service looks down/);
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({ complete: false, stopped_reason: "service_unavailable" });
		// Targets the outage failed have no record: only fetches that got through are in the file.
		const records = readRecords(runDir);
		expect(records.length).toBeGreaterThanOrEqual(4);
		expect(records.length).toBeLessThan(30);
		expect(records.filter((record) => record.status !== "ok")).toEqual([]);
		expect(ended.stdout).toContain("--resume");

		// The service is back (a new emulator, same demo site): --resume fetches exactly the rest.
		const second = await emulator({ scenario: { concurrency: 3 } });
		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env: envOf(second) });
		expect(resumed.code).toBe(0);
		const all = readRecords(runDir);
		expect(all).toHaveLength(30);
		expect(new Set(all.map((record) => record.id)).size).toBe(30);
		expect(second.ledger.byEndpoint("realtime")).toHaveLength(30 - records.length);
	});

	it("a stop during an outage ends at once: the waiting targets have nothing out, so no grace period is waited", async () => {
		const { run, runDir, job, out, first, paused } = await serviceKilledMidRun([]);
		await paused;
		const sentBefore = first.ledger.byEndpoint("realtime").length;
		run.child.kill("SIGINT");
		// The grace period (30 s) is for fetches out at the service; here every target waits at the gate.
		const ended = await endedWithin(run, 10_000);
		expect(ended?.code).toBe(130);
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({ complete: false, stopped_reason: "interrupted" });
		expect(summary.abandoned ?? 0).toBe(0);
		expect(first.ledger.byEndpoint("realtime")).toHaveLength(sentBefore);
		expect(readRecords(runDir).filter((record) => record.status !== "ok")).toEqual([]);

		const second = await emulator({ scenario: { concurrency: 3 } });
		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env: envOf(second) });
		expect(resumed.code).toBe(0);
		expect(new Set(readRecords(runDir).map((record) => record.id)).size).toBe(30);
	});

	it("a stop while the service cannot answer a task's polls ends at once; --resume polls the stored task, paying nothing again", async () => {
		assertBuilt();
		const demo = await site();
		// Every fetch becomes a task (answered 202 after 50 ms) that finishes when the page does, 4 s later.
		const service = await emulator({ scenario: { concurrency: 3, timeout_ms: 50 } });
		const network = await startTcpRelay(service.port);
		const dir = tempDir();
		const out = join(dir, "out");
		const slowJob = [
			"name: shop",
			"defaults:",
			"  mode: request",
			"targets:",
			...[1, 2, 3].map((index) => `  - ${demo.url}/slow?ms=4000&page=${index}`),
			"",
		].join("\n");
		const job = writeJob(dir, "shop", slowJob);
		const env = { SCRAPEJOB_SCRAPER_KEY: service.scraperKey, SCRAPEJOB_SCRAPER_URL: `${network.origin}/api/v1` };
		const run = spawnCli(["run", job, "--out", out], env);
		// The run has each task's id (journalled as it arrives): a cut before it would lose a 202 on its way.
		const journalledTasks = () => {
			const jobDir = join(out, "shop");
			const runDir = existsSync(jobDir) ? readdirSync(jobDir).find(isRunFolderName) : undefined;
			return runDir ? journalLines(join(jobDir, runDir)).filter((line) => line.e === "task").length : 0;
		};
		await until(() => journalledTasks() === 3, "three task ids journalled");
		network.cut();
		// Each task's next poll met the network down: nothing of the run is out at the service now.
		await until(() => network.refused >= 3, "three polls refused");
		run.child.kill("SIGINT");
		// The grace period (30 s) could not collect a task whose polls get no answer.
		const ended = await endedWithin(run, 10_000);
		expect(ended?.code, ended?.stderr).toBe(130);
		const runDir = onlyRunDir(out, "shop");
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({ complete: false, stopped_reason: "interrupted" });
		expect(summary.abandoned ?? 0).toBe(0);
		expect(readRecords(runDir)).toEqual([]);

		network.restore();
		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env });
		expect(resumed.code, resumed.stderr).toBe(0);
		const records = readRecords(runDir);
		expect(records.map((record) => record.status)).toEqual(["ok", "ok", "ok"]);
		expect(records.every((record) => typeof record.task_id === "string")).toBe(true);
		// The three tasks were polled, not sent again.
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(3);
	}, 60_000);

	it("a stop while a 429's reset is waited out ends at once, and sends nothing more", async () => {
		assertBuilt();
		const demo = await site();
		// The first fetch answers 429 with a minute's reset: every send waits at the gate.
		const service = await emulator({
			scenario: { concurrency: 1, reset_seconds: 60, faults: [{ kind: "rate_limit", times: 1, count: 1 }] },
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobText(demo.url, 6));
		const run = spawnCli(["run", job, "--out", out, "--concurrency", "1"], envOf(service));
		// Answered before the signal is sent: the run reads the 429 first, then the stop.
		await until(
			() => service.ledger.entries.some((entry) => entry.status === 429 && entry.finishedAt !== null),
			"the 429",
		);
		run.child.kill("SIGINT");
		const ended = await endedWithin(run, 10_000);
		expect(ended?.code).toBe(130);
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(1);
		const summary = readSummary(onlyRunDir(out, "shop"));
		expect(summary.stopped_reason).toBe("interrupted");
		expect(summary.abandoned ?? 0).toBe(0);
	});

	it("a 429 pause shows on the progress bar with what is left of it, and is logged with its length", async () => {
		const demo = await site();
		const service = await emulator({
			scenario: { concurrency: 2, reset_seconds: 2, faults: [{ kind: "rate_limit", times: 1, count: 1 }] },
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobText(demo.url, 3));
		const result = await runCli(["run", job, "--out", out], { env: envOf(service), tty: true });
		expect(result.code).toBe(0);
		expect(result.stderr).toMatch(/paused by the service: [12] s left/);
		const runDir = join(out, "shop", readdirSync(join(out, "shop")).find(isRunFolderName)!);
		expect(readFileSync(join(runDir, "run.log"), "utf8")).toMatch(
			/"event":"pause","reason":"rate_limited","pause_ms":2000/,
		);
	});

	it("with only a scraper key, a service that cannot be reached at start-up exits 3 at once: nothing sent, no run folder, no failed record", async () => {
		const gone = await startEmulator();
		const env = { SCRAPEJOB_SCRAPER_KEY: gone.scraperKey, SCRAPEJOB_SCRAPER_URL: gone.scraperUrl };
		await gone.close();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", jobText("https://example.com", 2));
		const result = await runCli(["run", job, "--out", out], { env });
		expect(result.code, result.stderr).toBe(3);
		expect(result.stderr).toMatch(/connection refused/);
		// Before the health check stopped it, the run made a folder, failed the first target on its own
		// attempts (a record --resume does not retry) and waited out outage_timeout.
		const runs = existsSync(join(out, "shop")) ? readdirSync(join(out, "shop")).filter(isRunFolderName) : [];
		expect(runs).toEqual([]);
	});

	it("the account endpoint unreachable at start-up exits 3", async () => {
		const gone = await startEmulator();
		const env = envOf(gone);
		await gone.close();
		const dir = tempDir();
		const job = writeJob(dir, "shop", jobText("https://example.com", 1));
		const result = await runCli(["run", job, "--out", join(dir, "out")], { env });
		expect(result.code).toBe(3);
		expect(result.stderr).toMatch(/failed/);
	});
});
