import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { failingSyncEnv } from "../helpers/failing-sync.js";
import { onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

/**
 * A run's last flush failing (an NFS or EFS mount reporting a write-back error when the file is synced
 * and closed): the run ends as an output failure (exit 5, summary.json saying so), every other file
 * still closed, and `--resume` finds the records that did reach the file.
 */
describe("a file's final flush fails when the run closes it", () => {
	for (const file of ["results.jsonl", "journal.jsonl"]) {
		it(`${file}: exit 5 naming it, summary.json written as output_failed, the resume pays nothing again`, async () => {
			assertBuilt();
			const service = await useTestService();
			const dir = tempDir();
			const out = join(dir, "out");
			const urls = [1, 2, 3].map((index) => `${service.site.url}/page/${index}`);
			const job = writeJob(
				dir,
				"flush",
				["name: flush", "defaults:", "  mode: request", "targets:", ...urls.map((url) => `  - url: ${url}`), ""].join(
					"\n",
				),
			);
			const failing = failingSyncEnv(join(dir, "preload"), `/${file}`);
			const run = await spawnCli(["run", job, "--out", out, "--quiet"], {
				...service.env,
				...failing,
			}).done;
			expect(run.stderr).toMatch(new RegExp(`output failed: cannot write .*${file.replace(".", "\\.")}.*EIO`));
			expect(run.code, run.stderr).toBe(5);
			const runDir = onlyRunDir(out, "flush");
			const summary = readSummary(runDir);
			expect(summary.stopped_reason).toBe("output_failed");
			expect(summary.complete).toBe(false);
			expect(readFileSync(join(runDir, "run.log"), "utf8")).toMatch(/"event":"output_failed"/);
			// Every record reached the file (the page cache holds them): the resume finds them all.
			expect(readRecords(runDir)).toHaveLength(3);
			const paid = service.emulator.ledger.byEndpoint("realtime").length;
			expect(paid).toBe(3);

			const resume = await spawnCli(["run", job, "--out", out, "--quiet", "--resume"], service.env).done;
			expect(resume.code, resume.stderr).toBe(0);
			expect(readSummary(runDir).complete).toBe(true);
			expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(paid);
		});
	}
});
