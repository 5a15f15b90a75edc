import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createScraperClient } from "../../src/api/index.js";
import { loadJob } from "../../src/job/index.js";
import { runJob, surveyTargets } from "../../src/run/index.js";
import { isRunFolderName, tempDir, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

describe("a run that ends on an error no stop handles", () => {
	it("keeps its run.log's last lines and says the error there (they were held in its write batch)", async () => {
		service = await startTestService({ concurrency: 2 });
		const dir = tempDir();
		const path = writeJob(
			dir,
			"shop",
			`name: shop\ndefaults:\n  mode: request\ntargets:\n  - ${service.site.url}/page/1\n`,
		);
		const { job, counts } = await loadJob(path, { env: {}, cwd: dir });
		const out = join(dir, "out");
		const run = runJob({
			job,
			survey: await surveyTargets(job, counts),
			client: createScraperClient({ scraperKey: service.emulator.scraperKey, baseUrl: service.emulator.scraperUrl }),
			concurrency: 2,
			outRoot: out,
			signal: new AbortController().signal,
			secrets: [],
			// The caller's last words fail as the runner registers its own: after run.log has its first lines.
			lastWords: {
				add() {
					throw new Error("the caller's hook failed");
				},
				say: () => [],
			},
		});
		await expect(run).rejects.toThrow("the caller's hook failed");
		const runDir = join(out, "shop", readdirSync(join(out, "shop")).filter(isRunFolderName)[0]!);
		const text = readFileSync(join(runDir, "run.log"), "utf8");
		expect(text, "run.log lost the lines its write batch held").not.toBe("");
		const lines = text
			.trim()
			.split("\n")
			.map((line) => JSON.parse(line));
		expect(lines[0]).toMatchObject({ event: "run_start" });
		expect(lines.at(-1)).toMatchObject({ event: "run_failed", error: "the caller's hook failed" });
	});
});
