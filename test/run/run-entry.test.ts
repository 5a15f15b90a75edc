import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { ScraperNotFoundError } from "../../src/api/index.js";
import { resumeCommand } from "../../src/cli/resume-hint.js";
import type { Job } from "../../src/job/index.js";
import { runJobFile } from "../../src/library/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, runPrintedCommand, spawnCli } from "../helpers/spawn-cli.js";

let service: TestService | undefined;
beforeAll(() => assertBuilt());
afterEach(async () => {
	await service?.close();
	service = undefined;
});

function shopJob(site: string, count: number): string {
	const lines = ["name: shop", "defaults:", "  mode: request", "targets:"];
	for (let index = 1; index <= count; index += 1) lines.push(`  - ${site}/product/${index}`);
	return `${lines.join("\n")}\n`;
}

/** A lock held by this (live) test process, as an overlapping cron run would hold it. */
function holdLock(out: string, job: string): void {
	mkdirSync(join(out, job), { recursive: true });
	const info = { pid: process.pid, host: hostname(), started_at: new Date().toISOString(), run_id: "other-run" };
	writeFileSync(join(out, job, ".lock"), `${JSON.stringify(info)}\n`);
}

describe("how a run starts: lock first, nothing sent on a refusal", () => {
	it("a run that loses the lock sends nothing (not even the account look-up), logs no start, exits 4", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJob(service.site.url, 2));
		holdLock(out, "shop");

		const plain = await runCli(["run", job, "--out", out], { env: service.env });
		expect(plain.code).toBe(4);
		expect(plain.stderr).toContain("another run of this job is in progress");
		expect(plain.stderr).not.toContain("run starting");

		const json = await runCli(["run", job, "--out", out, "--json"], { env: service.env });
		expect(json.code).toBe(4);
		const printed = JSON.parse(json.stdout) as { error: { code: string; message: string } };
		expect(printed.error.code).toBe("SCRAPEJOB_LOCK_HELD");
		expect(printed.error.message).toContain("other-run");

		expect(service.emulator.ledger.entries).toHaveLength(0);
		expect(readdirSync(join(out, "shop"))).toEqual([".lock"]);
	});

	it("two job files of one name in one command share the lock and both run", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const first = writeJob(dir, "a", shopJob(service.site.url, 1));
		const second = writeJob(dir, "b", shopJob(service.site.url, 2));
		const result = await runCli(["run", first, second, "--out", out, "--quiet", "--json"], { env: service.env });
		expect(result.code).toBe(0);
		const lines = result.stdout.trim().split("\n");
		expect(lines.map((line) => (JSON.parse(line) as { complete: boolean }).complete)).toEqual([true, true]);
		expect(existsSync(join(out, "shop", ".lock"))).toBe(false);
	});

	it("a wrong scraper key (health 401 before any fetch) leaves no run folder and no resume hint; exit 3", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJob(service.site.url, 2));
		const env = { SCRAPEJOB_SCRAPER_KEY: "wrong-scraper-key-1", SCRAPEJOB_SCRAPER_URL: service.emulator.scraperUrl };
		const result = await runCli(["run", job, "--out", out], { env });
		expect(result.code).toBe(3);
		expect(result.stderr).toMatch(/401/);
		expect(result.stderr).toContain("the key refused is the scraper key (SCRAPEJOB_SCRAPER_KEY)");
		expect(result.stderr).not.toContain("wrong-scraper-key-1");
		expect(result.stdout + result.stderr).not.toContain("--resume");
		// The job store (history.sqlite) may be there; no run folder is.
		const jobDir = join(out, "shop");
		expect(existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName) : []).toEqual([]);
		expect(service.emulator.ledger.byEndpoint("health")).toHaveLength(1);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
	});
	it("a scraper URL that is not the service (no /api/v1: health 404; a website's 200) ends the run with exit 3 before its folder, nothing fetched", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJob(service.site.url, 3));
		const withoutPrefix = service.emulator.scraperUrl.replace(/\/api\/v1$/, "");
		for (const scraperUrl of [withoutPrefix, service.site.url]) {
			const env = { SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey, SCRAPEJOB_SCRAPER_URL: scraperUrl };
			const result = await runCli(["run", job, "--out", out], { env });
			expect(result.code, result.stderr).toBe(3);
			expect(result.stderr).toContain(`the scraper service is not at ${new URL(scraperUrl).href}`);
			expect(result.stderr).toContain("ends in /api/v1");
			// Checked again as it is, the address would fail again: the hint names the one meant, or none.
			if (scraperUrl === withoutPrefix) {
				expect(result.stderr).toContain(`\`npx scrapejob health --scraper-url ${withoutPrefix}/api/v1\` checks it`);
			} else {
				expect(result.stderr).toContain("does not look like the service's scraper API");
				expect(result.stderr).not.toContain("checks it");
			}
			const jobDir = join(out, "shop");
			expect(existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName) : []).toEqual([]);
		}
		// Given as a flag, the address meant replaces it in the printed hint: run as printed, it passes.
		const flagged = await runCli(["run", job, "--out", out, "--scraper-url", withoutPrefix], {
			env: { SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey },
		});
		expect(flagged.code, flagged.stderr).toBe(3);
		const hint = /`(npx scrapejob health [^`]*)` checks it/.exec(flagged.stderr)?.[1];
		expect(hint).toBe(`npx scrapejob health --scraper-url ${withoutPrefix}/api/v1`);
		const checked = await runPrintedCommand(hint!, { SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey }, out).done;
		expect(checked.code, checked.stderr).toBe(0);
		expect(checked.stdout).toContain("scraper ok");
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
		// The library says the same with a typed error.
		await expect(
			runJobFile(job, {
				out,
				env: { SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey, SCRAPEJOB_SCRAPER_URL: withoutPrefix },
			}),
		).rejects.toBeInstanceOf(ScraperNotFoundError);
	});
	it("an https:// scraper address where a plain HTTP server listens (no TLS: the wrong port) ends the run with exit 3 before its folder", async () => {
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJob("https://shop.example", 2));
		const website = createServer((_request, response) => {
			response.writeHead(200, { "content-type": "text/html" }).end("<html><body>Welcome</body></html>");
		});
		await new Promise<void>((resolve) => website.listen(0, "127.0.0.1", resolve));
		const port = (website.address() as AddressInfo).port;
		try {
			const env = {
				SCRAPEJOB_SCRAPER_KEY: "some-scraper-key-1",
				SCRAPEJOB_SCRAPER_URL: `https://127.0.0.1:${port}/api/v1`,
			};
			// Before, the handshake's ERR_SSL_WRONG_VERSION_NUMBER was no known failure: the run started and waited out outage_timeout.
			const result = await runCli(["run", job, "--out", out, "--outage-timeout", "20s"], { env });
			expect(result.code, result.stderr).toBe(3);
			expect(result.stderr).toContain("ERR_SSL_WRONG_VERSION_NUMBER");
			const jobDir = join(out, "shop");
			expect(existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName) : []).toEqual([]);
		} finally {
			await new Promise((resolve) => website.close(resolve));
		}
	}, 60_000);

	it("an account API address that is not the service (a 404, another server's 200 page) ends the run with exit 3 before its folder, nothing fetched", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJob(service.site.url, 2));
		// Any address answers this page with 200, as a web server or a captive portal would.
		const website = createServer((_request, response) => {
			response.writeHead(200, { "content-type": "text/html" }).end("<html><body>Welcome</body></html>");
		});
		await new Promise<void>((resolve) => website.listen(0, "127.0.0.1", resolve));
		const websiteUrl = `http://127.0.0.1:${(website.address() as AddressInfo).port}`;
		try {
			for (const apiUrl of [service.site.url, websiteUrl]) {
				const env = { SCRAPEJOB_ACCOUNT_KEY: service.emulator.accountKey, SCRAPEJOB_API_URL: apiUrl };
				const result = await runCli(["run", job, "--out", out], { env });
				expect(result.code, result.stderr).toBe(3);
				expect(result.stderr).toContain(`the account API is not at ${new URL(apiUrl).href}`);
				expect(result.stderr).toContain("SCRAPEJOB_API_URL");
				// No path to drop: nothing nearer to suggest, so no command that would fail the same way.
				expect(result.stderr).toContain(
					`${new URL(apiUrl).href} does not look like the service's account API: left unset, scrapejob uses https://api.evomi.com`,
				);
				expect(result.stderr).not.toContain("checks it");
				const jobDir = join(out, "shop");
				expect(existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName) : []).toEqual([]);
			}
		} finally {
			await new Promise((resolve) => website.close(resolve));
		}
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
	});
});

