import { readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadJob } from "../../src/job/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";

const scanFolders = () => readdirSync(tmpdir()).filter((name) => name.startsWith(`scrapejob-keys-${process.pid}-`));

describe("the counting pass's duplicate check", () => {
	it("finds duplicates of rows whose keys were spilled to disk (past 262,144), and leaves no folder behind", async () => {
		const dir = tempDir();
		const distinct = 270_000;
		const lines: string[] = [];
		for (let n = 0; n < distinct; n++) lines.push(`https://example.com/p/${n}`);
		// The first rows again, at the end: their keys are in a spilled file by then, not in the table.
		for (let n = 0; n < 5_000; n++) lines.push(`https://example.com/p/${n}`);
		writeFileSync(join(dir, "urls.txt"), `${lines.join("\n")}\n`);
		const path = writeJob(dir, "many", "name: many\ndefaults:\n  mode: request\nsources:\n  - file: urls.txt\n");
		const { counts } = await loadJob(path, { env: {}, cwd: dir });
		expect(counts).toMatchObject({ targets: distinct, duplicates: 5_000 });
		expect(scanFolders()).toEqual([]);
	}, 60_000);
});
