import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runJobFile } from "../../src/library/index.js";
import { isRunFolderName, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

function jobYaml(site: string, count: number, extra = ""): string {
	const targets = Array.from({ length: count }, (_, index) => `  - ${site}/product/${index + 1}`);
	return ["name: shop", "defaults:", "  mode: request", extra, "targets:", ...targets, ""].join("\n");
}

function runFolders(out: string): string[] {
	return readdirSync(join(out, "shop")).filter(isRunFolderName).sort();
}

describe("run --continue", () => {
	it("starts a run, resumes it while unfinished (paying nothing twice), and after it completed starts a new one", async () => {
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		// The budget stops the first run early.
		const file = writeJob(dir, "shop", jobYaml(service.site.url, 5, "max_credits: 2"));
		const paid = () => service.emulator.ledger.byEndpoint("realtime").length;
		const run = (...args: string[]) =>
			runCli(["run", file, "--out", out, "--quiet", "--continue", ...args], { env: service.env });

		const first = await run();
		expect(first.code, first.stderr).toBe(1);
		const [started] = runFolders(out);
		expect(readSummary(join(out, "shop", started!))).toMatchObject({ complete: false });
		const paidFirst = paid();
		expect(paidFirst).toBeGreaterThan(0);
		expect(paidFirst).toBeLessThan(5);

		// The same command line again, the budget unchanged (the next night's cron line): the run is
		// resumed within its budget, so nothing is sent, and it says how to finish it.
		const again = await run();
		expect(again.code, again.stderr).toBe(1);
		expect(runFolders(out)).toEqual([started]);
		expect(paid()).toBe(paidFirst);
		expect(again.stdout).toMatch(/finish with `npx scrapejob run .* --resume --max-credits \d+`/);

		// The same command line again (a restarted pod, with a larger budget): the same run goes on.
		const second = await run("--max-credits", "10");
		expect(second.code, second.stderr).toBe(0);
		expect(runFolders(out)).toEqual([started]);
		expect(readSummary(join(out, "shop", started!))).toMatchObject({ complete: true });
		expect(paid()).toBe(5);

		// Complete runs stay complete: the next --continue is a new run (the next night's), paying again…
		const third = await run("--max-credits", "10");
		expect(third.code, third.stderr).toBe(0);
		expect(runFolders(out)).toHaveLength(2);
		expect(paid()).toBe(10);
		// …unless its targets are fresh.
		const fourth = await run("--freshness", "1h");
		expect(fourth.code, fourth.stderr).toBe(0);
		expect(runFolders(out)).toHaveLength(3);
		expect(paid()).toBe(10);
	});

	it("resumes only its own shard's run, never an unsharded run or another shard's", async () => {
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		// Enough targets that each shard has several whatever the site's port (the URLs' split follows it):
		// a shard of one target would finish within max_credits: 1.
		const file = writeJob(dir, "shop", jobYaml(service.site.url, 24, "shard_by: url\nmax_credits: 1"));
		const run = (...args: string[]) =>
			runCli(["run", file, "--out", out, "--quiet", "--continue", ...args], { env: service.env });
		// An unfinished unsharded run and an unfinished shard 2: shard 1 resumes neither.
		expect((await run()).code).toBe(1);
		expect((await run("--shard", "2/2")).code).toBe(1);
		expect(runFolders(out)).toHaveLength(2);
		const shard1 = await run("--shard", "1/2", "--max-credits", "100");
		expect(shard1.code, shard1.stderr).toBe(0);
		const folders = runFolders(out);
		expect(folders).toHaveLength(3);
		expect(folders.filter((name) => name.endsWith("-shard-1-of-2"))).toHaveLength(1);
		// Shard 2 again: its own unfinished run goes on (no fourth folder).
		expect((await run("--shard", "2/2", "--max-credits", "100")).code).toBe(0);
		expect(runFolders(out)).toHaveLength(3);
	});

	it("a job whose targets changed since its unfinished run started: a new run, not an error a retry would repeat", async () => {
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		const file = writeJob(dir, "shop", jobYaml(service.site.url, 4, "max_credits: 1"));
		const run = () => runCli(["run", file, "--out", out, "--quiet", "--continue"], { env: service.env });
		expect((await run()).code).toBe(1);
		writeJob(dir, "shop", jobYaml(service.site.url, 3));
		const changed = await run();
		expect(changed.code, changed.stderr).toBe(0);
		const folders = runFolders(out);
		expect(folders).toHaveLength(2);
		expect(readSummary(join(out, "shop", folders[1]!)).targets).toMatchObject({ total: 3, done: 3 });
		expect(readSummary(join(out, "shop", folders[0]!))).toMatchObject({ complete: false });

		// With --force the unfinished run goes on instead, its changed targets run as new.
		writeJob(dir, "shop", jobYaml(service.site.url, 4, "max_credits: 1"));
		expect((await run()).code).toBe(1);
		writeJob(dir, "shop", jobYaml(service.site.url, 5));
		const forced = await runCli(
			["run", file, "--out", out, "--quiet", "--continue", "--force", "--max-credits", "20"],
			{ env: service.env },
		);
		expect(forced.code, forced.stderr).toBe(0);
		expect(runFolders(out)).toHaveLength(3);
	});

	it("with --resume or --retry-failed: a usage error (exit 2), nothing sent", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const file = writeJob(dir, "shop", jobYaml(service.site.url, 2));
		for (const other of [["--resume"], ["--retry-failed"]]) {
			const result = await runCli(["run", file, "--out", join(dir, "out"), "--continue", ...other], {
				env: service.env,
			});
			expect(result.code).toBe(2);
			expect(result.stderr).toContain(`not with ${other[0]}`);
		}
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
		await expect(runJobFile(file, { continue: true, resume: true, env: service.env, cwd: dir })).rejects.toThrow(
			/not with resume/,
		);
	});

	it("runJobFile's continue option: the library's way to the same choice", async () => {
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		const file = writeJob(dir, "shop", jobYaml(service.site.url, 3, "max_credits: 1"));
		const first = await runJobFile(file, { continue: true, out, env: service.env });
		expect(first.complete).toBe(false);
		const second = await runJobFile(file, { continue: true, out, env: service.env, maxCredits: 10 });
		expect(second.run_dir).toBe(first.run_dir);
		expect(second.complete).toBe(true);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(3);
	});
});
