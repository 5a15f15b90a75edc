import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mergeShardRuns } from "../../src/run/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { runPrintedCommand } from "../helpers/spawn-cli.js";

/** The shop job of `count` product pages of `site` in `dir` (`shop.yaml`), with `keys` lines before its targets. */
function writeShopJob(dir: string, site: string, count: number, keys: readonly string[] = []): void {
	const urls = Array.from({ length: count }, (_, index) => `  - ${site}/product/${index + 1}`);
	writeJob(dir, "shop", ["name: shop", ...keys, "defaults: {mode: request}", "targets:", ...urls, ""].join("\n"));
}

describe("mergeShardRuns works from the caller's directory, not the process's", () => {
	it("relative folders are read below `cwd`, and the commands that finish the merge are relative to it", async () => {
		const service = await useTestService();
		const dir = tempDir();
		writeShopJob(dir, service.site.url, 4);
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
		writeShopJob(dir, service.site.url, 6, ["shard_by: url"]);
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

describe("merge's commands for shards whose keys came from a --config file", () => {
	it("carry --config (kept in run.json as a path, never its values) and run as printed", async () => {
		const service = await useTestService();
		const dir = tempDir();
		writeShopJob(dir, service.site.url, 4);
		const keys = Object.entries(service.env).map(([name, value]) => `${name}=${value}`);
		writeFileSync(join(dir, "keys.env"), `${keys.join("\n")}\n`);
		// Nothing in the environment reaches the service: only the file does.
		const options = { env: {}, cwd: dir };
		const shard = await runCli(
			["run", "shop.yaml", "--out", "out", "--quiet", "--shard", "1/2", "--config", "keys.env"],
			options,
		);
		expect(shard.code, shard.stderr).toBe(0);
		const [runId] = readdirSync(join(dir, "out", "shop")).filter((name) => name.includes("-shard-"));
		const meta = readFileSync(join(dir, "out", "shop", runId!, "run.json"), "utf8");
		expect(JSON.parse(meta).config_file).toBe(join(dir, "keys.env"));
		expect(meta).not.toContain(String(service.env.SCRAPEJOB_ACCOUNT_KEY));

		const merged = await runCli(["merge", join("out", "shop", runId!), "--out", "merged"], options);
		expect(merged.code, merged.stderr).toBe(1);
		const hint = /finish with `([^`]+)`/.exec(merged.stdout)?.[1];
		expect(hint).toBe("npx scrapejob run shop.yaml --shard 2/2 --out out --config keys.env");
		const second = await runPrintedCommand(hint!, {}, dir).done;
		expect(second.code, second.stderr).toBe(0);
	});
});

describe("merge's command for a shard stopped at its budget", () => {
	it("carries the larger --max-credits the shard's own hint prints: pasted, it finishes the shard (a plain --resume stops again at once)", async () => {
		const service = await useTestService();
		const dir = tempDir();
		// 24 targets: each shard has more than a 4-credit budget pays for whatever the site's port (the URLs'
		// split follows it; of 8, a shard had two or fewer, which the budget covers, for 577 of 2,000 ports).
		writeShopJob(dir, service.site.url, 24, ["shard_by: url", "max_credits: 4"]);
		const options = { env: service.env, cwd: dir };
		const shardHints: string[] = [];
		for (const shard of ["1/2", "2/2"]) {
			const result = await runCli(["run", "shop.yaml", "--out", "out", "--shard", shard], options);
			expect(result.code, result.stderr).toBe(1);
			shardHints.push(/finish with `([^`]+)`/.exec(result.stdout)![1]!);
		}
		const shards = () => readdirSync(join(dir, "out", "shop")).filter((name) => name.includes("-shard-"));
		const merge = () =>
			runCli(["merge", ...shards().map((name) => join("out", "shop", name)), "--out", "merged"], options);
		const first = await merge();
		expect(first.code, first.stderr).toBe(1);
		const hint = /finish with `([^`]+)`/.exec(first.stdout)![1]!;
		// Each shard's command carries the budget its own hint named.
		for (const shardHint of shardHints) {
			const budget = /--max-credits \d+/.exec(shardHint)![0];
			const shard = /--shard \d\/2/.exec(shardHint)![0];
			expect(hint.split("; ").find((command) => command.includes(shard))).toContain(budget);
		}
		expect((await runPrintedCommand(hint, service.env, dir).done).code).toBe(0);
		const again = await merge();
		expect(again.code, again.stderr).toBe(0);
		expect(
			readFileSync(join(dir, "merged", "results.jsonl"), "utf8")
				.trim()
				.split("\n"),
		).toHaveLength(24);
	});
});

describe("merge of a job folder", () => {
	it("takes the newest run of each shard: after a second night, the glob of run folders is refused with that advice, the job folder merges", async () => {
		const service = await useTestService();
		const dir = tempDir();
		writeShopJob(dir, service.site.url, 6, ["shard_by: url"]);
		const options = { env: service.env, cwd: dir };
		const nights: string[][] = [];
		for (const night of [1, 2]) {
			for (const shard of ["1/2", "2/2"]) {
				const result = await runCli(["run", "shop.yaml", "--out", "out", "--quiet", "--shard", shard], options);
				expect(result.code, `night ${night}: ${result.stderr}`).toBe(0);
			}
			const before = nights.flat();
			nights.push(
				readdirSync(join(dir, "out", "shop"))
					.filter((name) => name.includes("-shard-"))
					.filter((name) => !before.includes(name)),
			);
		}
		const glob = readdirSync(join(dir, "out", "shop"))
			.filter((name) => name.includes("-shard-"))
			.map((name) => join("out", "shop", name));
		const refused = await runCli(["merge", ...glob, "--out", "merged"], options);
		expect(refused.code).toBe(2);
		expect(refused.stderr).toContain("give merge the job folder");
		const merged = await runCli(["merge", join("out", "shop"), "--out", "merged", "--json"], options);
		expect(merged.code, merged.stderr).toBe(0);
		const summary = JSON.parse(merged.stdout) as { run_id: string; targets: { done: number } };
		// The second night's shards, each once.
		expect(
			summary.run_id
				.replace(/^merged-/, "")
				.split("+")
				.sort(),
		).toEqual([...nights[1]!].sort());
		expect(summary.targets.done).toBe(6);
	});
});

describe("merge of a job folder after a shard missed a round", () => {
	it("refuses to mix rounds: shard 1's newest run ran beside shard 2's older one; once shard 1 runs again, the folder merges", async () => {
		// The site answers slowly, so the first round's two shards run at the same time, as a night's pods do.
		const service = await useTestService({}, 150);
		const dir = tempDir();
		writeShopJob(dir, service.site.url, 12, ["shard_by: url", "concurrency: 1"]);
		const options = { env: service.env, cwd: dir };
		const shard = (which: string) =>
			runCli(["run", "shop.yaml", "--out", "out", "--quiet", "--shard", which], options).then((result) => {
				expect(result.code, result.stderr).toBe(0);
			});
		await Promise.all([shard("1/2"), shard("2/2")]);
		// The next round: shard 1's pod never started.
		await shard("2/2");
		const mixed = await runCli(["merge", join("out", "shop"), "--out", "merged"], options);
		expect(mixed.code).toBe(2);
		expect(mixed.stderr).toMatch(
			/newest run of shard 1 of 2, .* ran beside .*an earlier run of shard 2.*has not run since/,
		);
		expect(readdirSync(dir)).not.toContain("merged");
		await shard("1/2");
		const merged = await runCli(["merge", join("out", "shop"), "--out", "merged", "--json"], options);
		expect(merged.code, merged.stderr).toBe(0);
		expect((JSON.parse(merged.stdout) as { targets: { done: number } }).targets.done).toBe(12);
	});
});
