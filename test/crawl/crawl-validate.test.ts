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
		expect(result.stderr).toMatch(/job\.yaml:4:\d+ crawl\.include\[0\]: not a valid regular expression/);
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
});
