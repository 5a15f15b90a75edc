import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { demoSearchResults } from "../../src/emulator/index.js";
import { onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

/** Every file of a run folder and what the command printed: none may hold the browser key. */
function expectNoKey(runDir: string, printed: string, key: string) {
	expect(printed).not.toContain(key);
	for (const name of readdirSync(runDir, { recursive: true }) as string[]) {
		const path = join(runDir, name);
		if (name.endsWith(".html") || !existsSync(path) || !name.includes(".")) continue;
		expect(readFileSync(path, "utf8"), name).not.toContain(key);
	}
}

const fastRetry = ["retry:", "  attempts: 3", "  backoff_ms: 5", "  max_backoff_ms: 20"].join("\n");

describe("browser_session: targets in the service's remote browser (real Chromium behind the emulator)", () => {
	it("fills a search form and loads a click-to-load list; evaluate values land in data.evaluate", async () => {
		const service = await useTestService({ browser_concurrency: 2 });
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				fastRetry,
				"browser_session:",
				"  os: unix",
				"  adblock: true",
				"targets:",
				`  - url: ${site}/search`,
				"    browser_session:",
				"      steps:",
				'        - fill: ["#q", "laptop"]',
				"        - press: Enter",
				'        - wait_for: "#done"',
				"        - evaluate: \"Array.from(document.querySelectorAll('.result'), (e) => e.textContent)\"",
				`  - url: ${site}/load-more`,
				"    browser_session:",
				"      steps:",
				'        - click: "#more"',
				'        - click: "#more"',
				'        - wait_for: "li.item:nth-child(15)"',
				"        - scroll: bottom",
				"        - evaluate: \"document.querySelectorAll('.item').length\"",
				`  - url: ${site}/product/3`,
				"    mode: request",
				"    browser_session: {}",
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.stderr).toBe("");
		expect(result.code).toBe(0);
		const runDir = onlyRunDir(out, "shop");
		const records = readRecords(runDir);
		const byPath = new Map(records.map((record) => [new URL(record.url).pathname, record]));
		const expected = demoSearchResults("laptop", 100);
		expect(expected.length).toBeGreaterThan(2);
		expect(byPath.get("/search")).toMatchObject({
			status: "ok",
			http_status: 200,
			mode_used: "browser_session",
			data: { evaluate: expected },
		});
		expect(byPath.get("/load-more")).toMatchObject({ status: "ok", data: { evaluate: 15 } });
		// The page file is the HTML after the steps: the script-rendered results are in it.
		const searchPage = readFileSync(join(runDir, byPath.get("/search")!.content_path!), "utf8");
		expect(searchPage).toContain(`<li class="result">${expected[0]}</li>`);
		expect(readFileSync(join(runDir, byPath.get("/product/3")!.content_path!), "utf8")).toContain("Product 3");

		const sessions = service.emulator.browserSessions();
		expect(sessions.started).toBe(3);
		expect(sessions.sessionOptions).toEqual([
			{ os: "unix", adblock: "true" },
			{ os: "unix", adblock: "true" },
			{ os: "unix", adblock: "true" },
		]);
		// Nothing went through the scraper, and the summary reports the browser credits the sessions used.
		expect(service.emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime")).toHaveLength(0);
		expect(readSummary(runDir).browser_credits_used).toBe(sessions.creditsUsed);
		// The terminal says them too: the scraper's credits alone read as a free run.
		expect(result.stdout).toMatch(
			new RegExp(`^credits +.*; browser sessions: ${sessions.creditsUsed} browser credits$`, "m"),
		);
		expectNoKey(runDir, result.stdout + result.stderr, service.emulator.browserKey);
	});

	it("never opens more sessions than the account's browser concurrency", async () => {
		const service = await useTestService({ browser_concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		// Twice the limit: the account's scraper limit (5) would let all 4 connect at once, and the 3rd
		// would be refused (429); 4 rather than more, as each session is a Chromium of its own to start.
		const targets = Array.from({ length: 4 }, (_, index) => `  - ${service.site.url}/product/${index + 1}`);
		const job = writeJob(
			dir,
			"many",
			["name: many", fastRetry, "browser_session: {os: windows}", "targets:", ...targets, ""].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(0);
		const sessions = service.emulator.browserSessions();
		expect(sessions.started).toBe(4);
		expect(sessions.peakActive).toBe(2);
		expect(sessions.refused[429]).toBeUndefined();
		expect(readRecords(onlyRunDir(out, "many")).every((record) => record.status === "ok")).toBe(true);
	});

	it("a crawl whose seed is a browser session follows the links of the page the session ended on", async () => {
		const service = await useTestService({ browser_concurrency: 2 });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"crawled",
			[
				"name: crawled",
				fastRetry,
				"targets:",
				`  - url: ${service.site.url}/graph/1`,
				"    browser_session: {steps: [{scroll: bottom}]}",
				"crawl: {max_depth: 1, max_pages: 10, robots: ignore}",
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code, result.stderr).toBe(0);
		const runDir = onlyRunDir(out, "crawled");
		// The seed and the pages it links (the demo graph's page 1 links several): not the seed alone.
		const records = readRecords(runDir);
		expect(records.length).toBeGreaterThan(1);
		expect(records.every((record) => record.status === "ok")).toBe(true);
		expect(readSummary(runDir).crawl?.pages).toBe(records.length);
	});

	it("retries a session the service cut short, and fails one whose steps cannot fit in the session's length", async () => {
		const service = await useTestService({
			browser_concurrency: 2,
			browser_cut_sessions: 1,
			browser_cut_after_ms: 400,
			// Long enough for a slow machine to start Chromium and connect (2–3 s here) and still wait 1.2 s.
			max_session_length_seconds: 10,
		});
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"cut",
			[
				"name: cut",
				fastRetry,
				"concurrency: 1",
				"targets:",
				`  - url: ${site}/product/1`,
				"    browser_session:",
				"      steps:",
				"        - wait: 1200",
				`  - url: ${site}/product/2`,
				"    browser_session:",
				"      steps:",
				"        - wait: 30000",
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(1);
		const records = new Map(
			readRecords(onlyRunDir(out, "cut")).map((record) => [new URL(record.url).pathname, record]),
		);
		// The first session was cut by the service mid-wait: the target is retried in a fresh session.
		expect(records.get("/product/1")).toMatchObject({ status: "ok", attempts: 2 });
		// A 30 s wait in a 10 s session: refused by the runner before the service would cut it, not retried.
		expect(records.get("/product/2")).toMatchObject({ status: "failed", error: "browser_session_length", attempts: 1 });
		expect(service.emulator.browserSessions().cut).toBe(1);
	});

	it("a refused browser key stops the run with exit 3 and never prints the key", async () => {
		const service = await useTestService({ browser_reported_key: "revoked-browser-key-0123456789" });
		const dir = tempDir();
		const out = join(dir, "out");
		const targets = Array.from({ length: 3 }, (_, index) => `  - ${service.site.url}/product/${index + 1}`);
		const job = writeJob(
			dir,
			"refused",
			["name: refused", fastRetry, "browser_session: {}", "targets:", ...targets, ""].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out], { env: service.env });
		expect(result.code).toBe(3);
		expect(result.stdout + result.stderr).toMatch(/401 Unauthorized/);
		const runDir = onlyRunDir(out, "refused");
		expect(readRecords(runDir)).toEqual([]);
		expect(readSummary(runDir).stopped_reason).toBe("unauthorized");
		expectNoKey(runDir, result.stdout + result.stderr, "revoked-browser-key-0123456789");
	});

	it("an account without browser access exits 3 before anything is sent", async () => {
		const service = await useTestService({ has_browser_access: false });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"noaccess",
			[
				"name: noaccess",
				"targets:",
				`  - url: ${service.site.url}/product/1`,
				"    browser_session: {os: apple}",
				`  - ${service.site.url}/product/2`,
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out], { env: service.env });
		expect(result.code).toBe(3);
		expect(result.stderr).toMatch(/no browser access/);
		expect(existsSync(join(out, "noaccess"))).toBe(false);
		expect(
			service.emulator.ledger.entries.filter((entry) => ["realtime", "task", "health"].includes(entry.endpoint)),
		).toHaveLength(0);
	});

	it("--dry-run leaves browser sessions out of the scraper credit estimate (they are paid in browser credits)", async () => {
		const dir = tempDir();
		const job = writeJob(
			dir,
			"mixed",
			[
				"targets:",
				"  - url: https://example.com/a",
				"    browser_session: {os: unix}",
				"  - url: https://example.com/b",
				"    browser_session: {}",
				"  - url: https://example.com/c",
				"    mode: request",
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--dry-run", "--json"]);
		expect(result.code).toBe(0);
		const [report] = JSON.parse(result.stdout) as Array<{ total: number; credits: { min: number; max: number } }>;
		expect(report).toMatchObject({
			total: 3,
			credits: { min: 2, max: 2 },
			by_mode: { browser_session: 2, request: 1, auto: 0 },
		});
		// validate names them as what they are, not `auto`.
		const validated = await runCli(["validate", job]);
		expect(validated.stdout).toMatch(/3 targets \(request 1, browser_session 2\)/);
	});

	it("validate reports bad steps at file:line:col", async () => {
		const dir = tempDir();
		const job = writeJob(
			dir,
			"bad",
			[
				"targets:",
				"  - url: https://example.com/",
				"    browser_session:",
				"      os: mac",
				"      steps:",
				'        - clik: "#a"',
				'        - evaluate: "return 1;"',
				"        - {click: a, wait: 5}",
				"",
			].join("\n"),
		);
		const result = await runCli(["validate", job]);
		expect(result.code).toBe(2);
		expect(result.stderr).toContain(
			`${job}:4:11 targets[0].browser_session.os: must be one of "windows", "apple", "unix" (got "mac")`,
		);
		expect(result.stderr).toContain(
			`${job}:6:11 targets[0].browser_session.steps[0].clik: unknown key; did you mean "click"?`,
		);
		expect(result.stderr).toMatch(
			/:7:\d+ targets\[0\]\.browser_session\.steps\[1\]\.evaluate: is not a JavaScript expression/,
		);
		expect(result.stderr).toMatch(
			/:8:\d+ targets\[0\]\.browser_session\.steps\[2\]: a step is exactly one of click, fill/,
		);
	});
});
