import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createScraperClient } from "../../src/api/index.js";
import { loadJob } from "../../src/job/index.js";
import { runJob, surveyTargets } from "../../src/run/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, runPrintedCommand, spawnCli } from "../helpers/spawn-cli.js";
import { until } from "../helpers/until.js";

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
		// Without the validation pass's witness (a library caller's own counts): the feed's own check.
		const survey = { ...(await surveyTargets(job, counts)), witness: null };
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

describe("the feed reads the rows the validation pass vouched for", () => {
	it("a source file appended to during the run: the run stops reading it (exit 2), its printed hint finishes it, nothing is fetched twice", async () => {
		assertBuilt();
		service = await startTestService({ concurrency: 2, latency_ms: 15 });
		const dir = tempDir();
		const urls = Array.from({ length: 600 }, (_, index) => `${service!.site.url}/page/${index + 1}`);
		writeFileSync(join(dir, "urls.txt"), `${urls.join("\n")}\n`);
		writeJob(dir, "shop", "name: shop\nconcurrency: 2\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n");
		const run = spawnCli(["run", "shop.yaml", "--out", "out"], service.env, dir);
		const fetched = () => service!.emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime");
		await until(() => fetched().length >= 5, "the run's first fetches");
		// The first row again: not in the file the run validated, so the run must not take it as a new target.
		const added = `${service.site.url}/page/601`;
		appendFileSync(join(dir, "urls.txt"), `${urls[0]}\n${added}\n`);
		const stopped = await run.done;
		expect(stopped.code, stopped.stderr).toBe(2);
		const runDir = join(dir, "out", "shop", readdirSync(join(dir, "out", "shop")).filter(isRunFolderName)[0]!);
		expect(readSummary(runDir).stopped_reason).toBe("invalid_source");
		expect(readFileSync(join(runDir, "run.log"), "utf8")).toContain('urls.txt\\" changed after the run validated it');
		const before = fetched().map((entry) => entry.url);
		expect(before.length).toBeLessThan(600);
		expect(new Set(before).size).toBe(before.length);
		expect(readRecords(runDir)).toHaveLength(before.length);

		// The hint as printed: a plain --resume would refuse the changed file.
		const hint = /finish with `([^`]+)`/.exec(stopped.stdout)?.[1];
		expect(hint).toBe("npx scrapejob run shop.yaml --out out --resume --force");
		const resumed = await runPrintedCommand(hint!, service.env, dir).done;
		expect(resumed.code, resumed.stderr).toBe(0);
		const asked = fetched().map((entry) => entry.url);
		expect(new Set(asked).size).toBe(asked.length);
		expect(new Set(asked)).toEqual(new Set([...urls, added]));
		expect(readRecords(runDir)).toHaveLength(601);
	});
});