describe("the resume hint resumes this run", () => {
	it("Ctrl-C of a run with --out prints a command that, run as printed, completes that run", async () => {
		service = await startTestService({ concurrency: 2, latency_ms: 60 });
		const dir = tempDir();
		const total = 20;
		writeJob(dir, "shop", shopJob(service.site.url, total));
		// Relative paths, as a user types them, from the job's folder.
		const first = spawnCli(["run", "shop.yaml", "--out", "out2", "--grace-period", "5000"], service.env, dir);
		const runParent = join(dir, "out2", "shop");
		const deadline = Date.now() + 10_000;
		while (Date.now() < deadline) {
			const runs = existsSync(runParent) ? readdirSync(runParent).filter(isRunFolderName) : [];
			const results = runs.length > 0 ? join(runParent, runs[0]!, "results.jsonl") : "";
			if (results && existsSync(results) && readRecords(join(runParent, runs[0]!)).length >= 3) break;
			await new Promise((resolve) => setTimeout(resolve, 10));
		}
		first.child.kill("SIGINT");
		const interrupted = await first.done;
		expect(interrupted.code).toBe(130);
		const hint = /finish with `([^`]+)`/.exec(interrupted.stdout)?.[1];
		expect(hint).toBe("npx scrapejob run shop.yaml --out out2 --resume");
		const resumed = await runPrintedCommand(hint ?? "", service.env, dir).done;
		expect(resumed.code).toBe(0);
		const runDir = join(runParent, readdirSync(runParent).filter(isRunFolderName)[0]!);
		expect(readSummary(runDir).complete).toBe(true);
		expect(readRecords(runDir)).toHaveLength(total);
	}, 30_000);

	it("names the run id when a newer run of the job exists, and the flags that chose the service", () => {
		const dir = tempDir();
		const jobDir = join(dir, "out", "shop");
		for (const runId of ["20260101T000000Z-aaaaaa", "20260102T000000Z-bbbbbb"]) {
			mkdirSync(join(jobDir, runId), { recursive: true });
			writeFileSync(join(jobDir, runId, "run.json"), "{}");
		}
		const job = { file: join(dir, "jobs", "my shop.yaml") } as Job;
		const older = join(jobDir, "20260101T000000Z-aaaaaa");
		const newer = join(jobDir, "20260102T000000Z-bbbbbb");
		expect(resumeCommand({ cwd: dir }, job, { out: "out", sandbox: true }, older)).toBe(
			"npx scrapejob run 'jobs/my shop.yaml' --out out --sandbox --resume 20260101T000000Z-aaaaaa",
		);
		expect(resumeCommand({ cwd: dir }, job, { out: "output" }, newer)).toBe(
			"npx scrapejob run 'jobs/my shop.yaml' --resume",
		);
	});
});
