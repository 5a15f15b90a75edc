import { existsSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runJobFile } from "../../src/library/index.js";
import { journalLines, onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { canMountPrivately, runOnSmallDisk } from "../helpers/private-mount.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, BIN, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

/**
 * Credits charged for attempts of a target that got no record in their session (docs/behaviour.md, "Pay
 * once, never lose a record"): a charged failure whose retry a stop cut off, or a process killed while the
 * target waited for its retry. The resume counts them in `credits.used` and in the budget's spent, and the
 * target's record, once written, carries them: the run's figures equal what the service's ledger charged.
 */
beforeAll(() => assertBuilt());

/** A `request` fetch's price on the emulator; the first attempt of `/product/1` is a failure charged 1. */
const FETCH = 2;
const FAILURE = 1;

async function chargingService(): Promise<TestService> {
	return useTestService({
		concurrency: 2,
		faults: [{ kind: "scraping_error", match: "/\\/product\\/1$/", times: 1, credits: FAILURE }],
	});
}

/**
 * Two products, one at a time; a retry waits a random time below 2e9 ms (full jitter: any wait is as
 * likely: with 600,000 a short draw now and then sent the retry, and paid it, before the stop came).
 */
function jobFile(dir: string, site: string, extra = "", mode = "request"): string {
	return writeJob(
		dir,
		"unrecorded",
		[
			"name: unrecorded",
			"concurrency: 1",
			`defaults: {mode: ${mode}}`,
			"retry: {attempts: 3, backoff_ms: 2000000000, max_backoff_ms: 2000000000}",
			extra,
			"targets:",
			`  - ${site}/product/1`,
			`  - ${site}/product/2`,
			"",
		].join("\n"),
	);
}

/** The charged failure of `/product/1`, once the service has answered it. */
function chargedFailure(service: TestService) {
	return service.emulator.ledger
		.byEndpoint("realtime")
		.find((entry) => entry.status === 500 && entry.creditsCharged === FAILURE && entry.finishedAt !== null);
}

function creditsOnRecords(runDir: string): number {
	return readRecords(runDir).reduce((sum, record) => sum + record.credits_used, 0);
}

/** Stopped with SIGINT while `/product/1` waits for its retry (`spent` charged by then); the grace period ends the wait. */
async function interruptedRun(service: TestService, job: string, out: string, spent = FAILURE): Promise<string> {
	const first = spawnCli(["run", job, "--out", out, "--grace-period", "1500"], service.env);
	await until(() => chargedFailure(service) !== undefined, "the charged failure");
	first.child.kill("SIGINT");
	const ended = await first.done;
	expect(ended.code, ended.stderr).toBe(130);
	const runDir = onlyRunDir(out, "unrecorded");
	// The session saw the charge: it is in its own summary.
	expect(readSummary(runDir)).toMatchObject({ credits: { used: spent }, session: { credits_used: spent } });
	expect(service.emulator.ledger.totalCharged()).toBe(spent);
	return runDir;
}

describe("charges of attempts without a record, across a resume", () => {
	it("SIGINT while a charged failure waits for its retry: the resume's credits.used and the target's record carry the charge", async () => {
		const service = await chargingService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = jobFile(dir, service.site.url);
		const runDir = await interruptedRun(service, job, out);
		expect(readRecords(runDir)).toEqual([]);

		const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: service.env,
		});
		expect(resumed.code, resumed.stderr).toBe(0);
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBe(FAILURE + 2 * FETCH);
		expect(readSummary(runDir)).toMatchObject({
			complete: true,
			credits: { used: charged },
			// This session paid the two fetches; the failure was the first session's.
			session: { credits_used: 2 * FETCH },
		});
		expect(creditsOnRecords(runDir)).toBe(charged);
		const first = readRecords(runDir).find((record) => record.url.endsWith("/product/1"));
		expect(first?.credits_used).toBe(FAILURE + FETCH);

		// Resumed again (nothing left): the figures come from the records alone, and still agree.
		const again = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: service.env,
		});
		expect(again.code, again.stderr).toBe(0);
		expect(readSummary(runDir).credits.used).toBe(charged);
	}, 30_000);

	it("SIGKILL while a charged failure waits for its retry (no summary.json): the resume counts the charge", async () => {
		const service = await chargingService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = jobFile(dir, service.site.url);
		const first = spawnCli(["run", job, "--out", out], service.env);
		// Killed once the journal says the failure was charged: the target waits (days) for its retry.
		let runDir = "";
		await until(() => {
			runDir = onlyRunDir(out, "unrecorded");
			return journalLines(runDir).some((line) => line.e === "charged");
		}, "the journal's line of the charged failure");
		first.child.kill("SIGKILL");
		expect((await first.done).signal).toBe("SIGKILL");
		expect(existsSync(join(runDir, "summary.json"))).toBe(false);
		expect(service.emulator.ledger.totalCharged()).toBe(FAILURE);

		const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: service.env,
		});
		expect(resumed.code, resumed.stderr).toBe(0);
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBe(FAILURE + 2 * FETCH);
		expect(readSummary(runDir).credits.used).toBe(charged);
		expect(creditsOnRecords(runDir)).toBe(charged);
	}, 30_000);

	it("the budget counts the charge after a resume (--continue): max_credits is not passed across sessions", async () => {
		const service = await chargingService();
		const dir = tempDir();
		const out = join(dir, "out");
		// Room for the failure and one fetch, not for both fetches besides.
		const budget = FAILURE + 2 * FETCH - 1;
		const job = jobFile(dir, service.site.url, `max_credits: ${budget}`);
		const runDir = await interruptedRun(service, job, out);

		// `--continue` (the cron line) resumes the unfinished run, within the budget kept in its run.json.
		const resumed = await runCli(["run", job, "--out", out, "--continue", "--quiet"], { env: service.env });
		expect(resumed.code, resumed.stderr).toBe(1);
		expect(onlyRunDir(out, "unrecorded")).toBe(runDir);
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBe(FAILURE + FETCH);
		expect(charged).toBeLessThanOrEqual(budget);
		expect(readSummary(runDir)).toMatchObject({ stopped_reason: "budget_exhausted", credits: { used: charged } });
		// The hint's budget counts it too: --max-credits at or below what was spent is refused, naming it.
		const refused = await runCli(
			["run", job, "--out", out, "--resume", basename(runDir), "--max-credits", String(charged)],
			{ env: service.env },
		);
		expect(refused.code).toBe(2);
		expect(refused.stderr).toContain(`not above the ${charged} credits this run has already spent`);
	}, 30_000);

	it("mode: adaptive, SIGINT while the stronger rung's charged failure waits for its retry: the record written carries it, and the resume keeps it", async () => {
		// `/product/1` on datacenter addresses: a block page (charged 1); its climb's first attempt: a charged failure.
		const service = await useTestService({
			concurrency: 2,
			block_datacenter: ["/\\/product\\/1$/"],
			faults: [
				{ kind: "slow", match: "/\\/product\\/1$/", times: 1, delay_ms: 0 },
				{ kind: "scraping_error", match: "/\\/product\\/1$/", times: 1, credits: FAILURE },
			],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = jobFile(dir, service.site.url, "breaker: false", "adaptive");
		const runDir = await interruptedRun(service, job, out, 1 + FAILURE);
		// The block page's record is written (the stronger fetch came to no answer), with both charges.
		expect(readRecords(runDir)).toEqual([expect.objectContaining({ credits_used: 1 + FAILURE, useful: false })]);

		const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: service.env,
		});
		expect(resumed.code, resumed.stderr).toBe(0);
		const charged = service.emulator.ledger.totalCharged();
		expect(readSummary(runDir).credits.used).toBe(charged);
		expect(creditsOnRecords(runDir)).toBe(charged);
	}, 30_000);

	it("a task that fails charged, retried as a task: the record carries the failure's charge", async () => {
		const service = await chargingService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"unrecorded",
			[
				"name: unrecorded",
				"defaults: {mode: request, async: true}",
				"retry: {attempts: 3, backoff_ms: 5, max_backoff_ms: 10}",
				"targets:",
				`  - ${service.site.url}/product/1`,
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code, result.stderr).toBe(0);
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBe(FAILURE + FETCH);
		const runDir = onlyRunDir(out, "unrecorded");
		expect(readRecords(runDir)).toEqual([
			expect.objectContaining({ status: "ok", credits_used: charged, attempts: 2 }),
		]);
		expect(readSummary(runDir).credits.used).toBe(charged);
	}, 30_000);

	it("runJobFile resumes the same way: its summary counts the charge", async () => {
		const service = await chargingService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = jobFile(dir, service.site.url);
		const runDir = await interruptedRun(service, job, out);

		const result = await runJobFile(job, { out, resume: basename(runDir), env: service.env });
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBe(FAILURE + 2 * FETCH);
		expect(result.credits.used).toBe(charged);
		expect(creditsOnRecords(runDir)).toBe(charged);
	}, 30_000);

	it("a paid answer whose page read a stop cut off: in that session's credits.used, and the resume's budget counts it before the record reads it back", async () => {
		// One large page (9 MB) that the page pool takes a while to read: the stop comes while it reads.
		const rows = `<div class="row"><span>${"x".repeat(80)}</span></div>`.repeat(150_000);
		const site = await startTargetSite((_req, res) => html(res, `<html><body><h1>Big</h1>${rows}</body></html>`));
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"unrecorded",
			[
				"name: unrecorded",
				"defaults: {mode: request}",
				"output: {content: none}",
				"max_body_mb: 20",
				"page_timeout: 60s",
				"extract:",
				"  heading: h1",
				"  rows: {css: .row span, all: true}",
				`targets: [${site.origin}/big]`,
				"",
			].join("\n"),
		);
		const first = spawnCli(["run", job, "--out", out, "--grace-period", "1"], service.env);
		let runDir = "";
		await until(() => {
			runDir = onlyRunDir(out, "unrecorded");
			return journalLines(runDir).some((line) => line.e === "paid");
		}, "the paid answer's journal line");
		// The read has just begun (its answer is journalled first): it takes the page pool about a second.
		first.child.kill("SIGINT");
		const ended = await first.done;
		expect(ended.code, ended.stderr).toBe(130);
		expect(readRecords(runDir)).toEqual([]);
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBe(FETCH);
		expect(readSummary(runDir)).toMatchObject({ credits: { used: charged }, session: { credits_used: charged } });

		// What was paid is spent: a budget at it leaves the resume nothing to send, and is refused.
		const refused = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--max-credits", "2"], {
			env: service.env,
		});
		expect(refused.code).toBe(2);
		expect(refused.stderr).toContain(`not above the ${charged} credits this run has already spent`);
		const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: service.env,
		});
		expect(resumed.code, resumed.stderr).toBe(0);
		// Read back from paid/, not paid again: this session paid nothing.
		expect(service.emulator.ledger.totalCharged()).toBe(charged);
		expect(readSummary(runDir)).toMatchObject({ credits: { used: charged }, session: { credits_used: 0 } });
		expect(creditsOnRecords(runDir)).toBe(charged);
	}, 60_000);

	it("merge of shards stopped while a charged failure waited for its retry: the merged summary counts the charge", async () => {
		const service = await chargingService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = jobFile(dir, service.site.url);
		// Each shard in turn: the one holding /product/1 is stopped once its failure is charged; the other ends.
		const failures = () => (chargedFailure(service) === undefined ? 0 : 1);
		for (const shard of ["1/2", "2/2"]) {
			const before = failures();
			const run = spawnCli(["run", job, "--out", out, "--shard", shard, "--grace-period", "1500"], service.env);
			let ended = false;
			void run.done.then(() => {
				ended = true;
			});
			await until(() => ended || failures() > before, `shard ${shard} charged or ended`);
			if (!ended) run.child.kill("SIGINT");
			expect([0, 130]).toContain((await run.done).code);
		}
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBe(FAILURE);
		const jobDir = join(out, "unrecorded");
		const folders = readdirSync(jobDir)
			.filter((name) => existsSync(join(jobDir, name, "run.json")))
			.map((name) => join(jobDir, name));
		expect(folders).toHaveLength(2);
		const merged = await runCli(["merge", ...folders, "--out", join(dir, "merged")], { env: service.env });
		expect([0, 1]).toContain(merged.code);
		expect(readSummary(join(dir, "merged")).credits.used).toBe(charged);
	}, 60_000);
});

