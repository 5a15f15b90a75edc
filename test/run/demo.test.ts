import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isRunFolderName, readCsv, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { assertBuilt, runPrintedCommand, spawnCli } from "../helpers/spawn-cli.js";
import { until } from "../helpers/until.js";

const root = join(import.meta.dirname, "..", "..");

describe("the offline demo (npm run demo)", () => {
	it("runs jobs/demo.yaml against the in-process emulator and demo site, every target once", async () => {
		const out = join(tempDir(), "out");
		const result = await runCli(["run", join(root, "jobs", "demo.yaml"), "--sandbox", "--out", out], { cwd: root });
		expect(result.code).toBe(0);
		const [runId] = readdirSync(join(out, "demo")).filter(isRunFolderName);
		const runDir = join(out, "demo", runId!);
		const records = readRecords(runDir);
		expect(records).toHaveLength(39);
		expect(records.every((record) => record.status === "ok")).toBe(true);
		expect(readCsv(runDir)).toHaveLength(39);
		const upgraded = records.find((record) => record.id === "script-rendered");
		expect(upgraded?.mode_used).toBe("auto (browser)");
		expect(upgraded?.credits_used).toBe(6);
		expect(records.find((record) => record.id === "slow-page")?.task_id).toBeTruthy();
		expect(readSummary(runDir)).toMatchObject({ complete: true, targets: { total: 39 } });
		expect(result.stdout).toContain("39 of 39 done: 39 ok");
		// Non-TTY: JSON log lines on stderr, no bar.
		expect(result.stderr.split("\n")[0]).toMatch(/^\{"level":30/);
	});
});

/** Listen on 127.0.0.1:`port` until closed, when nothing else does: as a user's own `scrapejob emulator --demo-site` would. */
async function holdPort(port: number): Promise<{ close(): Promise<void> }> {
	const server = createServer();
	const held = await new Promise<boolean>((resolve) => {
		server.once("error", () => resolve(false));
		server.listen(port, "127.0.0.1", () => resolve(true));
	});
	let open = held;
	return {
		close: () => {
			if (!open) return Promise.resolve();
			open = false;
			return new Promise((resolve) => server.close(() => resolve()));
		},
	};
}

/**
 * A sandbox run of 60 demo pages stopped (SIGINT) after its first records while 8701 is held, then
 * `between()`, then resumed with the hint it printed: every target once, each with the id of its first run.
 */
async function stopAndResume(between: () => Promise<void>): Promise<void> {
	const dir = tempDir();
	const urls = Array.from({ length: 60 }, (_, index) => `  - \${SCRAPEJOB_DEMO_SITE}/product/${index + 1}`);
	writeJob(dir, "sbx", `name: sbx\ndefaults: {mode: request}\ntargets:\n${urls.join("\n")}\n`);
	const first = spawnCli(["run", "sbx.yaml", "--sandbox", "--out", "out"], {}, dir);
	const results = () => {
		const runs = existsSync(join(dir, "out", "sbx"))
			? readdirSync(join(dir, "out", "sbx")).filter(isRunFolderName)
			: [];
		return runs.length === 1 ? join(dir, "out", "sbx", runs[0]!) : undefined;
	};
	await until(() => {
		const runDir = results();
		return runDir !== undefined && readRecords(runDir).length >= 3;
	}, "the first records");
	first.child.kill("SIGINT");
	const stopped = await first.done;
	expect(stopped.code, stopped.stderr).toBe(130);
	const firstIds = readRecords(results()!).map((record) => record.id);
	const hint = /finish with `([^`]+)`/.exec(stopped.stdout)?.[1];
	expect(hint).toBe("npx scrapejob run sbx.yaml --out out --sandbox --resume");
	await between();
	const resumed = await runPrintedCommand(hint!, {}, dir).done;
	expect(resumed.code, resumed.stderr).toBe(0);
	const records = readRecords(results()!);
	expect(records).toHaveLength(60);
	expect(new Set(records.map((record) => record.id)).size).toBe(60);
	expect(records.every((record) => record.status === "ok")).toBe(true);
	// The same demo site address: the targets the first run wrote are the resume's (none fetched again).
	expect(records.slice(0, firstIds.length).map((record) => record.id)).toEqual(firstIds);
	expect(new Set(records.map((record) => new URL(record.url).port)).size).toBe(1);
}

describe("a sandbox run stopped while port 8701 is taken", () => {
	it("resumes with the hint it printed: its demo site is back on the same address, every target once", async () => {
		assertBuilt();
		const held = await holdPort(8701);
		try {
			await stopAndResume(async () => {});
		} finally {
			await held.close();
		}
	});

	it("resumes on the same address when 8701 is free again: the port is remembered for the --out folder", async () => {
		assertBuilt();
		const held = await holdPort(8701);
		try {
			await stopAndResume(() => held.close());
		} finally {
			await held.close();
		}
	});
});

describe("a sandbox job's offline commands (export, extract)", () => {
	/** Three demo pages kept as files, with a price contract; `price` is the price's selector. */
	const job = (price: string) =>
		[
			"name: sbx",
			"defaults: {mode: request}",
			"output: {content: files}",
			"extract:",
			`  price: {css: ${price}, type: number, required: true}`,
			"extract_checks: {min_fill: 0.9}",
			"targets:",
			...[1, 2, 3].map((n) => `  - \${SCRAPEJOB_DEMO_SITE}/product/${n}`),
			"",
		].join("\n");

	it("read the job with the demo site its sandbox runs used: the printed --accept, export and extract work as pasted", async () => {
		assertBuilt();
		const dir = tempDir();
		writeJob(dir, "sbx", job(".price"));
		const kept = await runCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--quiet"], { cwd: dir });
		expect(kept.code, kept.stderr).toBe(0);
		// A selector gone wrong: the contract holds the run back and the summary prints the line that accepts it.
		writeJob(dir, "sbx", job(".prize"));
		const held = await runCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--quiet"], { cwd: dir });
		expect(held.code, held.stderr).toBe(1);
		const accept = /publish it anyway with `([^`]+)`/.exec(held.stdout)?.[1];
		expect(accept).toMatch(/^npx scrapejob export sbx\.yaml --latest --out sbx-\S+\.csv --from out --accept \S+$/);
		// Pasted in a shell where only --sandbox ever set SCRAPEJOB_DEMO_SITE.
		const accepted = await runPrintedCommand(accept!, {}, dir).done;
		expect(accepted.code, accepted.stderr).toBe(0);
		expect(accepted.stdout).toMatch(/^3 records/);
		// The selector fixed: the stored pages are read again, and the job's latest exported.
		writeJob(dir, "sbx", job(".price"));
		const again = await runPrintedCommand("npx scrapejob extract sbx.yaml --run latest --out out", {}, dir).done;
		expect(again.code, again.stderr).toBe(0);
		expect(again.stdout).toContain("3 of 3 done: 3 ok");
		const exported = await runPrintedCommand(
			"npx scrapejob export sbx.yaml --latest --from out --out latest.csv",
			{},
			dir,
		).done;
		expect(exported.code, exported.stderr).toBe(0);
		const rows = readFileSync(join(dir, "latest.csv"), "utf8").trim().split("\n");
		expect(rows).toHaveLength(4);
		// The targets its sandbox runs fetched: the address the results root remembers.
		const port = readFileSync(join(dir, "out", ".sandbox-demo-site-port"), "utf8").trim();
		expect(rows.slice(1).every((row) => row.includes(`http://127.0.0.1:${port}/product/`))).toBe(true);
	});
});

