import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Target } from "../../src/job/index.js";
import { OutputError } from "../../src/output/index.js";
import { createCreditBudget } from "../../src/run/flow/credit-budget.js";
import { serviceSitemapFetch } from "../../src/run/target/crawl-hook.js";
import type { FetchResult } from "../../src/run/target/fetch-target.js";

const seed = {
	id: "seed",
	url: "https://example.test/",
	params: { url: "https://example.test/" },
} as unknown as Target;

const okResult: FetchResult = {
	kind: "ok",
	body: Buffer.from("User-agent: *\nDisallow: /private\n"),
	contentType: "text/plain",
	httpStatus: 200,
	creditsUsed: 1,
	creditsRemaining: 99,
	modeUsed: "request",
	attempts: 1,
	taskId: null,
};

function hook() {
	const budget = createCreditBudget(100);
	const failures: OutputError[] = [];
	const stops: string[] = [];
	const fetch = serviceSitemapFetch({
		fetch: async () => okResult,
		reserve: async (worstCase) => budget.tryReserve(worstCase),
		budget,
		stop: (reason) => stops.push(reason),
		outputFailed: (error) => failures.push(error),
	});
	return { fetch, budget, failures, stops };
}

describe("a crawl's robots.txt or sitemap body", () => {
	it("is stored whole under its path, through one temporary file that does not stay", async () => {
		const dir = mkdtempSync(join(tmpdir(), "crawl-hook-"));
		const { fetch, failures, budget } = hook();
		const result = await fetch("https://example.test/robots.txt", seed, join(dir, "robots"));
		expect(result).toEqual({ kind: "stored", credits: 1 });
		expect(readdirSync(dir)).toEqual(["robots"]);
		expect(failures).toEqual([]);
		expect(budget.spent).toBe(1);
	});

	it("that cannot be written (a file where its folder should be) stops the run as an output failure and books its credits", async () => {
		const dir = mkdtempSync(join(tmpdir(), "crawl-hook-"));
		writeFileSync(join(dir, "sitemaps"), "a file in the way");
		const path = join(dir, "sitemaps", "0123456789abcdef01234567");
		const { fetch, failures, budget } = hook();
		const result = await fetch("https://example.test/robots.txt", seed, path);
		// Paid: the crawl books it (its journal line and summary.crawl.sitemap_credits), listing nothing.
		expect(result).toEqual({ kind: "missing", credits: 1 });
		expect(budget.spent).toBe(1);
		expect(budget.reserved).toBe(0);
		// The stop controller's output failure: output_failed, exit 5.
		expect(failures).toHaveLength(1);
		expect(failures[0]).toBeInstanceOf(OutputError);
		expect(failures[0]!.path).toBe(path);
		expect(failures[0]!.message).toMatch(/a file is in the way where a folder should be \(ENOTDIR\)/);
		expect(existsSync(path)).toBe(false);
	});
});