describe("mode: adaptive, a stronger rung's page that cannot be written", () => {
	it.skipIf(!canMountPrivately())(
		"fills the disk: exit 5, every charge in the summary, and the resume's figures equal the service's ledger",
		async () => {
			// Datacenter fetches of /big get a block page (charged); the next rung gets the real page, 2 MB.
			const service = await useTestService({ concurrency: 2, block_datacenter: ["/big"] });
			const page = `<html><body><h1>big</h1>${"<p>words</p>".repeat(170_000)}</body></html>`;
			const site = await startTargetSite((req, res) => {
				if (req.url === "/big") res.writeHead(200, { "content-type": "text/html" }).end(page);
				else html(res, "<p>small</p>");
			});
			const dir = tempDir();
			const job = writeJob(
				dir,
				"climb",
				`name: climb\nbreaker: false\ndefaults: {mode: adaptive}\noutput: {content: files}\ntargets:\n  - ${site.origin}/big\n`,
			);
			// The run's folder on a 512 KiB disk of its own.
			const { code, stderr, kept } = await runOnSmallDisk(dir, BIN, job, service.env);
			expect(code, stderr).toBe(5);
			expect(stderr).toMatch(/\(ENOSPC\)/);
			const runDir = onlyRunDir(kept, "climb");
			const paid = service.emulator.ledger.totalCharged();
			// The block page and the stronger fetch whose page could not be kept.
			expect(service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.creditsCharged > 0)).toHaveLength(
				2,
			);
			expect(readSummary(runDir).credits.used).toBe(paid);

			const resumed = await runCli(["run", job, "--out", kept, "--resume", basename(runDir), "--quiet"], {
				env: service.env,
			});
			expect(resumed.code, resumed.stderr).toBe(0);
			const charged = service.emulator.ledger.totalCharged();
			expect(readSummary(runDir).credits.used).toBe(charged);
			expect(creditsOnRecords(runDir)).toBe(charged);
		},
		60_000,
	);
});
