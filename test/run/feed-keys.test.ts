import { existsSync, readdirSync, writeFileSync } from "node:fs";
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

describe("the run's duplicate check spills to its folder", () => {
	it("with 8 keys in memory, every repeat of 200 URLs is still found on disk: each fetched once, the files removed", async () => {
		service = await startTestService({ concurrency: 4 });
		const dir = tempDir();
		const urls = Array.from({ length: 200 }, (_, index) => `${service!.site.url}/page/${index + 1}`);
		// Each URL again, in reverse: a repeat comes long after its first row, from an older spilled run.
		writeFileSync(join(dir, "urls.txt"), `${[...urls, ...[...urls].reverse()].join("\n")}\n`);
		const path = writeJob(dir, "shop", "name: shop\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n");
		const { job, counts } = await loadJob(path, { env: {}, cwd: dir });
		const survey = await surveyTargets(job, counts);
		expect(survey.total).toBe(200);
		expect(survey.duplicates).toBe(200);

		const out = join(dir, "out");
		const result = await runJob({
			job,
			survey,
			client: createScraperClient({ scraperKey: service.emulator.scraperKey, baseUrl: service.emulator.scraperUrl }),
			concurrency: 4,
			outRoot: out,
			signal: new AbortController().signal,
			secrets: [],
			feedKeysInMemory: 8,
		});
		expect(result.stopReason).toBeNull();
		const runDir = join(out, "shop", readdirSync(join(out, "shop")).filter(isRunFolderName)[0]!);
		const records = readRecords(runDir);
		expect(new Set(records.map((record) => record.url))).toEqual(new Set(urls));
		expect(records).toHaveLength(200);
		const fetched = service.emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime");
		expect(fetched).toHaveLength(200);
		expect(readSummary(runDir).complete).toBe(true);
		expect(existsSync(join(runDir, "target-keys"))).toBe(false);
	});
});
