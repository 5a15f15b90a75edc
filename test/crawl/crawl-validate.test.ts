import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";

async function validate(yaml: string) {
	const dir = tempDir();
	const job = writeJob(dir, "job", yaml);
	return runCli(["validate", job], { cwd: dir });
}

describe("validate: crawl and discovery sources", () => {
	it("a bad crawl: block is refused with exit 2, pointed at the key", async () => {
		const result = await validate(
			"targets: [https://example.com/]\ncrawl:\n  scope: planet\n  include: ['(']\n  max_pages: 0\n",
		);
		expect(result.code).toBe(2);
		expect(result.stderr).toMatch(/job\.yaml:3:\d+ crawl\.scope:/);
		expect(result.stderr).toMatch(
			/job\.yaml:4:\d+ crawl\.include\[0\]: regex "\(" does not compile: missing closing \)/,
		);
		expect(result.stderr).toMatch(/job\.yaml:5:\d+ crawl\.max_pages:/);
	});

	it("map: and search: sources are checked against the service's limits", async () => {
		const result = await validate(
			"sources:\n  - map: {domain: shop.example}\n  - search: {query: [], max_urls: 500}\n  - {column: x}\n",
		);
		expect(result.code).toBe(2);
		expect(result.stderr).toMatch(/sources\[0\]\.map\.max_urls: is required/);
		expect(result.stderr).toMatch(/sources\[1\]\.search\.query/);
		expect(result.stderr).toMatch(/sources\[1\]\.search\.max_urls/);
		// A file source still gets the file source's message.
		expect(result.stderr).toMatch(/sources\[2\]\.file: is required/);
	});

	it("a valid crawl job with map and search sources validates", async () => {
		const result = await validate(
			[
				"targets: [https://example.com/]",
				"crawl: {max_depth: 2, scope: domain, exclude: ['/login']}",
				"per_host_concurrency: 2",
				"sources:",
				"  - map: {domain: shop.example, max_urls: 500, url_pattern: /product/}",
				"  - search: {query: best laptops 2026, max_urls: 20}",
				"",
			].join("\n"),
		);
		expect(result.stderr).toBe("");
		expect(result.code).toBe(0);
	});

	it("--dry-run with crawl: says the page count cannot be known, lists the seeds and the credit bound; sends nothing", async () => {
		const dir = tempDir();
		const job = writeJob(
			dir,
			"job",
			[
				"name: c",
				"max_credits: 500",
				"defaults: {mode: browser}",
				"targets: [https://example.com/a, https://example.com/b]",
				"crawl: {max_pages: 40, max_depth: 2}",
				"sources:",
				"  - search: {query: laptops}",
				"",
			].join("\n"),
		);
		// No service in the environment: a dry run must not need one.
		const result = await runCli(["run", job, "--dry-run"], { cwd: dir });
		expect(result.code).toBe(0);
		expect(result.stdout).toContain("https://example.com/a");
		expect(result.stdout).toContain("https://example.com/b");
		expect(result.stdout).toMatch(/crawl: how many pages it finds cannot be known before it runs/);
		expect(result.stdout).toMatch(/The 2 targets above are its seeds; it fetches at most 40 pages/);
		// browser mode: 5 credits a page at worst (creditCostRange, docs/service.md, "Modes and costs").
		// Plus the seeds' one origin's robots.txt (robots: obey, the default), at the same price.
		expect(result.stdout).toContain(
			"at most 205 credits (40 × 5 per page worst case; plus its robots.txt (robots: obey) per origin at the same price: 1 seed origin × 1 × 5, and a robots.txt for each other origin its links reach; max_credits 500",
		);
		expect(result.stdout).toMatch(/1 map\/search source \(search\)/);

		// Seeds in request mode, a search source in browser mode: the pages it finds are priced as browser pages.
		const mixed = writeJob(
			dir,
			"mixed",
			[
				"name: m",
				"max_credits: 150",
				"defaults: {mode: request}",
				"targets: [https://example.com/a]",
				"crawl: {max_pages: 40, max_depth: 2}",
				"sources:",
				"  - search: {query: laptops}",
				"    mode: browser",
				"",
			].join("\n"),
		);
		const priced = await runCli(["run", mixed, "--dry-run"], { cwd: dir });
		expect(priced.code, priced.stderr).toBe(0);
		expect(priced.stdout).toMatch(/at most 205 credits \(40 × 5 per page worst case; plus its robots.txt/);
		expect(priced.stdout).toContain("The budget, max_credits 150, lies inside the estimate (2–205)");

		// sitemaps: true: each seed origin's robots.txt and up to 50 sitemap files; robots: ignore reads no other origin's.
		const sitemaps = writeJob(
			dir,
			"sitemaps",
			[
				"name: s",
				"defaults: {mode: request}",
				"targets: [https://example.com/a, https://example.com/b, http://example.org/]",
				"crawl: {max_pages: 40, max_depth: 2, sitemaps: true, robots: ignore}",
				"",
			].join("\n"),
		);
		const mapped = await runCli(["run", sitemaps, "--dry-run"], { cwd: dir });
		expect(mapped.code, mapped.stderr).toBe(0);
		expect(mapped.stdout).toContain(
			"at most 284 credits (40 × 2 per page worst case; plus its robots.txt and up to 50 sitemap files per origin at the same price: 2 seed origins × 51 × 2; no max_credits set)",
		);

		// robots: ignore without sitemaps: pages only.
		writeJob(dir, "sitemaps", readFileSync(sitemaps, "utf8").replace("sitemaps: true, ", ""));
		const pagesOnly = await runCli(["run", sitemaps, "--dry-run"], { cwd: dir });
		expect(pagesOnly.stdout).toContain("at most 80 credits (40 × 2 per page worst case; no max_credits set)");
	});
});
