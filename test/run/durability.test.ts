import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LedgerEntry } from "../../src/emulator/index.js";
import { createRandom } from "../../src/emulator/random.js";
import {
	isRunFolderName,
	readCsv,
	readRecords,
	readSummary,
	tempDir,
	waitForRecords,
	writeJob,
} from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

let service: TestService | undefined;
beforeAll(() => assertBuilt());
afterEach(async () => {
	await service?.close();
	service = undefined;
});

function runDirOf(out: string, job: string): string {
	const runs = readdirSync(join(out, job)).filter(isRunFolderName);
	expect(runs).toHaveLength(1);
	return join(out, job, runs[0]!);
}

const waitMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Credits charged per target URL, one entry per charged fetch. */
function chargedFetches(entries: readonly LedgerEntry[]): Map<string, number> {
	const counts = new Map<string, number>();
	for (const entry of entries) {
		if (entry.endpoint === "realtime" && entry.creditsCharged > 0 && entry.url) {
			counts.set(entry.url, (counts.get(entry.url) ?? 0) + 1);
		}
	}
	return counts;
}

function shopJob(site: string, count: number, everyAsync: number): string {
	const lines = [
		"name: shop",
		"defaults:",
		"  mode: request",
		"retry:",
		"  backoff_ms: 5",
		"  max_backoff_ms: 20",
		"targets:",
	];
	for (let index = 1; index <= count; index += 1) {
		if (index % everyAsync === 0) lines.push(`  - url: ${site}/product/${index}`, "    async: true");
		else if (index % 7 === 0) lines.push(`  - ${site}/slow?ms=${120 + index}`);
		else lines.push(`  - ${site}/product/${index}`);
	}
	return `${lines.join("\n")}\n`;
}

