import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { createRunLog } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";
import { until } from "../helpers/until.js";

describe("run.log", () => {
	it("holds pino JSON lines, every one whole, keys scrubbed", () => {
		const path = join(tempDir(), "run.log");
		const runLog = createRunLog(path, ["sekrit-key-1234"]);
		for (let index = 0; index < 300; index++) runLog.log.info({ index, url: "x?k=sekrit-key-1234" }, "line");
		runLog.close();
		const lines = readFileSync(path, "utf8").split("\n");
		expect(lines.at(-1)).toBe("");
		expect(lines.slice(0, -1).map((line) => JSON.parse(line).index)).toEqual([...Array(300).keys()]);
		expect(readFileSync(path, "utf8")).not.toContain("sekrit-key-1234");
	});

	it("a line waits in the batch a second at most: a run that logs little is readable as it goes", async () => {
		const path = join(tempDir(), "run.log");
		const runLog = createRunLog(path, []);
		try {
			runLog.log.warn({ event: "share_wait" }, "one line, far from filling a batch");
			await until(() => readFileSync(path, "utf8").includes('"event":"share_wait"'), "the line in run.log", 5000);
		} finally {
			runLog.close();
		}
		expect(readFileSync(path, "utf8").split("\n")).toHaveLength(2);
	});

	// /dev/full answers every write with ENOSPC: a disk that filled up while the run went on.
	it.skipIf(!existsSync("/dev/full"))(
		"a full disk ends the log: logging goes on and closing returns (it threw mid-run, or retried forever in close)",
		async () => {
			assertBuilt();
			// 10 lines stay in the batch until close (whose flush looped every 100 ms forever); 200 fill it mid-run.
			for (const lines of [10, 200]) expect(await logToFullDisk(lines)).toEqual({ stdout: "closed", code: 0 });
		},
		40_000,
	);
});

async function logToFullDisk(lines: number): Promise<{ stdout: string; code: number | null }> {
	const output = pathToFileURL(join(BIN, "..", "..", "output", "index.js")).href;
	const script = [
		`const { createRunLog } = await import(${JSON.stringify(output)});`,
		`const runLog = createRunLog("/dev/full", []);`,
		`for (let index = 0; index < ${lines}; index++) runLog.log.info({ index }, "a line of the run");`,
		"runLog.close();",
		`process.stdout.write("closed");`,
	].join("\n");
	const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stdout = "";
	child.stdout.on("data", (chunk: Buffer) => {
		stdout += chunk.toString();
	});
	const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
	const code = await new Promise<number | null>((resolve) => child.on("close", (exit) => resolve(exit)));
	clearTimeout(killer);
	return { stdout, code };
}
