import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runJobFile } from "../../src/library/index.js";
import {
	isRunFolderName,
	onlyRunDir,
	readRecords,
	readSummary,
	tempDir,
	waitForRecords,
	writeJob,
} from "../helpers/job-files.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

/**
 * Every credit the service charged is in the run's figures (docs/behaviour.md, "Pay once, never lose a
 * record"): the summary's `credits.used`, fresh and after `--resume`, equals what the emulator's ledger
 * charged, however the run stopped.
 */
beforeAll(() => assertBuilt());

/** A `request` fetch's price on the emulator. */
const FETCH = 2;

function creditsOnRecords(runDir: string): number {
	return readRecords(runDir).reduce((sum, record) => sum + record.credits_used, 0);
}

/** The built CLI to its end. */
async function cli(args: string[], service: TestService) {
	return spawnCli(args, service.env).done;
}

/**
 * Two pages of `bytes` each; the second is answered only once `release` is called, so the test can
 * break the page folder between the two records.
 */
async function gatedSite(bytes: number) {
	let release = () => {};
	const released = new Promise<void>((resolve) => {
		release = resolve;
	});
	const page = (res: ServerResponse) =>
		res.writeHead(200, { "content-type": "text/html" }).end(`<html><body>${"x".repeat(bytes)}</body></html>`);
	const site = await startTargetSite((req, res) => {
		if (req.url === "/p/2") void released.then(() => page(res));
		else page(res);
	});
	return { origin: site.origin, release };
}

describe("an answer paid whose page could not be written (exit 5)", () => {
	/**
	 * The second page's file cannot be written (`pages` is a file by then): the run stops with exit 5. Its
	 * answer was paid: in `credits.used` now, and, once `pages/` is a folder again, the resume's record of
	 * the target carries it.
	 */
	async function brokenPages(bytes: number, library = false) {
		const site = await gatedSite(bytes);
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"paid",
			[
				"name: paid",
				"concurrency: 1",
				"defaults: {mode: request}",
				"output: {content: files}",
				"targets:",
				`  - ${site.origin}/p/1`,
				`  - ${site.origin}/p/2`,
				"",
			].join("\n"),
		);
		const first = spawnCli(["run", job, "--out", out, "--quiet"], service.env);
		const runDir = await waitForRecords(join(out, "paid"), 1);
		const pages = join(runDir, "pages");
		rmSync(pages, { recursive: true });
		writeFileSync(pages, "in the way");
		site.release();
		const ended = await first.done;
		expect(ended.code, ended.stderr).toBe(5);
		expect(readRecords(runDir)).toHaveLength(1);
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBe(2 * FETCH);
		expect(readSummary(runDir)).toMatchObject({
			stopped_reason: "output_failed",
			credits: { used: charged },
			session: { credits_used: charged },
		});

		rmSync(pages);
		mkdirSync(pages);
		if (library) {
			const result = await runJobFile(job, { out, resume: basename(runDir), env: service.env });
			expect(result.credits.used).toBe(service.emulator.ledger.totalCharged());
		} else {
			const resumed = await cli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], service);
			expect(resumed.code, resumed.stderr).toBe(0);
		}
		expect(onlyRunDir(out, "paid")).toBe(runDir);
		const all = service.emulator.ledger.totalCharged();
		expect(all).toBe(3 * FETCH);
		expect(readSummary(runDir)).toMatchObject({ complete: true, credits: { used: all } });
		expect(creditsOnRecords(runDir)).toBe(all);
		const second = readRecords(runDir).find((record) => record.url.endsWith("/p/2"));
		expect(second?.credits_used).toBe(2 * FETCH);
	}

	it("a large page streamed to its file (the file cannot be opened): credits.used and the resume count its answer", async () => {
		// Past 1 MiB a page nothing reads goes to its file as it arrives.
		await brokenPages(2 * 1024 * 1024);
	}, 60_000);

	it("a small page whose file cannot be written with its record: the resume counts its answer", async () => {
		await brokenPages(1000);
	}, 60_000);

	it("runJobFile resumes the same way: its summary counts the answer", async () => {
		await brokenPages(1000, true);
	}, 60_000);
});

