import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ResumeError, runJobFile } from "../../src/index.js";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { runPrintedCommand } from "../helpers/spawn-cli.js";

/**
 * One product (docs/guides/library.md; docs/behaviour.md, "Budget"): the
 * CLI and `runJobFile` run the same code, a budget survives a resume, and every hint runs as printed.
 */

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

function productsJob(site: string, count: number, extra: string[] = []): string {
	const lines = ["name: shop", ...extra, "defaults:", "  mode: request", "targets:"];
	for (let index = 1; index <= count; index += 1) lines.push(`  - ${site}/product/${index}`);
	return `${lines.join("\n")}\n`;
}

function runDirs(out: string, job = "shop"): string[] {
	const parent = join(out, job);
	return existsSync(parent)
		? readdirSync(parent)
				.filter((name) => !name.startsWith(".") && existsSync(join(parent, name, "run.json")))
				.sort()
				.map((name) => join(parent, name))
		: [];
}

const paid = (svc: TestService) => svc.emulator.ledger.byEndpoint("realtime").length;

describe("a budget survives --resume (CLI)", () => {
	it("a plain --resume keeps the run's budget; a smaller one is refused naming the figure; the printed hint runs as printed", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		writeJob(dir, "shop", productsJob(service.site.url, 12));
		const first = await runCli(["run", "shop.yaml", "--out", "out", "--max-credits", "4"], {
			env: service.env,
			cwd: dir,
		});
		expect(first.code).toBe(1);
		const [runDir] = runDirs(join(dir, "out"));
		expect(readSummary(runDir!)).toMatchObject({ stopped_reason: "budget_exhausted", complete: false });
		const spent = readSummary(runDir!).credits.used;
		expect(spent).toBeLessThanOrEqual(4);
		expect(JSON.parse(readFileSync(join(runDir!, "run.json"), "utf8")).max_credits).toBe(4);

		// The bug: a plain --resume forgot the budget and spent everything. It stays within it now.
		const before = paid(service);
		const plain = await runCli(["run", "shop.yaml", "--out", "out", "--resume"], { env: service.env, cwd: dir });
		expect(plain.code).toBe(1);
		expect(readSummary(runDir!)).toMatchObject({ stopped_reason: "budget_exhausted" });
		expect(readSummary(runDir!).credits.used).toBeLessThanOrEqual(4);
		expect(paid(service) - before).toBeLessThanOrEqual(4 - spent);

		// A new budget at or below what was spent could send nothing: refused, exit 2, naming the figure.
		const small = await runCli(["run", "shop.yaml", "--out", "out", "--resume", "--max-credits", String(spent)], {
			env: service.env,
			cwd: dir,
		});
		expect(small.code).toBe(2);
		expect(small.stderr).toContain(
			`not above the ${readSummary(runDir!).credits.used} credits this run has already spent`,
		);

		// The hint, pasted as printed: the README's `npx scrapejob`, the --out the run needs, a larger budget.
		const hint = /finish with `([^`]+)`/.exec(plain.stdout)?.[1] ?? "";
		expect(hint).toMatch(/^npx scrapejob run shop\.yaml --out out --resume --max-credits \d+$/);
		const larger = Number(/--max-credits (\d+)$/.exec(hint)?.[1]);
		const resumed = await runPrintedCommand(hint, service.env, dir).done;
		// "finish with" means it: the budget it names covers every target left at its worst case.
		expect(resumed.code, resumed.stdout).toBe(0);
		const summary = readSummary(runDir!);
		expect(summary).toMatchObject({ complete: true, stopped_reason: null });
		expect(summary.credits.used).toBeLessThanOrEqual(larger);
		expect(summary.credits.max_credits).toBe(larger);
		expect(summary.targets.done).toBeGreaterThan(readRecords(runDir!).length - 1);
		// Every record was paid once: one ledger entry per record.
		expect(paid(service)).toBe(readRecords(runDir!).length);
	}, 60_000);
});

describe("a budget stop before the job's dear targets", () => {
	it("prints a --max-credits that finishes the run: the targets it never reached are booked at their worst case", async () => {
		service = await startTestService({ concurrency: 1 });
		const dir = tempDir();
		// Cheap targets listed first: the run stops among them, before any browser target (5 credits) was booked.
		const browser = [7, 8, 9].map((index) => `  - {url: "${service!.site.url}/product/${index}", mode: browser}`);
		writeJob(dir, "shop", `${productsJob(service.site.url, 6)}${browser.join("\n")}\n`);
		const first = await runCli(["run", "shop.yaml", "--out", "out", "--max-credits", "4"], {
			env: service.env,
			cwd: dir,
		});
		expect(first.code, first.stderr).toBe(1);
		const [runDir] = runDirs(join(dir, "out"));
		expect(readSummary(runDir!)).toMatchObject({ stopped_reason: "budget_exhausted" });
		expect(readRecords(runDir!).every((record) => record.mode_requested === "request")).toBe(true);
		const hint = /finish with `([^`]+)`/.exec(first.stdout)?.[1] ?? "";
		expect(hint).toMatch(/^npx scrapejob run shop\.yaml --out out --resume --max-credits \d+$/);
		const resumed = await runPrintedCommand(hint, service.env, dir).done;
		expect(resumed.code, resumed.stdout).toBe(0);
		expect(readSummary(runDir!)).toMatchObject({ complete: true, stopped_reason: null, targets: { done: 9 } });
	}, 60_000);
});

