import { describe, expect, it } from "vitest";
import { MAX_LOCAL_CONCURRENCY, resolveConcurrency } from "../../src/run/index.js";
import { readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService } from "../helpers/service.js";

describe("the concurrency policy", () => {
	it("takes the account's limit, a lower job number, clamps a higher one, and caps at 1024", () => {
		expect(resolveConcurrency({ accountLimit: 5, wanted: null })).toEqual({
			initial: 5,
			ceiling: 5,
			adaptive: false,
			warnings: [],
		});
		expect(resolveConcurrency({ accountLimit: 5, wanted: 3 })).toMatchObject({ initial: 3, ceiling: 3, warnings: [] });
		expect(resolveConcurrency({ accountLimit: 5, wanted: 50 }).warnings[0]).toMatch(
			/above the account's limit; using 5/,
		);
		const huge = resolveConcurrency({ accountLimit: 1e9, wanted: null });
		expect(huge).toMatchObject({ initial: MAX_LOCAL_CONCURRENCY, ceiling: 1024 });
		expect(huge.warnings[0]).toMatch(/local cap; at most 1024/);
		expect(resolveConcurrency({ accountLimit: null, wanted: null })).toMatchObject({
			initial: 1,
			ceiling: 1024,
			adaptive: true,
		});
		expect(resolveConcurrency({ accountLimit: null, wanted: 7 })).toMatchObject({
			initial: 1,
			ceiling: 7,
			adaptive: true,
		});
	});

	it("a scraper-key-only run reports the limit it learned, not its ceiling", async () => {
		const service = await startTestService({ concurrency: 5 });
		try {
			const dir = tempDir();
			const out = `${dir}/out`;
			const targets = Array.from({ length: 12 }, (_, index) => `  - ${service.site.url}/product/${index + 1}`);
			const job = writeJob(
				dir,
				"learn",
				["name: learn", "defaults:", "  mode: request", "targets:", ...targets, ""].join("\n"),
			);
			const env = {
				SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey,
				SCRAPEJOB_SCRAPER_URL: service.emulator.scraperUrl,
			};
			const result = await runCli(["run", job, "--out", out, "--quiet", "--json"], { env });
			expect(result.code).toBe(0);
			expect(JSON.parse(result.stdout).concurrency).toBe(5);
			const { readdirSync } = await import("node:fs");
			const runDir = `${out}/learn/${readdirSync(`${out}/learn`).find((name) => !name.startsWith("."))}`;
			expect(readSummary(runDir).concurrency).toBe(5);
		} finally {
			await service.close();
		}
	});
});
