import { appendFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createScraperClient } from "../../src/api/index.js";
import { loadJob } from "../../src/job/index.js";
import { runJob, surveyTargets } from "../../src/run/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

describe("a source that changes under a run", () => {
	it("stops feeding at the bad row, finishes what runs, and says why in the summary", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		const urls = Array.from({ length: 5 }, (_, index) => `${service!.site.url}/product/${index + 1}`);
		writeFileSync(join(dir, "urls.txt"), `${urls.join("\n")}\n`);
		const path = writeJob(dir, "shop", "name: shop\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n");
		const { job, counts } = await loadJob(path, { env: {}, cwd: dir });
		// Without the validation pass's witness (a library caller's own counts), rows are checked as read.
		const survey = { ...(await surveyTargets(job, counts)), witness: null };
		// Validated, then edited before the run reads it again.
		appendFileSync(join(dir, "urls.txt"), "not a url\n");

		const out = join(dir, "out");
		const result = await runJob({
			job,
			survey,
			client: createScraperClient({ scraperKey: service.emulator.scraperKey, baseUrl: service.emulator.scraperUrl }),
			concurrency: 2,
			outRoot: out,
			signal: new AbortController().signal,
			secrets: [],
		});
		expect(result.stopReason).toBe("invalid_source");
		const runDir = join(out, "shop", readdirSync(join(out, "shop")).filter(isRunFolderName)[0]!);
		expect(readRecords(runDir)).toHaveLength(5);
		expect(readSummary(runDir)).toMatchObject({ complete: false, stopped_reason: "invalid_source" });
	});

	it("with the validation pass's witness, a file changed before the run reads it runs none of its rows: nothing unvalidated is fetched", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		const urls = Array.from({ length: 5 }, (_, index) => `${service!.site.url}/product/${index + 1}`);
		writeFileSync(join(dir, "urls.txt"), `${urls.join("\n")}\n`);
		const path = writeJob(dir, "shop", "name: shop\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n");
		const { job, counts } = await loadJob(path, { env: {}, cwd: dir });
		const survey = await surveyTargets(job, counts);
		expect(survey.witness).not.toBeNull();
		appendFileSync(join(dir, "urls.txt"), `${service.site.url}/product/6\n`);

		const out = join(dir, "out");
		const result = await runJob({
			job,
			survey,
			client: createScraperClient({ scraperKey: service.emulator.scraperKey, baseUrl: service.emulator.scraperUrl }),
			concurrency: 2,
			outRoot: out,
			signal: new AbortController().signal,
			secrets: [],
		});
		expect(result.stopReason).toBe("invalid_source");
		const runDir = join(out, "shop", readdirSync(join(out, "shop")).filter(isRunFolderName)[0]!);
		expect(readRecords(runDir)).toHaveLength(0);
		expect(service.emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime")).toHaveLength(0);
	});
});