describe("scrapejob report on a run that never ended", () => {
	it("says the run is still going or was killed, and that its --resume writes the report, not that it is no run folder", async () => {
		assertBuilt();
		const dir = tempDir();
		const urls = Array.from({ length: 60 }, (_, index) => `  - \${SCRAPEJOB_DEMO_SITE}/product/${index + 1}`);
		writeJob(dir, "sbx", `name: sbx\ndefaults: {mode: request}\ntargets:\n${urls.join("\n")}\n`);
		const run = spawnCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--quiet"], {}, dir);
		const runDir = () => readdirSync(join(dir, "out", "sbx")).filter(isRunFolderName)[0];
		await until(() => {
			const name = existsSync(join(dir, "out", "sbx")) ? runDir() : undefined;
			return name !== undefined && readRecords(join(dir, "out", "sbx", name)).length >= 3;
		}, "the first records");
		// Killed as the kernel's OOM killer would: no summary.json, no report.html.
		run.child.kill("SIGKILL");
		await run.done;
		const folder = join(dir, "out", "sbx", runDir()!);
		const report = await runCli(["report", folder], { cwd: dir });
		expect(report.code).toBe(2);
		expect(report.stderr).toContain(
			`${folder} has no summary.json yet: its run is still going, or was killed before it ended; the run's --resume finishes it and writes summary.json and report.html`,
		);
		const resumed = await runCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--resume", "--quiet"], { cwd: dir });
		expect(resumed.code, resumed.stderr).toBe(0);
		expect(existsSync(join(folder, "report.html"))).toBe(true);
		expect((await runCli(["report", folder], { cwd: dir })).code).toBe(0);
	});
});
