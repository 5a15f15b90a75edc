import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeDirectory } from "../../src/common/index.js";
import { tempDir } from "../helpers/job-files.js";
import { assertBuilt, type SpawnedCli, spawnCli } from "../helpers/spawn-cli.js";

let running: SpawnedCli | undefined;
afterEach(() => {
	// A hang (the defect this guards against) ignores SIGTERM: only SIGKILL ends it.
	running?.child.kill("SIGKILL");
	running = undefined;
});

describe("makeDirectory", () => {
	it("makes the missing folders, says the first it made, and accepts one that exists", () => {
		const dir = tempDir();
		expect(makeDirectory(join(dir, "a", "b", "c"))).toBe(join(dir, "a"));
		expect(existsSync(join(dir, "a", "b", "c"))).toBe(true);
		expect(makeDirectory(join(dir, "a", "b"))).toBeUndefined();
	});

	it("refuses a file in the way, as mkdir does", () => {
		const dir = tempDir();
		writeFileSync(join(dir, "file"), "");
		expect(() => makeDirectory(join(dir, "file"))).toThrow(expect.objectContaining({ code: "EEXIST" }));
		expect(() => makeDirectory(join(dir, "file", "below"))).toThrow(expect.objectContaining({ code: "ENOTDIR" }));
	});

	it.runIf(existsSync("/proc/self"))(
		"run --out /proc/x ends with exit 5 and the path, not a process spinning deaf to signals (Node's recursive mkdir there loops for ever)",
		async () => {
			assertBuilt();
			running = spawnCli(["run", "jobs/demo.yaml", "--sandbox", "--out", "/proc/x", "--quiet"], {});
			const ended = await running.done;
			expect(ended.code, ended.stderr).toBe(5);
			expect(ended.stderr).toContain("output failed: cannot write /proc/x/demo");
		},
		20_000,
	);
});
