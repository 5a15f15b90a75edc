import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mergeShardRuns } from "../../src/run/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { runPrintedCommand } from "../helpers/spawn-cli.js";

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

describe("a merge made again once its missing shards ran", () => {
	it("replaces the folder the incomplete merge wrote; a folder that is not a merge of the job is refused untouched", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const urls = [1, 2, 3, 4, 5, 6].map((id) => `  - ${service.site.url}/product/${id}`);
		writeJob(
			dir,
			"shop",
			["name: shop", "shard_by: url", "defaults: {mode: request}", "targets:", ...urls, ""].join("\n"),
		);
		const options = { env: service.env, cwd: dir };
		expect((await runCli(["run", "shop.yaml", "--out", "out", "--quiet", "--shard", "1/2"], options)).code).toBe(0);
		const shards = () => readdirSync(join(dir, "out", "shop")).filter((name) => name.includes("-shard-"));
		const merge = () =>
			runCli(["merge", ...shards().map((name) => join("out", "shop", name)), "--out", "merged"], options);
		const first = await merge();
		expect(first.code, first.stderr).toBe(1);
		// The incomplete merge's hint, as pasted: shard 2 runs; then the same merge command, as a reader makes it again.
		const hint = /finish with `([^`]+)`/.exec(first.stdout)?.[1];
		expect(hint).toBe("npx scrapejob run shop.yaml --shard 2/2 --out out");
		expect((await runPrintedCommand(hint!, service.env, dir).done).code).toBe(0);
		const again = await merge();
		expect(again.code, again.stderr).toBe(0);
		expect(
			readFileSync(join(dir, "merged", "results.jsonl"), "utf8")
				.trim()
				.split("\n"),
		).toHaveLength(6);
		expect(readdirSync(dir).filter((name) => name.startsWith("merged."))).toEqual([]);
		// A folder of the user's own is never replaced.
		writeFileSync(join(dir, "notes.txt"), "mine\n");
		const refused = await runCli(
			["merge", ...shards().map((name) => join("out", "shop", name)), "--out", "."],
			options,
		);
		expect(refused.code).toBe(2);
		expect(refused.stderr).toContain(
			"is not empty: merge writes into a new or empty folder, or one an earlier merge of job shop wrote",
		);
		expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("mine\n");
	});
});
