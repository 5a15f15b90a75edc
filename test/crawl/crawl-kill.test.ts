import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { isRunFolderName, readRecords, readSummary, tempDir, waitForRecords, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { expectBfsPages, siteBfs } from "./site-bfs.js";

let service: TestService | undefined;
beforeAll(() => assertBuilt());
afterEach(async () => {
	await service?.close();
	service = undefined;
});

describe("crawl: exactly once across crashes", () => {
	it("SIGKILL mid-crawl, then --resume: every reachable page once, none asked for again after its record", async () => {
		service = await startTestService({ concurrency: 4, latency_ms: 15 });
		const site = service.site.url;
		const host = new URL(site).host;
		const seed = `${site}/graph/3`;
		const expected = await siteBfs({ seeds: [seed], maxDepth: 5, follows: (url) => url.host === host });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 5}",
				`targets: [${seed}]`,
				"",
			].join("\n"),
		);
		// Few URL keys in memory: most are spilled to disk, and rebuilt from the frontier by the resume.
		const env = { ...service.env, SCRAPEJOB_CRAWL_KEYS_IN_MEMORY: "16" };
		const first = spawnCli(["run", job, "--out", out, "--quiet"], env);
		await waitForRecords(join(out, "crawl"), 40);
		first.child.kill("SIGKILL");
		await first.done;
		const runDir = join(out, "crawl", readdirSync(join(out, "crawl")).find(isRunFolderName)!);
		const before = readRecords(runDir);
		expect(before.length).toBeGreaterThanOrEqual(40);
		expect(before.length).toBeLessThan(expected.pages.size - expected.optional.size);
		const askedBefore = service.emulator.ledger.requestCount;

		const second = spawnCli(["run", job, "--out", out, "--quiet", "--resume"], env);
		const ended = await second.done;
		expect(ended.stderr).not.toMatch(/internal error/);
		const records = readRecords(runDir);
		expectBfsPages(records, expected, expect);
		// Nothing with a record from the killed session was asked for again.
		const answered = new Set(before.map((record) => record.url));
		const askedAgain = service.emulator.ledger.entries
			.filter((entry) => entry.seq > askedBefore && entry.endpoint === "realtime" && answered.has(entry.url ?? ""))
			.map((entry) => entry.url);
		expect(askedAgain).toEqual([]);
		expect(readSummary(runDir)).toMatchObject({ crawl: { pages: records.length, stopped_by: null } });
	});
});