describe("a robots.txt or sitemap fetch given up after a charged failure", () => {
	/**
	 * robots.txt's first fetch is a failure charged 1; its retry waits (days) and a SIGINT gives it up. The
	 * charge is in `credits.used` and the crawl's `sitemap_credits`.
	 */
	async function givenUp(crawl: string, extra = "") {
		const service = await useTestService({
			faults: [{ kind: "scraping_error", match: "/\\/robots\\.txt$/", times: 1, credits: 1 }],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"concurrency: 1",
				"defaults: {mode: request}",
				"retry: {attempts: 3, backoff_ms: 2000000000, max_backoff_ms: 2000000000}",
				`crawl: {max_depth: 0, max_pages: 5, ${crawl}}`,
				extra,
				"targets:",
				`  - ${new URL(service.site.url).origin}/product/1`,
				"",
			].join("\n"),
		);
		const first = spawnCli(["run", job, "--out", out, "--grace-period", "1500"], service.env);
		await until(
			() => service.emulator.ledger.byEndpoint("realtime").some((entry) => entry.creditsCharged === 1),
			"the charged failure of robots.txt",
		);
		first.child.kill("SIGINT");
		const ended = await first.done;
		expect(ended.code, ended.stderr).toBe(130);
		const runDir = onlyRunDir(out, "crawl");
		expect(service.emulator.ledger.totalCharged()).toBe(1);
		expect(readSummary(runDir)).toMatchObject({
			credits: { used: 1 },
			session: { credits_used: 0 },
			crawl: { sitemap_credits: 1 },
		});
		const resume = () => cli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], service);
		return { service, runDir, resume };
	}

	/** The resume fetches robots.txt again and keeps counting the first charge; `stoppedBy`: how it ends. */
	async function resumedAgrees(crawl: string, stoppedBy: string | null) {
		const { service, runDir, resume } = await givenUp(crawl);
		const resumed = await resume();
		expect(resumed.code, resumed.stderr).toBe(stoppedBy === null ? 0 : 1);
		const all = service.emulator.ledger.totalCharged();
		const summary = readSummary(runDir);
		expect(summary).toMatchObject({ stopped_reason: stoppedBy, credits: { used: all } });
		// robots.txt paid twice (the failure, then its fetch), sitemaps once each, the pages on their records.
		expect(creditsOnRecords(runDir) + (summary.crawl?.sitemap_credits ?? 0)).toBe(all);
		expect(summary.crawl?.sitemap_credits).toBeGreaterThanOrEqual(1 + FETCH);
	}

	it("robots: obey", async () => {
		await resumedAgrees("robots: obey", null);
	}, 60_000);

	it("sitemaps: true (robots.txt read for its Sitemap lines)", async () => {
		// The demo site's sitemaps list more pages than max_pages.
		await resumedAgrees("sitemaps: true", "max_pages");
	}, 60_000);

	it("the resume's budget counts the charge: room for robots.txt, not for the page besides", async () => {
		const budget = 1 + 2 * FETCH - 1;
		const { service, runDir, resume } = await givenUp("robots: obey", `max_credits: ${budget}`);
		const resumed = await resume();
		expect(resumed.code, resumed.stderr).toBe(1);
		const all = service.emulator.ledger.totalCharged();
		expect(all).toBe(1 + FETCH);
		expect(readSummary(runDir)).toMatchObject({ stopped_reason: "budget_exhausted", credits: { used: all } });
		expect(readRecords(runDir)).toEqual([]);
	}, 60_000);
});

