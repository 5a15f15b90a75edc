import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mergeShardRuns } from "../../src/run/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

describe("mergeShardRuns works from the caller's directory, not the process's", () => {
	it("relative folders are read below `cwd`, and the commands that finish the merge are relative to it", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const urls = [1, 2, 3, 4].map((id) => `  - ${service.site.url}/product/${id}`);
		writeJob(dir, "shop", ["name: shop", "defaults: {mode: request}", "targets:", ...urls, ""].join("\n"));
		const shard = await runCli(["run", "shop.yaml", "--out", "out", "--quiet", "--shard", "1/2"], {
			env: service.env,
			cwd: dir,
		});
		expect(shard.code, shard.stderr).toBe(0);
		const [runId] = readdirSync(join(dir, "out", "shop")).filter((name) => name.includes("-shard-"));
		// The test process's own directory is elsewhere: the folder named relative to `dir` is found there.
		expect(process.cwd()).not.toBe(dir);
		const { summary, finishCommands } = await mergeShardRuns([join("out", "shop", runId!)], "merged", { cwd: dir });
		expect(summary.shards.missing).toEqual([2]);
		// Shard 2 never ran: the command that runs it names the job file and --out as seen from `dir`.
		expect(finishCommands).toEqual(["npx scrapejob run shop.yaml --shard 2/2 --out out"]);
		expect(readdirSync(join(dir, "merged"))).toContain("results.jsonl");
	});
});
