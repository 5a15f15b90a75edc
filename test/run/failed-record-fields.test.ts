import { describe, expect, it } from "vitest";
import { runJobFile } from "../../src/index.js";
import { readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";

/**
 * A failed record that reached the service says, as an ok record does, the mode the service reports it
 * fetched with and the balance its answer reported (docs/reference/outputs.md, "Records"), whatever
 * the failure: a charged scraping error (realtime or a task's), or the target's own 500.
 */
describe("failed records", () => {
	it("fill mode_used and credits_remaining from the failing answer, for a scraping error and a target's 500", async () => {
		const service = await useTestService({
			faults: [{ kind: "scraping_error", match: "/\\/product\\//", message: "Page crashed", credits: 3 }],
		});
		const start = service.emulator.credits();
		const dir = tempDir();
		const job = writeJob(
			dir,
			"failures",
			[
				"name: failures",
				"concurrency: 1",
				"retry: {attempts: 2, backoff_ms: 5, max_backoff_ms: 10}",
				"targets:",
				`  - {url: "${service.site.url}/product/1", mode: request}`,
				`  - {url: "${service.site.url}/status/500", mode: request}`,
				`  - {url: "${service.site.url}/product/2", mode: auto}`,
				`  - {url: "${service.site.url}/product/3", mode: request, async: true}`,
			].join("\n"),
		);
		const summary = await runJobFile(job, { env: service.env, out: dir });
		const records = readRecords(summary.run_dir);
		const fields = records.map((record) => [
			record.url.replace(service.site.url, ""),
			record.error,
			record.mode_used,
			record.credits_used,
			record.credits_remaining,
		]);
		expect(fields).toEqual([
			// Charged and retried: the balance the second attempt's answer reported.
			["/product/1", "page_crashed", "request", 6, start - 6],
			["/status/500", "target_http_500", "request", 0, start - 6],
			// `auto` named no mode: the service's answer says which it used.
			["/product/2", "page_crashed", expect.stringMatching(/^auto/), 6, start - 12],
			// A task that failed: its poll answer reports the balance.
			["/product/3", "page_crashed", "request", 6, start - 18],
		]);
		expect(service.emulator.credits()).toBe(start - 18);
	}, 30_000);
});