describe("runJobFile is scrapejob run", () => {
	it("keeps the budget across resumes, and refuses a smaller one with ResumeError", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		const job = writeJob(dir, "shop", productsJob(service.site.url, 12));
		const options = { env: service.env, cwd: dir, out: "out" };
		const first = await runJobFile(job, { ...options, maxCredits: 4 });
		expect(first).toMatchObject({ stopped_reason: "budget_exhausted", complete: false });
		const resumed = await runJobFile(job, { ...options, resume: true });
		expect(resumed.run_dir).toBe(first.run_dir);
		expect(resumed.credits.used).toBeLessThanOrEqual(4);
		expect(paid(service)).toBe(readRecords(first.run_dir).length);
		await expect(runJobFile(job, { ...options, resume: true, maxCredits: 1 })).rejects.toBeInstanceOf(ResumeError);
		const finished = await runJobFile(job, { ...options, resume: true, maxCredits: 100 });
		expect(finished).toMatchObject({ complete: true, stopped_reason: null });
		expect(readRecords(first.run_dir)).toHaveLength(12);
		expect(paid(service)).toBe(12);
	}, 60_000);

	it("honours freshness and change tracking, and retries failures, as the CLI does", async () => {
		service = await startTestService({ concurrency: 3 });
		const dir = tempDir();
		const site = service.site.url;
		const job = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"freshness: 1h",
				"defaults:",
				"  mode: request",
				"targets:",
				...[1, 2, 3].map((n) => `  - ${site}/product/${n}`),
				`  - ${site}/no-such-page`,
				"",
			].join("\n"),
		);
		const options = { env: service.env, cwd: dir, out: "out" };
		const first = await runJobFile(job, options);
		expect(first.targets.by_status).toMatchObject({ ok: 3, failed: 1 });
		const records = readRecords(first.run_dir);
		expect(records.filter((record) => record.status === "ok").every((record) => record.content_hash !== null)).toBe(
			true,
		);
		expect(records.filter((record) => record.status === "ok").map((record) => record.change)).toEqual([
			"new",
			"new",
			"new",
		]);
		const paidAfterFirst = paid(service);

		// The second run: the three ok targets are fresh (not paid again); the failed one is fetched again.
		const second = await runJobFile(job, options);
		expect(second.targets.fresh).toBe(3);
		expect(second.targets.done).toBe(1);
		expect(paid(service) - paidAfterFirst).toBe(1);

		// --retry-failed: only the target whose latest record failed.
		const retried = await runJobFile(job, { ...options, retryFailed: true });
		expect(retried.targets.done).toBe(1);
		expect(readRecords(retried.run_dir).map((record) => new URL(record.url).pathname)).toEqual(["/no-such-page"]);

		// The CLI sees the same history: everything is fresh but the failure, and the terminal says so.
		const cli = await runCli(["run", "shop.yaml", "--out", "out"], { env: service.env, cwd: dir });
		expect(cli.stdout).toMatch(/1 of 1 done: 0 ok, 1 failed, 0 skipped; 3 fresh \(not fetched: freshness\)/);
	}, 60_000);

	it("--retry-failed with nothing failed says so and makes no run folder (CLI and library)", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		const job = writeJob(dir, "shop", productsJob(service.site.url, 2));
		const options = { env: service.env, cwd: dir, out: "out" };
		await runJobFile(job, options);
		expect(runDirs(join(dir, "out"))).toHaveLength(1);
		const cli = await runCli(["run", "shop.yaml", "--out", "out", "--retry-failed"], { env: service.env, cwd: dir });
		expect(cli.code).toBe(0);
		expect(cli.stdout).toContain("shop: no target's latest record failed: nothing to retry (no run folder was made)");
		await expect(runJobFile(job, { ...options, retryFailed: true })).rejects.toThrow(/nothing to retry/);
		expect(runDirs(join(dir, "out"))).toHaveLength(1);
		expect(paid(service)).toBe(2);
	}, 30_000);

	it("never writes URL credentials to any file of the run folder, changes.jsonl included", async () => {
		service = await startTestService({ concurrency: 2 });
		// A page that changes on every fetch: the second run writes a changes.jsonl line for it.
		let served = 0;
		const site = createServer((_req, res) => {
			served += 1;
			res.writeHead(200, { "content-type": "text/html" }).end(`<html><body><p>version ${served}</p></body></html>`);
		});
		await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
		try {
			const { port } = site.address() as AddressInfo;
			const dir = tempDir();
			const secretUrl = `http://alice:S3cretPassw0rd@127.0.0.1:${port}/changing`;
			const job = writeJob(
				dir,
				"shop",
				["name: shop", "defaults:", "  mode: request", "targets:", `  - ${secretUrl}`, ""].join("\n"),
			);
			const options = { env: service.env, cwd: dir, out: "out" };
			await runJobFile(job, options);
			const result = await runJobFile(job, options);
			expect(result.changes).toMatchObject({ changed: 1 });
			const files = readdirSync(result.run_dir, { recursive: true }) as string[];
			expect(files).toContain("changes.jsonl");
			for (const name of files) {
				const path = join(result.run_dir, name);
				if (!name.includes(".") || !existsSync(path)) continue;
				expect(readFileSync(path, "utf8"), name).not.toContain("S3cretPassw0rd");
			}
		} finally {
			await new Promise((resolve) => site.close(resolve));
		}
	}, 30_000);
});