describe("durability of unattended runs", () => {
	it("survives SIGKILL at random moments: one record per target and no double charge once a task id is journalled", async () => {
		service = await startTestService({ concurrency: 4, latency_ms: 30, timeout_ms: 80 });
		const dir = tempDir();
		const out = join(dir, "out");
		const total = 60;
		const job = writeJob(dir, "shop", shopJob(service.site.url, total, 5));
		// Seeded, so a failing kill schedule can be replayed.
		const random = createRandom(20261121);
		const args = ["run", job, "--out", out, "--quiet", "--task-poll-ms", "15"];

		let kills = 0;
		for (let round = 0; round < 4; round += 1) {
			const spawned = spawnCli(round === 0 ? args : [...args, "--resume"], service.env);
			if (round === 0) await waitForRecords(join(out, "shop"), 1);
			await waitMs(40 + Math.floor(random() * 250));
			spawned.child.kill("SIGKILL");
			const ended = await spawned.done;
			if (ended.signal === "SIGKILL") kills += 1;
		}
		let final = await spawnCli([...args, "--resume"], service.env).done;
		for (let extra = 0; extra < 3 && final.code !== 0; extra += 1)
			final = await spawnCli([...args, "--resume"], service.env).done;
		expect(final.stderr).toBe("");
		expect(final.code).toBe(0);

		const runDir = runDirOf(out, "shop");
		const records = readRecords(runDir);
		expect(records).toHaveLength(total);
		expect(new Set(records.map((record) => record.id)).size).toBe(total);
		const rows = readCsv(runDir);
		expect(rows).toHaveLength(total);
		expect(new Set(rows.map((row) => row.id))).toEqual(new Set(records.map((record) => record.id)));
		expect(records.every((record) => record.status === "ok")).toBe(true);
		expect(readSummary(runDir)).toMatchObject({ complete: true, targets: { done: total, remaining: 0 } });

		// Every double charge must be a target that was in flight at a kill with no task id journalled:
		// an earlier charged fetch whose task id had reached the journal would have been polled, not re-sent.
		const journalledTasks = new Set(
			readFileSync(join(runDir, "journal.jsonl"), "utf8")
				.split("\n")
				.filter((line) => line.endsWith("}"))
				.map((line) => JSON.parse(line) as { e: string; task_id?: string })
				.filter((event) => event.e === "task")
				.map((event) => event.task_id),
		);
		const chargedByUrl = new Map<string, LedgerEntry[]>();
		for (const entry of service.emulator.ledger.byEndpoint("realtime")) {
			if (entry.creditsCharged > 0 && entry.url)
				chargedByUrl.set(entry.url, [...(chargedByUrl.get(entry.url) ?? []), entry]);
		}
		let recharged = 0;
		for (const entries of chargedByUrl.values()) {
			recharged += entries.length - 1;
			for (const earlier of entries.slice(0, -1)) {
				if (earlier.taskId) expect(journalledTasks.has(earlier.taskId)).toBe(false);
			}
		}
		// At most what was in flight at the kills: the queue holds 4 fetches.
		expect(recharged).toBeLessThanOrEqual(kills * 4);
		const charged = records.reduce((sum, record) => sum + record.credits_used, 0);
		console.info(
			`SIGKILL test: ${kills} kills, ${recharged} re-charged fetches (in flight without a task id at a kill)`,
		);
		expect(service.emulator.ledger.totalCharged()).toBe(charged + recharged * 2);
	}, 60_000);

	it("on SIGINT stops starting fetches, lets in-flight ones finish, exits 130; --resume completes with no double charge", async () => {
		service = await startTestService({ concurrency: 3, latency_ms: 40 });
		const dir = tempDir();
		const out = join(dir, "out");
		const total = 40;
		const job = writeJob(dir, "shop", shopJob(service.site.url, total, 1000));
		const args = ["run", job, "--out", out, "--task-poll-ms", "15", "--grace-period", "5000"];
		const first = spawnCli(args, service.env);
		await waitForRecords(join(out, "shop"), 5);
		first.child.kill("SIGINT");
		const interrupted = await first.done;
		expect(interrupted.code).toBe(130);
		const runDir = runDirOf(out, "shop");
		const summary = readSummary(runDir);
		expect(summary.complete).toBe(false);
		expect(summary.stopped_reason).toBe("interrupted");
		expect(summary.targets.remaining).toBe(total - summary.targets.done);
		expect(summary.targets.remaining).toBeGreaterThan(0);
		expect(interrupted.stdout).toContain("--resume");
		// In-flight fetches finished and were recorded: nothing the service charged is missing a record.
		expect(readRecords(runDir).reduce((sum, record) => sum + record.credits_used, 0)).toBe(
			service.emulator.ledger.totalCharged(),
		);

		const resumed = await spawnCli([...args, "--resume", "--quiet"], service.env).done;
		expect(resumed.code).toBe(0);
		const records = readRecords(runDir);
		expect(records).toHaveLength(total);
		expect(readCsv(runDir)).toHaveLength(total);
		for (const fetches of chargedFetches(service.emulator.ledger.entries).values()) expect(fetches).toBe(1);
		expect(readSummary(runDir)).toMatchObject({ complete: true, resumed_from: summary.run_id });

		const again = await spawnCli([...args, "--resume"], service.env).done;
		expect(again.code).toBe(0);
		expect(again.stdout).toContain("already complete");
	}, 30_000);

	it("exits at once on a second SIGINT, leaving files that --resume completes", async () => {
		service = await startTestService({ concurrency: 3, latency_ms: 200 });
		const dir = tempDir();
		const out = join(dir, "out");
		const total = 30;
		const job = writeJob(dir, "shop", shopJob(service.site.url, total, 1000));
		const args = ["run", job, "--out", out, "--quiet", "--grace-period", "20000"];
		const first = spawnCli(args, service.env);
		await waitForRecords(join(out, "shop"), 3);
		first.child.kill("SIGINT");
		await waitMs(50);
		first.child.kill("SIGINT");
		const started = Date.now();
		const ended = await first.done;
		expect(ended.code).toBe(130);
		expect(Date.now() - started).toBeLessThan(2000);
		// One line, starting on a line of its own; and a summary that says the run is incomplete.
		expect(ended.stderr).toMatch(
			/^scrapejob: stopped at once \(SIGINT again\); records written so far are kept; summary\.json written/m,
		);
		const runDir = runDirOf(out, "shop");
		expect(readSummary(runDir)).toMatchObject({ complete: false, stopped_reason: "interrupted" });
		const before = readRecords(runDir);
		expect(before.length).toBeLessThan(total);
		expect(readCsv(runDir)).toHaveLength(before.length);
		expect(existsSync(join(out, "shop", ".lock"))).toBe(false);

		const resumed = await spawnCli([...args, "--resume"], service.env).done;
		expect(resumed.code).toBe(0);
		expect(readRecords(runDir)).toHaveLength(total);
		expect(new Set(readRecords(runDir).map((record) => record.id)).size).toBe(total);
	}, 30_000);

	it("lets only one of two overlapping runs of a job write; the other exits 4 having sent nothing", async () => {
		// Long enough (60 × 150 ms / 2 ≈ 4.5 s) that the first run is still going however slowly the
		// second process starts on a loaded machine.
		service = await startTestService({ concurrency: 2, latency_ms: 150 });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJob(service.site.url, 60, 1000));
		const args = ["run", job, "--out", out, "--quiet"];
		const first = spawnCli(args, service.env);
		await waitForRecords(join(out, "shop"), 1);
		const second = await spawnCli(args, service.env).done;
		expect(first.child.exitCode).toBeNull();
		expect(second.code).toBe(4);
		expect(second.stderr).toContain("another run of this job is in progress");
		const done = await first.done;
		expect(done.code).toBe(0);
		expect(readRecords(runDirOf(out, "shop"))).toHaveLength(60);
		expect(existsSync(join(out, "shop", ".lock"))).toBe(false);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(60);
	}, 30_000);

	it("takes over the lock of a process that died", async () => {
		service = await startTestService({ concurrency: 2, latency_ms: 20 });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJob(service.site.url, 8, 1000));
		const args = ["run", job, "--out", out, "--quiet"];
		const first = spawnCli(args, service.env);
		await waitForRecords(join(out, "shop"), 1);
		first.child.kill("SIGKILL");
		await first.done;
		expect(statSync(join(out, "shop", ".lock")).isFile()).toBe(true);
		const resumed = await spawnCli(["run", job, "--out", out, "--resume"], service.env).done;
		expect(resumed.code).toBe(0);
		expect(resumed.stderr).toContain("took over the lock");
		expect(readRecords(runDirOf(out, "shop"))).toHaveLength(8);
	}, 30_000);
});
