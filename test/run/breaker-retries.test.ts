import { readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { until } from "../helpers/until.js";

/**
 * Retries are charged fetches too (docs/behaviour.md, "Breakers" and "Credits of failed attempts"): every
 * product page of the demo site fails with a scraping error the service charges 3 credits for, and the job
 * retries each target up to 5 times. What stops spending must count each charged attempt, not each record.
 */
const TARGETS = 30;
const CREDITS = 3;

function failingService(): Promise<TestService> {
	return useTestService({
		faults: [{ kind: "scraping_error", match: "/\\/product\\//", message: "Page crashed", credits: CREDITS }],
	});
}

function jobFile(service: TestService, breaker: string): { dir: string; job: string; out: string } {
	const dir = tempDir();
	const targets = Array.from({ length: TARGETS }, (_, i) => `  - ${service.site.url}/product/${i + 1}\n`).join("");
	const job = writeJob(
		dir,
		"retries",
		`name: retries\nconcurrency: 1\ndefaults: {mode: request}\nretry: {attempts: 5, backoff_ms: 5, max_backoff_ms: 10}\nbreaker: ${breaker}\ntargets:\n${targets}`,
	);
	return { dir, job, out: join(dir, "out") };
}

const charged = (service: TestService) =>
	service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.creditsCharged > 0);

function runDirOf(out: string): string {
	const runs = join(out, "retries");
	return join(runs, readdirSync(runs).find((name) => /^\d/.test(name))!);
}

describe("charged retries", () => {
	it("open the breaker after `trip` charged fetches, retries included; the probe after the cool-down is one fetch", async () => {
		const service = await failingService();
		const { job, out } = jobFile(service, "{cool_down: 1s}");
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code, first.stderr).toBe(6);
		// 8 of the last 8 charged fetches went wrong: the first target's 5 attempts and 3 of the second's,
		// whose next retry is not sent.
		expect(charged(service)).toHaveLength(8);
		const runDir = runDirOf(out);
		const summary = readSummary(runDir);
		expect(summary.credits.used).toBe(8 * CREDITS);
		// The balance the failed answers reported (no answer succeeded): what the account has left.
		expect(summary.credits.remaining).toBe(service.emulator.credits());
		expect(summary.breakers).toHaveLength(1);
		const breaker = summary.breakers![0]!;
		expect(breaker.reason).toMatch(/^8 of the last 8 charged fetches were useless or failed/);
		const records = readRecords(runDir);
		expect(records.map((record) => [record.status, record.attempts, record.credits_used])).toEqual([
			["failed", 5, 5 * CREDITS],
			["failed", 3, 3 * CREDITS],
		]);

		// The cool-down over, the domain still failing: one probe, one charged attempt, and it opens again.
		const opened = Date.parse(breaker.opened_at);
		await until(() => Date.now() - opened > 1100, "the cool-down to pass");
		const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: service.env,
		});
		expect(resumed.code, resumed.stderr).toBe(6);
		expect(charged(service)).toHaveLength(9);
		expect(readSummary(runDir).credits.used).toBe(9 * CREDITS);
	}, 30_000);

	it("stop the run after 20 charged fetches in a row that failed (`paid_failures`), retries included", async () => {
		const service = await failingService();
		const { job, out } = jobFile(service, "false");
		const run = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(run.code, run.stderr).toBe(1);
		expect(run.stderr).toContain("20 fetches in a row were charged and failed");
		expect(charged(service)).toHaveLength(20);
		const summary = readSummary(runDirOf(out));
		expect(summary.stopped_reason).toBe("paid_failures");
		expect(summary.credits.used).toBe(20 * CREDITS);
	}, 30_000);
});
