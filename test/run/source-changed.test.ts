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

/** A five-URL list job, validated and surveyed: `edit` then changes its file before the run reads it. */
async function validatedThenEdited(withWitness: boolean, edit: (path: string) => void) {
	service = await startTestService({ concurrency: 2 });
	const dir = tempDir();
	const urls = Array.from({ length: 5 }, (_, index) => `${service!.site.url}/product/${index + 1}`);
	writeFileSync(join(dir, "urls.txt"), `${urls.join("\n")}\n`);
	const path = writeJob(dir, "shop", "name: shop\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n");
	const { job, counts } = await loadJob(path, { env: {}, cwd: dir });
	const surveyed = await surveyTargets(job, counts);
	expect(surveyed.witness).not.toBeNull();
	// Without the validation pass's witness (a library caller's own counts), rows are checked as read.
	const survey = withWitness ? surveyed : { ...surveyed, witness: null };
	edit(join(dir, "urls.txt"));
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
	const runDir = join(out, "shop", readdirSync(join(out, "shop")).filter(isRunFolderName)[0]!);
	return { result, runDir, fetched: service.emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime") };
}

describe("a source that changes under a run", () => {
	it("stops feeding at the bad row, finishes what runs, and says why in the summary", async () => {
		const { result, runDir } = await validatedThenEdited(false, (file) => appendFileSync(file, "not a url\n"));
		expect(result.stopReason).toBe("invalid_source");
		expect(readRecords(runDir)).toHaveLength(5);
		expect(readSummary(runDir)).toMatchObject({ complete: false, stopped_reason: "invalid_source" });
	});

	it("with the validation pass's witness, a file changed before the run reads it runs none of its rows: nothing unvalidated is fetched", async () => {
		const { result, runDir, fetched } = await validatedThenEdited(true, (file) =>
			appendFileSync(file, `${service!.site.url}/product/6\n`),
		);
		expect(result.stopReason).toBe("invalid_source");
		expect(readRecords(runDir)).toHaveLength(0);
		expect(fetched).toHaveLength(0);
		expect(readSummary(runDir)).toMatchObject({ complete: false, stopped_reason: "invalid_source" });
	});
});