describe("shards × budget × --resume × freshness", () => {
	it("each shard stopped by its budget finishes with its printed hint (its --shard and a larger budget); every URL paid once in the union; merged; a fresh run of both shards pays nothing", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		// By URL: one host, both shards busy. The shards split by the URLs' hash (the site's port is random):
		// with 20 targets a shard gets fewer than two (what a 2-credit budget would not stop) once in ~25,000 runs.
		const total = 20;
		writeJob(dir, "shop", productsJob(service.site.url, total, ["shard_by: url", "freshness: 1h"]));
		const shardDirs: string[] = [];
		for (const shard of ["1/2", "2/2"]) {
			const first = await runCli(["run", "shop.yaml", "--out", "out", "--shard", shard, "--max-credits", "2"], {
				env: service.env,
				cwd: dir,
			});
			expect(first.code, first.stderr).toBe(1);
			const hint = /finish with `([^`]+)`/.exec(first.stdout)?.[1] ?? "";
			expect(hint).toContain(`--shard ${shard}`);
			expect(hint).toMatch(/--resume/);
			expect(hint).toMatch(/--max-credits \d+/);
			const resumed = await runPrintedCommand(hint, service.env, dir).done;
			expect(resumed.code, `${hint}\n${resumed.stdout}\n${resumed.stderr}`).toBe(0);
			const [index] = shard.split("/");
			const shardDir = runDirs(join(dir, "out")).find((path) => path.endsWith(`-shard-${index}-of-2`));
			expect(shardDir).toBeDefined();
			expect(readSummary(shardDir!)).toMatchObject({ complete: true, stopped_reason: null });
			shardDirs.push(shardDir!);
		}
		// The union is every target once, each paid once (a budget stop and a resume in each shard).
		const ids = shardDirs.flatMap((path) => readRecords(path).map((record) => record.id));
		expect(new Set(ids).size).toBe(total);
		expect(ids).toHaveLength(total);
		expect(paid(service)).toBe(total);
		const merged = await runCli(["merge", ...shardDirs, "--out", join(dir, "merged")], { env: service.env, cwd: dir });
		expect(merged.code, merged.stderr).toBe(0);
		expect(readRecords(join(dir, "merged"))).toHaveLength(total);
		// Both shards again within the freshness window: every target is fresh in the store they share.
		for (const shard of ["1/2", "2/2"]) {
			const again = await runCli(["run", "shop.yaml", "--out", "out", "--shard", shard, "--json"], {
				env: service.env,
				cwd: dir,
			});
			expect(again.code, again.stderr).toBe(0);
		}
		expect(paid(service)).toBe(total);
	}, 90_000);
});
