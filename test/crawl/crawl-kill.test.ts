import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { isRunFolderName, readRecords, readSummary, tempDir, waitForRecords, writeJob } from "../helpers/job-files.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { startTargetSite } from "../helpers/target-site.js";
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

describe("a paid answer waiting for its page to be read", () => {
	it("SIGKILL while the page pool reads paid pages, then --resume: those answers are read back from paid/, never paid again", async () => {
		// Large pages with many links: each takes the page pool a while to read, so paid answers wait there.
		const links = (page: number) =>
			Array.from({ length: 6 }, (_, index) => `<a href="/big/${page * 6 + index + 1}">next</a>`).join("");
		const filler = `<div class="row"><span>${"x".repeat(80)}</span></div>`.repeat(40_000);
		const site = await startTargetSite((req, res) => {
			const page = Number(/\/big\/(\d+)$/.exec(req.url ?? "")?.[1] ?? 0);
			res
				.writeHead(200, { "content-type": "text/html" })
				.end(
					`<html><head><title>page ${page}</title></head><body><h1>Page ${page}</h1>${links(page)}${filler}</body></html>`,
				);
		});
		service = await startTestService({ concurrency: 4 });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"output: {content: none}",
				"max_body_mb: 20",
				"crawl: {max_depth: 2, max_pages: 30, robots: ignore}",
				"extract:",
				"  heading: h1",
				"  rows: {css: .row span, all: true}",
				`targets: [${site.origin}/big/0]`,
				"",
			].join("\n"),
		);
		const first = spawnCli(["run", job, "--out", out, "--quiet"], service.env);
		const runDir = await waitForRunDir(join(out, "crawl"));
		// The kill lands while at least one paid answer has no record yet.
		const pending = await waitFor(() => {
			const waiting = paidWithoutRecord(runDir);
			return waiting.length > 0 ? waiting : null;
		});
		first.child.kill("SIGKILL");
		await first.done;
		const stillWaiting = paidWithoutRecord(runDir);
		expect(stillWaiting.length, `paid answers without a record at the kill (first seen: ${pending})`).toBeGreaterThan(
			0,
		);
		const askedBefore = service.emulator.ledger.requestCount;

		const second = await spawnCli(["run", job, "--out", out, "--quiet", "--resume"], service.env).done;
		expect(second.stderr).not.toMatch(/internal error/);
		const records = readRecords(runDir);
		const byId = new Map(records.map((record) => [record.id, record]));
		for (const id of stillWaiting) {
			const record = byId.get(id)!;
			expect(record.status).toBe("ok");
			expect((record.data as { heading: string }).heading).toMatch(/^Page \d+$/);
			const asked = service.emulator.ledger.entries.filter(
				(entry) => entry.seq > askedBefore && entry.endpoint === "realtime" && entry.url === record.url,
			);
			expect(asked, record.url).toEqual([]);
		}
		// Every credit charged is on a record: nothing paid twice, nothing paid unrecorded.
		const recorded = records.reduce((sum, record) => sum + record.credits_used, 0);
		expect(recorded).toBe(service.emulator.ledger.totalCharged());
		expect(readdirSync(join(runDir, "paid"))).toEqual([]);
	}, 60_000);
});

/** Ids the journal says were paid and kept, that results.jsonl has no record of. */
function paidWithoutRecord(runDir: string): string[] {
	const journal = existsSync(join(runDir, "journal.jsonl")) ? readFileSync(join(runDir, "journal.jsonl"), "utf8") : "";
	const paid = [...journal.matchAll(/"e":"paid","answer":\{"id":"([^"]+)"/g)].map((match) => match[1]!);
	const done = new Set(existsSync(join(runDir, "results.jsonl")) ? readRecords(runDir).map((record) => record.id) : []);
	return paid.filter((id) => !done.has(id));
}

async function waitForRunDir(jobDir: string): Promise<string> {
	return await waitFor(() => {
		const name = existsSync(jobDir) ? readdirSync(jobDir).find(isRunFolderName) : undefined;
		return name ? join(jobDir, name) : null;
	});
}

/** Polls a condition on the files a child process writes (the file system has no event for "a line appeared"). */
async function waitFor<T>(check: () => T | null, timeoutMs = 30_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		const value = check();
		if (value !== null) return value;
		await new Promise((resolve) => setTimeout(resolve, 5));
	}
	throw new Error(`not within ${timeoutMs} ms`);
}
