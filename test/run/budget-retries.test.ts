import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { onlyRunDir, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

/**
 * `max_credits` holds when a service charges failed attempts (docs/behaviour.md, "Budget" and "Credits of
 * failed attempts"): a retry is a fetch, and it is not sent once it could take the run past its budget.
 */
describe("budget and charged retries", () => {
	it("sends no retry that could pass max_credits: the run stops with budget_exhausted, its credits within it", async () => {
		const service = await useTestService({
			faults: [{ kind: "scraping_error", match: "/\\/product\\/1$/", message: "Page crashed", credits: 2 }],
		});
		const dir = tempDir();
		const targets = [1, 2, 3].map((n) => `  - ${service.site.url}/product/${n}\n`).join("");
		const job = writeJob(
			dir,
			"budget-retries",
			`name: budget-retries\nconcurrency: 1\nmax_credits: 5\nbreaker: false\ndefaults: {mode: request}\nretry: {attempts: 5, backoff_ms: 5, max_backoff_ms: 10}\ntargets:\n${targets}`,
		);
		const out = join(dir, "out");
		const run = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(run.code, run.stderr).toBe(1);
		const charged = () => service.emulator.ledger.totalCharged();
		// Each attempt at product 1 is charged 2: two fit in 5 credits, a third could not.
		expect(charged()).toBe(4);
		const runDir = onlyRunDir(out, "budget-retries");
		const summary = readSummary(runDir);
		expect(summary.stopped_reason).toBe("budget_exhausted");
		expect(summary.credits.used).toBe(4);
		expect(summary.credits.used).toBeLessThanOrEqual(5);
	}, 30_000);
});

describe("budget and a crawl's charged robots.txt retries", () => {
	it("a robots.txt fetch that fails charged is retried only within max_credits, as a target's", async () => {
		const service = await useTestService({
			faults: [{ kind: "scraping_error", match: "/robots.txt", message: "Page crashed", credits: 2 }],
		});
		const dir = tempDir();
		const job = writeJob(
			dir,
			"robots-retries",
			`name: robots-retries\nconcurrency: 1\nmax_credits: 5\nbreaker: false\ndefaults: {mode: request}\nretry: {attempts: 5, backoff_ms: 5, max_backoff_ms: 10}\ncrawl: {max_depth: 1, max_pages: 10, robots: obey}\ntargets:\n  - ${service.site.url}/graph/1\n`,
		);
		const out = join(dir, "out");
		const run = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(run.code, run.stderr).toBe(1);
		const charged = service.emulator.ledger.totalCharged();
		expect(charged).toBeLessThanOrEqual(5);
		const summary = readSummary(onlyRunDir(out, "robots-retries"));
		expect(summary.stopped_reason).toBe("budget_exhausted");
		expect(summary.credits.used).toBe(charged);
	}, 30_000);
});
