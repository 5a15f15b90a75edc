import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BrowserSessionError, runBrowserSession } from "../../src/browser/index.js";
import { type HostileCdp, startDroppingCdp, startSilentCdp } from "../helpers/hostile-cdp.js";
import { isRunFolderName, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { listenForTest } from "../helpers/loopback.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { BIN } from "../helpers/spawn-cli.js";

/**
 * Every await on the browser service is bounded (docs/guides/browser.md): a service that
 * accepts and stays silent, a command that never gets an answer, a step on a page that never settles,
 * and values no run can hold all end one target within `step_timeout`, never the run.
 */

let hostile: HostileCdp | undefined;
afterEach(async () => {
	await hostile?.close();
	hostile = undefined;
});

const PAGES: Record<string, string> = {
	"/plain": "<html><body><h1>plain</h1><button id=go>go</button></body></html>",
	// Loads, then its renderer never yields again: input and reads of the page can never be answered.
	"/busy": "<html><body><h1>busy</h1><script>setTimeout(() => { for (;;) {} }, 150)</script></body></html>",
};

async function startSite(): Promise<string> {
	const site = createServer((req, res) => {
		const page = PAGES[req.url ?? ""];
		res.writeHead(page ? 200 : 404, { "content-type": "text/html" }).end(page ?? "not here");
	});
	return listenForTest(site);
}

describe("runBrowserSession bounds every call to the service", () => {
	it("a CDP endpoint that accepts and never answers ends the session within the session's length", async () => {
		hostile = await startSilentCdp();
		const failure = await runBrowserSession({
			access: { endpointUrl: hostile.url, key: "browser-key", concurrency: 1, maxSessionSeconds: 4 },
			session: {},
			url: "http://127.0.0.1:9/",
			signal: new AbortController().signal,
			stepTimeoutMs: 600,
		}).catch((error: unknown) => error);
		expect(failure).toBeInstanceOf(BrowserSessionError);
		expect((failure as BrowserSessionError).kind).toBe("lost");
		expect(String((failure as Error).message)).not.toContain("browser-key");
	}, 15_000);

	it("a command the service never answers (a new page) fails the session as lost within step_timeout", async () => {
		const service = await useTestService({ browser_concurrency: 1 });
		hostile = await startDroppingCdp(service.emulator.browserUrl, ["Target.createTarget"]);
		const url = await startSite();
		const failure = await runBrowserSession({
			access: {
				endpointUrl: hostile.url,
				key: service.emulator.browserKey,
				concurrency: 1,
				maxSessionSeconds: 60,
			},
			session: {},
			url: `${url}/plain`,
			signal: new AbortController().signal,
			stepTimeoutMs: 1500,
		}).catch((error: unknown) => error);
		expect(hostile.dropped.get("Target.createTarget")).toBeGreaterThanOrEqual(1);
		expect(failure).toBeInstanceOf(BrowserSessionError);
		expect((failure as BrowserSessionError).kind).toBe("lost");
		expect((failure as Error).message).toMatch(/opening a page: no answer within 1500 ms/);
	}, 30_000);
});

describe("browser steps fail their target, never the run", () => {
	it("cyclic and oversized evaluate values, a missing selector and a busy page fail only their target; a 1e8 s session length is clamped", async () => {
		// 1e8 s would overflow every timer of the session (2^31 ms): clamped to a day, sessions work.
		const service = await useTestService({ browser_concurrency: 3, max_session_length_seconds: 1e8 });
		const url = await startSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const session = (id: string, path: string, steps: string[], stepTimeout = "10s") => [
			`  - id: ${id}`,
			`    url: ${url}${path}`,
			"    browser_session:",
			`      step_timeout: ${stepTimeout}`,
			"      steps:",
			...steps.map((step) => `        - ${step}`),
		];
		const job = writeJob(
			dir,
			"hostile",
			[
				"name: hostile",
				"retry: {attempts: 2, backoff_ms: 5, max_backoff_ms: 20}",
				"targets:",
				...session("cyclic", "/plain", ['evaluate: "(() => { const a = {n: 1}; a.self = a; return a; })()"']),
				...session("huge", "/plain", ["evaluate: \"'x'.repeat(1000001)\""]),
				...session("missing", "/plain", ['click: "#not-on-the-page"'], "2s"),
				...session("busy", "/busy", ["wait: 400", "press: Enter"], "2s"),
				...session("fine", "/plain", ['click: "#go"', 'evaluate: "document.title.length + 7"']),
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.stderr).toBe("");
		expect(result.code).toBe(1);
		const runs = readdirSync(join(out, "hostile")).filter(isRunFolderName);
		const records = new Map(readRecords(join(out, "hostile", runs[0]!)).map((record) => [record.id, record]));
		expect(records.size).toBe(5);
		expect(records.get("fine")).toMatchObject({ status: "ok", data: { evaluate: 7 } });
		expect(records.get("cyclic")).toMatchObject({ status: "failed", error: "browser_step_failed", attempts: 1 });
		expect(records.get("cyclic")?.message).toMatch(/step 1 \(evaluate\): its value is not JSON/);
		expect(records.get("huge")).toMatchObject({ status: "failed", error: "browser_step_failed" });
		expect(records.get("huge")?.message).toMatch(/1000003 characters of JSON, above the 1000000 kept/);
		expect(records.get("missing")).toMatchObject({ status: "failed", error: "browser_step_failed" });
		expect(records.get("missing")?.message).toMatch(/step 1 \(click\)/);
		expect(records.get("busy")).toMatchObject({ status: "failed", error: "browser_step_failed" });
		expect(records.get("busy")?.message).toMatch(/step 2 \(press\): no answer within 2000 ms/);
		for (const record of records.values()) expect(JSON.stringify(record).length).toBeLessThan(20_000);
	}, 90_000);
});

describe("an evaluate value far past the limit never reaches this process", () => {
	it("a 150 MB string is measured in the page: the target fails, and the run's peak memory stays far below it", async () => {
		const service = await useTestService({ browser_concurrency: 1 });
		const url = await startSite();
		const dir = tempDir();
		const job = writeJob(
			dir,
			"vast",
			[
				"name: vast",
				"retry: {attempts: 1}",
				"targets:",
				"  - id: vast",
				`    url: ${url}/plain`,
				"    browser_session:",
				"      steps:",
				"        - evaluate: \"'x'.repeat(150000000)\"",
				"",
			].join("\n"),
		);
		const out = join(dir, "out");
		// In a process of its own, so that its peak resident memory is the run's.
		const main = join(BIN, "..", "main.js");
		const script = `
			const { main } = await import(${JSON.stringify(main)});
			const code = await main(["run", ${JSON.stringify(job)}, "--out", ${JSON.stringify(out)}, "--quiet"], {
				stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd(), exitCode: 0,
				signal: new AbortController().signal,
			});
			console.log(JSON.stringify({ code, maxRssMb: process.resourceUsage().maxRSS / 1024 }));
			process.exit(0);
		`;
		const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
			env: { ...process.env, ...service.env },
			stdio: ["ignore", "pipe", "inherit"],
		});
		let stdout = "";
		child.stdout.on("data", (chunk: Buffer) => {
			stdout += chunk.toString();
		});
		await new Promise((resolve) => child.on("close", resolve));
		const printed = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as { code: number; maxRssMb: number };
		expect(printed.code).toBe(1);
		const [record] = readRecords(join(out, "vast", readdirSync(join(out, "vast")).filter(isRunFolderName)[0]!));
		expect(record).toMatchObject({ status: "failed", error: "browser_step_failed" });
		expect(record?.message).toMatch(/150000002 characters of JSON, above the 1000000 kept/);
		// The value came over whole before (peak ~860 MB): measured in the page, nothing of it crosses. The run
		// peaks at ~165 MB on a quiet machine, ~340 MB beside the whole suite (its collector starved of CPU);
		// the string alone is 150 MB and its copy as it crosses 300 MB more.
		expect(printed.maxRssMb).toBeLessThan(450);
	}, 90_000);
});
