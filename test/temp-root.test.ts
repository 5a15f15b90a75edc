import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * test/helpers/temp-root.ts: a test run keeps its temporary folders in one folder of its own. (That
 * spawnCli passes it on, test/job/scan-stop.test.ts shows: its orphaned key folders are made here.)
 */
describe("the test run's temporary folder", () => {
	it("is the system temporary folder of every test process, made for this run", () => {
		expect(basename(tmpdir())).toMatch(/^scrapejob-tests-/);
		expect(existsSync(tmpdir())).toBe(true);
		expect(basename(dirname(tmpdir()))).not.toMatch(/^scrapejob-tests-/);
	});
});
