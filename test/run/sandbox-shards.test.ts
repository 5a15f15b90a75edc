import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, runPrintedCommand, spawnCli } from "../helpers/spawn-cli.js";
import { until } from "../helpers/until.js";

/** A sandbox job split by URL: its targets name the demo site as ${SCRAPEJOB_DEMO_SITE}, as the guides' do. */
function writeSandboxJob(dir: string, paths: readonly string[]): void {
	const urls = paths.map((path) => `  - \${SCRAPEJOB_DEMO_SITE}${path}`);
	writeJob(dir, "sbx", ["name: sbx", "shard_by: url", "defaults: {mode: request}", "targets:", ...urls, ""].join("\n"));
}

const shardFolders = (dir: string) =>
	existsSync(join(dir, "out", "sbx"))
		? readdirSync(join(dir, "out", "sbx"))
				.filter((name) => name.includes("-shard-"))
				.map((name) => join("out", "sbx", name))
		: [];

describe("the shards of one sandbox job run side by side", () => {
	it("share the demo site's address, so their folders merge into every target once", async () => {
		assertBuilt();
		const dir = tempDir();
		// Slow pages: shard 1 is still fetching (its demo site listening) when shard 2 starts its own.
		writeSandboxJob(
			dir,
			Array.from({ length: 8 }, (_, index) => `/slow?ms=1500&page=${index + 1}`),
		);
		const first = spawnCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--shard", "1/2", "--quiet"], {}, dir);
		await until(() => shardFolders(dir).length === 1, "shard 1's run folder");
		const second = spawnCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--shard", "2/2", "--quiet"], {}, dir);
		await until(() => shardFolders(dir).length === 2, "shard 2's run folder");
		expect(first.child.exitCode, "shard 1 ended before shard 2 started: nothing was side by side").toBeNull();
		const [one, two] = await Promise.all([first.done, second.done]);
		expect(one.code, one.stderr).toBe(0);
		expect(two.code, two.stderr).toBe(0);
		const ports = shardFolders(dir).flatMap((folder) =>
			readRecords(join(dir, folder)).map((record) => new URL(record.url).port),
		);
		expect(new Set(ports).size).toBe(1);
		const merged = await runCli(["merge", ...shardFolders(dir), "--out", "merged"], { cwd: dir });
		expect(merged.code, merged.stderr).toBe(0);
		expect(
			readFileSync(join(dir, "merged", "results.jsonl"), "utf8")
				.trim()
				.split("\n"),
		).toHaveLength(8);
	});
});

describe("merge of sandbox shards", () => {
	it("prints a hint for the missing shard that runs it as pasted (with --sandbox); the merge then completes", async () => {
		assertBuilt();
		const dir = tempDir();
		writeSandboxJob(
			dir,
			[1, 2, 3, 4, 5, 6].map((id) => `/product/${id}`),
		);
		const shard = await runCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--shard", "1/2", "--quiet"], {
			cwd: dir,
		});
		expect(shard.code, shard.stderr).toBe(0);
		const first = await runCli(["merge", ...shardFolders(dir), "--out", "merged"], { cwd: dir });
		expect(first.code, first.stderr).toBe(1);
		const hint = /finish with `([^`]+)`/.exec(first.stdout)?.[1];
		expect(hint).toBe("npx scrapejob run sbx.yaml --shard 2/2 --out out --sandbox");
		// Pasted in a shell where only --sandbox ever sets SCRAPEJOB_DEMO_SITE.
		const ran = await runPrintedCommand(hint!, {}, dir).done;
		expect(ran.code, ran.stderr).toBe(0);
		const again = await runCli(["merge", ...shardFolders(dir), "--out", "merged"], { cwd: dir });
		expect(again.code, again.stderr).toBe(0);
		expect(
			readFileSync(join(dir, "merged", "results.jsonl"), "utf8")
				.trim()
				.split("\n"),
		).toHaveLength(6);
	});

	it("refuses shards whose demo sites had different addresses, saying so (not that the job changed)", async () => {
		const dir = tempDir();
		writeSandboxJob(
			dir,
			[1, 2, 3, 4, 5, 6].map((id) => `/product/${id}`),
		);
		const options = { cwd: dir };
		expect(
			(await runCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--shard", "1/2", "--quiet"], options)).code,
		).toBe(0);
		// The port shard 1 used is held by something else when shard 2 runs (a user's own demo site, say).
		const port = Number(readFileSync(join(dir, "out", ".sandbox-demo-site-port"), "utf8"));
		const holder = createServer();
		await new Promise<void>((resolve, reject) => {
			holder.once("error", reject);
			holder.listen(port, "127.0.0.1", () => resolve());
		});
		try {
			expect(
				(await runCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--shard", "2/2", "--quiet"], options)).code,
			).toBe(0);
		} finally {
			await new Promise((resolve) => holder.close(resolve));
		}
		const merged = await runCli(["merge", ...shardFolders(dir), "--out", "merged"], options);
		expect(merged.code).toBe(2);
		const addresses = shardFolders(dir).map(
			(folder) =>
				(JSON.parse(readFileSync(join(dir, folder, "sandbox.json"), "utf8")) as { demo_site: string }).demo_site,
		);
		expect(addresses).toContain(`http://127.0.0.1:${port}`);
		expect(new Set(addresses).size).toBe(2);
		for (const address of addresses)
			expect(merged.stderr).toContain(`ran in the sandbox with its demo site at ${address}`);
		expect(merged.stderr).not.toContain("the job or its sources changed");
		expect(existsSync(join(dir, "merged"))).toBe(false);
	});

	it("refuses a sandbox shard beside one run against the service, saying which ran where", async () => {
		const service = await useTestService();
		const dir = tempDir();
		writeSandboxJob(
			dir,
			[1, 2, 3, 4, 5, 6].map((id) => `/product/${id}`),
		);
		const sandboxed = await runCli(["run", "sbx.yaml", "--sandbox", "--out", "out", "--shard", "1/2", "--quiet"], {
			cwd: dir,
		});
		expect(sandboxed.code, sandboxed.stderr).toBe(0);
		// The job's demo site named by hand, fetched through a service (the emulator's).
		const env = { ...service.env, SCRAPEJOB_DEMO_SITE: service.site.url };
		const served = await runCli(["run", "sbx.yaml", "--out", "out", "--shard", "2/2", "--quiet"], { env, cwd: dir });
		expect(served.code, served.stderr).toBe(0);
		const merged = await runCli(["merge", ...shardFolders(dir), "--out", "merged"], { cwd: dir });
		expect(merged.code).toBe(2);
		expect(merged.stderr).toContain("shard 2 ran against the service");
		expect(merged.stderr).toContain("shard 1 ran in the sandbox with its demo site at http://127.0.0.1:");
		expect(merged.stderr).toContain("all with --sandbox, or all against the service");
	});
});
