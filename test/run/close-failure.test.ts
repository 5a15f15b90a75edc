import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { failingSyncEnv } from "../helpers/failing-sync.js";
import { onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli, spawnNode } from "../helpers/spawn-cli.js";

const LIBRARY = join(import.meta.dirname, "..", "..", "dist", "index.js");

function threeTargets(name: string, site: string): string {
	const urls = [1, 2, 3].map((index) => `  - url: ${site}/page/${index}`);
	return [`name: ${name}`, "defaults:", "  mode: request", "targets:", ...urls, ""].join("\n");
}

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
			const job = writeJob(dir, "flush", threeTargets("flush", service.site.url));
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

	it("through the library: runJobFile returns the summary as output_failed, written to summary.json", async () => {
		assertBuilt();
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "lib", threeTargets("lib", service.site.url));
		// The library in a process of its own: the failing flush is preloaded into that process only.
		const script = `import { runJobFile } from ${JSON.stringify(LIBRARY)};
const result = await runJobFile(${JSON.stringify(job)}, { out: ${JSON.stringify(out)} });
process.stdout.write(JSON.stringify({ reason: result.stopped_reason, complete: result.complete }));`;
		const { code, stdout, stderr } = await spawnNode(["--input-type=module", "-e", script], {
			...service.env,
			...failingSyncEnv(join(dir, "preload"), "/results.jsonl"),
		}).done;
		expect(code, stderr).toBe(0);
		expect(JSON.parse(stdout)).toEqual({ reason: "output_failed", complete: false });
		expect(readSummary(onlyRunDir(out, "lib")).stopped_reason).toBe("output_failed");
	});
});