describe("summary.forecast.spent of a resumed session", () => {
	it("is what this session paid, not the earlier session's charge its records carry", async () => {
		const service = await useTestService({
			faults: [{ kind: "scraping_error", match: "/\\/product\\/1$/", times: 1, credits: 1 }],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = (paths: string[]) =>
			writeJob(
				dir,
				"forecast",
				[
					"name: forecast",
					"concurrency: 1",
					"defaults: {mode: request}",
					"retry: {attempts: 3, backoff_ms: 2000000000, max_backoff_ms: 2000000000}",
					"targets:",
					...paths.map((path) => `  - ${service.site.url}${path}`),
					"",
				].join("\n"),
			);
		// A first run teaches the job's store the host's costs: the next runs have a forecast.
		const learnt = await cli(["run", job(["/product/2", "/product/3"]), "--out", out, "--quiet"], service);
		expect(learnt.code, learnt.stderr).toBe(0);

		const second = job(["/product/1", "/product/2"]);
		const before = service.emulator.ledger.totalCharged();
		const first = spawnCli(["run", second, "--out", out, "--grace-period", "1500"], service.env);
		await until(() => service.emulator.ledger.totalCharged() === before + 1, "the charged failure of /product/1");
		first.child.kill("SIGINT");
		const ended = await first.done;
		expect(ended.code, ended.stderr).toBe(130);
		const jobDir = join(out, "forecast");
		const runDir = join(jobDir, readdirSync(jobDir).filter(isRunFolderName).sort().at(-1)!);
		expect(readSummary(runDir).credits.used).toBe(1);

		const resumedFrom = service.emulator.ledger.totalCharged();
		const resumed = await cli(["run", second, "--out", out, "--resume", basename(runDir), "--quiet"], service);
		expect(resumed.code, resumed.stderr).toBe(0);
		const paidNow = service.emulator.ledger.totalCharged() - resumedFrom;
		expect(paidNow).toBe(2 * FETCH);
		const summary = readSummary(runDir);
		// The record of /product/1 carries the first session's failure: the run's credits, not this session's.
		expect(summary).toMatchObject({
			complete: true,
			credits: { used: 1 + 2 * FETCH },
			session: { credits_used: paidNow },
			forecast: { spent: paidNow },
		});
	}, 60_000);
});

describe("a 402 that ends the run", () => {
	it("is not charged (docs/service.md): the run books its earlier charged failure and nothing for the 402, as the ledger does, and the resume agrees", async () => {
		// Room for one fetch's reservation: the failure is charged 1, its retry finds 1 credit left, 402.
		const service = await useTestService({
			credits: FETCH,
			faults: [{ kind: "scraping_error", match: "/\\/product\\/1$/", times: 1, credits: 1 }],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"refused",
			[
				"name: refused",
				"concurrency: 1",
				"defaults: {mode: request}",
				"retry: {attempts: 3, backoff_ms: 5, max_backoff_ms: 10}",
				"targets:",
				`  - ${service.site.url}/product/1`,
				`  - ${service.site.url}/product/2`,
				"",
			].join("\n"),
		);
		const first = await cli(["run", job, "--out", out, "--quiet"], service);
		expect(first.code, first.stderr).toBe(3);
		const answers = service.emulator.ledger.byEndpoint("realtime");
		expect(answers.map((entry) => [entry.status, entry.creditsCharged])).toEqual([
			[500, 1],
			[402, 0],
		]);
		const runDir = onlyRunDir(out, "refused");
		expect(readRecords(runDir)).toEqual([]);
		expect(readSummary(runDir)).toMatchObject({
			stopped_reason: "insufficient_credits",
			credits: { used: service.emulator.ledger.totalCharged() },
			session: { credits_used: 1 },
		});

		service.emulator.setCredits(100);
		const resumed = await cli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], service);
		expect(resumed.code, resumed.stderr).toBe(0);
		const all = service.emulator.ledger.totalCharged();
		expect(all).toBe(1 + 2 * FETCH);
		expect(readSummary(runDir)).toMatchObject({ complete: true, credits: { used: all } });
		expect(creditsOnRecords(runDir)).toBe(all);
	}, 60_000);
});
