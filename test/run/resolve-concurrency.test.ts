import { describe, expect, it } from "vitest";
import { runJobFile } from "../../src/library/index.js";
import { MAX_LOCAL_CONCURRENCY, resolveConcurrency } from "../../src/run/index.js";
import { isRunFolderName, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
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
			const runDir = `${out}/learn/${readdirSync(`${out}/learn`).find(isRunFolderName)}`;
			expect(readSummary(runDir).concurrency).toBe(5);
		} finally {
			await service.close();
		}
	});
});

describe("learned concurrency follows the service's limit down", () => {
	it("X-RateLimit-Limit going from 6 to 2 mid-run: the runner shrinks to 2 in flight and reports 2", async () => {
		const service = await startTestService({ concurrency: 6, latency_ms: 25, reset_seconds: 1 });
		try {
			const dir = tempDir();
			const targets = Array.from({ length: 60 }, (_, index) => `  - ${service.site.url}/product/${index + 1}`);
			const job = writeJob(
				dir,
				"learn",
				["name: learn", "defaults:", "  mode: request", "targets:", ...targets, ""].join("\n"),
			);
			let grownTo = 0;
			let shrunkAt: number | null = null;
			let afterShrink = 0;
			const summary = await runJobFile(job, {
				out: `${dir}/out`,
				env: { SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey, SCRAPEJOB_SCRAPER_URL: service.emulator.scraperUrl },
				onProgress: (snapshot) => {
					if (shrunkAt === null) {
						grownTo = Math.max(grownTo, snapshot.inFlight);
						if (snapshot.done >= 20) {
							service.emulator.setConcurrency(2);
							shrunkAt = snapshot.done;
						}
						// Fetches already on the wire finish; from the answers after them on, at most 2 are in flight.
					} else if (snapshot.done >= shrunkAt + 10) afterShrink = Math.max(afterShrink, snapshot.inFlight);
				},
			});
			expect(summary.complete).toBe(true);
			expect(grownTo).toBe(6);
			expect(afterShrink).toBeGreaterThan(0);
			expect(afterShrink).toBeLessThanOrEqual(2);
			expect(summary.concurrency).toBe(2);
		} finally {
			await service.close();
		}
	}, 30_000);
});
