import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runJobFile } from "../../src/library/index.js";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite, type TargetSite } from "../helpers/target-site.js";

const PASSWORD = "S3cretPassw0rd";

/** /links names each page in several spellings RFC 3986 §6.2.2 makes one; every page links back. */
async function startSpellingSite(): Promise<TargetSite> {
	return startTargetSite((req, res) => {
		const path = req.url ?? "/";
		if (path === "/links") {
			html(
				res,
				[
					"/v/~user",
					"/v/%7Euser",
					"/v/%7euser",
					"/v/A",
					"/v/%41",
					"/q?a=1",
					"q?a=%31",
					"/v/a%2fb",
					"/v/a%2Fb",
					"relative",
				]
					.map((href) => `<a href="${href}">x</a>`)
					.join(" "),
			);
			return;
		}
		html(res, '<a href="/links">back</a> <a href="/v/%7Euser">again</a>');
	});
}

function crawlYaml(seed: string): string {
	return [
		"name: ids",
		"defaults: {mode: request}",
		"output: {content: files, formats: [jsonl, csv]}",
		// robots.txt is not what this test counts (robots.test.ts is).
		"crawl: {max_depth: 2, max_pages: 100, robots: ignore}",
		`targets: [${JSON.stringify(seed)}]`,
		"",
	].join("\n");
}

function runDirs(jobDir: string): string[] {
	return readdirSync(jobDir)
		.map((name) => join(jobDir, name))
		.filter((dir) => existsSync(join(dir, "run.json")));
}

/** Every file under `dir`, recursively (the job folder: runs, history.sqlite, report, logs). */
function filesUnder(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		return statSync(path).isDirectory() ? filesUnder(path) : [path];
	});
}

describe("crawl: URL identity (RFC 3986 §6.2.2) and credentials", () => {
	it("fetches and pays each page once whatever its spelling; a seed's password reaches no file, but the fetches", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startSpellingSite();
		const seed = site.origin.replace("http://", `http://alice:${PASSWORD}@`);
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "ids", crawlYaml(`${seed}/links`));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.stderr).not.toContain(PASSWORD);
		const [runDir] = runDirs(join(out, "ids"));
		const records = readRecords(runDir!);
		const paths = records.map((record) => new URL(record.url).pathname + new URL(record.url).search).sort();
		expect(paths).toEqual(["/links", "/q?a=1", "/relative", "/v/A", "/v/a%2Fb", "/v/~user"].sort());
		// The site was asked once per page (the seed's back-links and respellings never again).
		const asked = site.requests.map((request) => request.path);
		expect(asked.filter((path) => /~user|%7Euser/i.test(path))).toHaveLength(1);
		expect(asked.filter((path) => path === "/v/A" || path === "/v/%41")).toHaveLength(1);
		expect(asked.filter((path) => path.startsWith("/q"))).toHaveLength(1);
		expect(asked).toHaveLength(records.length);
		// The service was asked for every page on the seed's origin with the seed's credentials.
		const sent = service.emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime");
		expect(sent).toHaveLength(records.length);
		expect(sent.every((entry) => new URL(entry.url!).password === PASSWORD)).toBe(true);
		// No file of the job's folder holds the password: records, frontier, run.log, report, history.
		expect(existsSync(join(runDir!, "frontier.jsonl"))).toBe(true);
		for (const file of filesUnder(join(out, "ids"))) {
			expect(readFileSync(file).includes(PASSWORD), file).toBe(false);
		}
		expect(readSummary(runDir!).crawl?.pages).toBe(records.length);
	});

	it("runJobFile keeps the same promises", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startSpellingSite();
		const seed = site.origin.replace("http://", `http://alice:${PASSWORD}@`);
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "ids", crawlYaml(`${seed}/links`));
		const summary = await runJobFile(job, { out, env: service.env });
		expect(summary.crawl?.pages).toBe(6);
		expect(site.requests).toHaveLength(6);
		for (const file of filesUnder(join(out, "ids"))) {
			expect(readFileSync(file).includes(PASSWORD), file).toBe(false);
		}
	});
});
