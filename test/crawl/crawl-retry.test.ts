import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CREDIT_COSTS } from "../../src/common/index.js";
import { runJobFile } from "../../src/library/index.js";
import type { ResultRecord } from "../../src/output/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite, type TargetSite } from "../helpers/target-site.js";

/**
 * /start (0) → /a, /b (1); /a → /a1 (2); /b → /b1, /a, /start (2). /b answers 404 the first time it is
 * asked for, then its page; /b1 links /b2, which is beyond `max_depth: 2`.
 */
const LINKS: Record<string, string[]> = {
	"/start": ["/a", "/b"],
	"/a": ["/a1"],
	"/b": ["/b1", "/a", "/start"],
	"/b1": ["/b2"],
};

async function startFlakySite(): Promise<TargetSite> {
	let askedForB = 0;
	return startTargetSite((req, res) => {
		const path = req.url ?? "/";
		if (path === "/b" && ++askedForB === 1) return html(res, "not yet", 404);
		if (!(path in LINKS) && path !== "/a1") return html(res, "none", 404);
		html(res, (LINKS[path] ?? []).map((href) => `<a href="${href}">x</a>`).join(" "));
	});
}

function runFolders(out: string): string[] {
	const jobDir = join(out, "retry");
	return readdirSync(jobDir)
		.filter(isRunFolderName)
		.sort()
		.map((name) => join(jobDir, name));
}

function byPath(records: readonly ResultRecord[], origin: string): Map<string, ResultRecord> {
	return new Map(records.map((record) => [record.url.slice(origin.length), record]));
}

type Retry = (job: string, out: string, firstRun: string, env: NodeJS.ProcessEnv, origin: string) => Promise<void>;

async function retriesTheFailedPage(retry: Retry): Promise<void> {
	const service = await useTestService({ concurrency: 2 });
	const site = await startFlakySite();
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(
		dir,
		"retry",
		[
			"name: retry",
			"defaults: {mode: request}",
			"output: {content: none}",
			"crawl: {max_depth: 2, robots: ignore}",
			`targets: [${site.origin}/start]`,
			"",
		].join("\n"),
	);
	const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
	expect(first.code).toBe(1);
	const [firstRun] = runFolders(out);
	const before = byPath(readRecords(firstRun!), site.origin);
	expect([...before.keys()].sort()).toEqual(["/a", "/a1", "/b", "/start"]);
	expect(before.get("/b")).toMatchObject({ status: "failed", depth: 1, parent: before.get("/start")!.id });
	const askedBefore = site.requests.length;
	const ledgerBefore = service.emulator.ledger.entries.length;

	await retry(job, out, firstRun!, service.env, site.origin);

	const secondRun = runFolders(out).find((folder) => folder !== firstRun)!;
	const records = readRecords(secondRun);
	const after = byPath(records, site.origin);
	// Only the failed page, and what it newly links within max_depth: not /a or /start (ok already), not /b2.
	expect(site.requests.slice(askedBefore).map((request) => request.path)).toEqual(["/b", "/b1"]);
	expect([...after.keys()].sort()).toEqual(["/b", "/b1"]);
	// At its recorded depth and parent, with the id the first run gave it; its link one level below.
	expect(after.get("/b")).toMatchObject({
		id: before.get("/b")!.id,
		status: "ok",
		depth: 1,
		parent: before.get("/start")!.id,
	});
	expect(after.get("/b1")).toMatchObject({ status: "ok", depth: 2, parent: before.get("/b")!.id });
	// Credits counted: what the service charged for the retry's two fetches.
	const charged = service.emulator.ledger.entries
		.slice(ledgerBefore)
		.filter((entry) => entry.endpoint === "realtime")
		.reduce((sum, entry) => sum + entry.creditsCharged, 0);
	const summary = readSummary(secondRun);
	expect(charged).toBeGreaterThan(0);
	expect(summary.credits.used).toBe(charged);
	expect(summary).toMatchObject({ complete: true, crawl: { pages: 2 } });
}

describe("crawl × --retry-failed", () => {
	it("run --retry-failed fetches a failed discovered page again at its recorded depth and parent, and follows its new links", async () => {
		await retriesTheFailedPage(async (job, out, _firstRun, env) => {
			const result = await runCli(["run", job, "--out", out, "--quiet", "--retry-failed"], { env });
			expect(result.code, result.stderr).toBe(0);
		});
	});

	it("runJobFile(path, {retryFailed: true}) does the same, and so does {retryFailed: <run id>}", async () => {
		await retriesTheFailedPage(async (job, out, _firstRun, env) => {
			const summary = await runJobFile(job, { out, env, retryFailed: true });
			expect(summary.targets.by_status).toMatchObject({ ok: 2, failed: 0 });
		});
		await retriesTheFailedPage(async (job, out, firstRun, env) => {
			const runId = firstRun.slice(firstRun.lastIndexOf("/") + 1);
			await runJobFile(job, { out, env, retryFailed: runId });
		});
	});

	it("a --retry-failed crawl stopped by its budget and resumed: the failed page and its new link, each fetched and paid once", async () => {
		await retriesTheFailedPage(async (job, out, _firstRun, env, origin) => {
			// One page's credits (mode: request, residential): the failed page fits, the link it newly finds does not.
			const onePage = String(CREDIT_COSTS.requestResidential);
			const stopped = await runCli(["run", job, "--out", out, "--quiet", "--retry-failed", "--max-credits", onePage], {
				env,
			});
			expect(stopped.code, stopped.stderr).toBe(1);
			const retryRun = runFolders(out).at(-1)!;
			expect(readSummary(retryRun)).toMatchObject({ stopped_reason: "budget_exhausted", complete: false });
			expect(readRecords(retryRun).map((record) => record.url.slice(origin.length))).toEqual(["/b"]);
			// The resume keeps the retry's choice of targets (run.json) and its crawl: only /b1 is left.
			const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--max-credits", "10"], { env });
			expect(resumed.code, resumed.stderr).toBe(0);
		});
	});

	it("a crawl with no failed page: nothing to retry, nothing sent", async () => {
		const service = await useTestService({ concurrency: 2 });
		const site = await startTargetSite((_req, res) => html(res, "leaf"));
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"retry",
			`name: retry\ndefaults: {mode: request}\ncrawl: {robots: ignore}\ntargets: [${site.origin}/]\n`,
		);
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: service.env })).code).toBe(0);
		const asked = site.requests.length;
		const again = await runCli(["run", job, "--out", out, "--retry-failed"], { env: service.env });
		expect(again.code).toBe(0);
		expect(site.requests.length).toBe(asked);
		expect(runFolders(out)).toHaveLength(1);
	});
});
