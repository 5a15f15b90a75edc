import { readdirSync, readFileSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readScraperHeaders } from "../../src/api/scraper-response.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

/**
 * /start links to /moved/x (a 302 to /pages/x) and to /a; /a links to /pages/x. /pages/x links
 * `./y` (that is /pages/y against its final address; /moved/y against the address asked for).
 */
const PAGES: Record<string, string> = {
	"/start": '<a href="/moved/x">moved</a> <a href="/a">a</a>',
	"/a": '<a href="/pages/x">x again</a>',
	"/pages/x": '<a href="./y">y</a>',
	"/pages/y": "leaf",
};

let service: TestService | undefined;
let site: Server | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
	await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
	site = undefined;
});

/**
 * `holdA`: /a answers only once /pages/x was served (through /moved/x's redirect) and a moment more,
 * so /moved/x's answer (and with it its final address) is in before /a's link to /pages/x is followed.
 * Without it, /pages/x may be handed out at depth 2 while /moved/x is still in flight, and be fetched too.
 */
async function startRedirectSite(holdA = false): Promise<string> {
	let servedX: () => void = () => undefined;
	const xServed = new Promise<void>((resolve) => {
		servedX = resolve;
	});
	site = createServer((req, res) => {
		const path = req.url ?? "/";
		if (path === "/pages/x") servedX();
		if (holdA && path === "/a") {
			void xServed.then(() => setTimeout(() => answer(path, res), 200));
			return;
		}
		answer(path, res);
	});
	await new Promise<void>((resolve) => site!.listen(0, "127.0.0.1", resolve));
	return `http://127.0.0.1:${(site!.address() as AddressInfo).port}`;
}

function answer(path: string, res: ServerResponse): void {
	if (path.startsWith("/moved/")) {
		res.writeHead(302, { location: `/pages/${path.slice("/moved/".length)}`, "content-length": 0 }).end();
		return;
	}
	const body = PAGES[path];
	if (body === undefined) {
		res.writeHead(404, { "content-type": "text/html" }).end("no such page");
		return;
	}
	res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(`<html><body>${body}</body></html>`);
}

function runDirOf(out: string): string {
	const runs = readdirSync(join(out, "redirects")).filter(isRunFolderName);
	expect(runs).toHaveLength(1);
	return join(out, "redirects", runs[0]!);
}

function requestedUrls(svc: TestService): string[] {
	return svc.emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime").map((entry) => entry.url ?? "");
}

function job(origin: string, maxPages: number): string {
	return [
		"name: redirects",
		"defaults: {mode: request}",
		"output: {content: none}",
		"crawl:",
		"  max_depth: 3",
		// robots.txt is not what this test counts (robots.test.ts is).
		"  robots: ignore",
		`  max_pages: ${maxPages}`,
		"targets:",
		`  - ${origin}/start`,
		"",
	].join("\n");
}

describe("crawl: a redirect's final address", () => {
	it("counts as fetched (never paid again under its own address) and is the base its page's links resolve against", async () => {
		service = await startTestService({ concurrency: 4 });
		const origin = await startRedirectSite(true);
		const dir = tempDir();
		const out = join(dir, "out");
		const result = await runCli(["run", writeJob(dir, "redirects", job(origin, 100)), "--out", out, "--quiet"], {
			env: service.env,
		});
		expect(result.code).toBe(0);
		const requested = requestedUrls(service).map((url) => url.slice(origin.length));
		expect(requested.sort()).toEqual(["/a", "/moved/x", "/pages/y", "/start"]);
		const runDir = runDirOf(out);
		const records = readRecords(runDir);
		expect(records.map((record) => record.url.slice(origin.length)).sort()).toEqual([
			"/a",
			"/moved/x",
			"/pages/y",
			"/start",
		]);
		// /pages/y was found on the redirected page: its parent is /moved/x's record.
		const moved = records.find((record) => record.url.endsWith("/moved/x"))!;
		expect(records.find((record) => record.url.endsWith("/pages/y"))!.parent).toBe(moved.id);
		// The final address is journalled, so that a resume knows it too.
		expect(readFileSync(join(runDir, "frontier.jsonl"), "utf8")).toContain(`"u":"${origin}/pages/x","d":1`);
	});

	it("stays fetched across --resume: the journal says so", async () => {
		service = await startTestService({ concurrency: 1 });
		const origin = await startRedirectSite();
		const dir = tempDir();
		const out = join(dir, "out");
		// Three pages: /start, then /moved/x and /a (level 1); /pages/x (found from /a) and /pages/y are left.
		const first = await runCli(["run", writeJob(dir, "redirects", job(origin, 3)), "--out", out, "--quiet"], {
			env: service.env,
		});
		expect(first.code).toBe(1);
		const runDir = runDirOf(out);
		expect(readSummary(runDir).crawl?.stopped_by).toBe("max_pages");
		const resumed = await runCli(
			["run", writeJob(dir, "redirects", job(origin, 100)), "--out", out, "--resume", "--quiet"],
			{ env: service.env },
		);
		expect(resumed.code).toBe(0);
		const requested = requestedUrls(service).map((url) => url.slice(origin.length));
		expect(requested.sort()).toEqual(["/a", "/moved/x", "/pages/y", "/start"]);
		expect(readRecords(runDir)).toHaveLength(4);
	});
});

describe("X-Final-Url, read as hostile", () => {
	it("takes an absolute http(s) address and leaves anything else out", () => {
		expect(readScraperHeaders({ "x-final-url": "https://shop.example/p/1" }).finalUrl).toBe("https://shop.example/p/1");
		for (const bad of [
			"javascript:alert(1)",
			"/relative",
			"",
			"https://a b",
			`https://x.example/${"a".repeat(9000)}`,
		]) {
			expect(readScraperHeaders({ "x-final-url": bad }).finalUrl).toBeUndefined();
		}
	});
});
