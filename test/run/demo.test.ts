import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isRunFolderName, readCsv, readRecords, readSummary, tempDir } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";

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
