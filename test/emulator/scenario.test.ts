import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { UsageError } from "../../src/common/index.js";
import { loadScenarioFile, parseScenarioText, startEmulator } from "../../src/emulator/index.js";
import { scrapeGet, useDemoSite, useEmulator } from "./helpers.js";

let dir: string;
beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "scrapejob-scenario-"));
});
afterAll(async () => {
	await rm(dir, { recursive: true, force: true });
});

async function file(name: string, text: string): Promise<string> {
	const path = join(dir, name);
	await writeFile(path, text);
	return path;
}

describe("loadScenarioFile", () => {
	test("a YAML file with every kind of setting", async () => {
		const path = await file(
			"full.yaml",
			`seed: 42
keys:
  account: acc-1
  scraper: [scr-1, scr-2]
  team: team-1
credits: 500
concurrency: 3
costs: { request: 3 }
latency_ms: 5
timeout_ms: 1000
timeout_status: 408
task_ttl_ms: 2000
slot_expiry_ms: 3000
reset_seconds: 1
auto_upgrade: ["/spa/", "/\\\\.js$/i"]
has_scraper_access: true
has_browser_access: false
email_verified: false
balances_mb: { rp: 0 }
static_residential_ips: 5
faults:
  - kind: unavailable
    match: /flaky
    times: 2
  - kind: scraping_error
    message: Navigation timeout
    probability: 0.25
  - kind: slow
    delay_ms: 100
  - kind: rate_limit
    count: 3
  - kind: server_error
    on: account
    match: /public/settings
`,
		);
		const scenario = await loadScenarioFile(path);
		expect(scenario).toMatchObject({
			seed: 42,
			keys: { account: "acc-1", scraper: ["scr-1", "scr-2"], team: "team-1", browser: "emulator-browser-key" },
			credits: 500,
			costs: { request: 3, request_datacenter: 1, browser: 5, auto: 2, auto_upgraded: 6 },
			timeout_status: 408,
			balances_mb: { rp: 0, rpc: 133700.848432 },
		});
		expect(scenario.faults).toEqual([
			{ kind: "unavailable", match: "/flaky", times: 2, on: "scraper", probability: 1 },
			{ kind: "scraping_error", message: "Navigation timeout", probability: 0.25, on: "scraper" },
			{ kind: "slow", delay_ms: 100, on: "scraper", probability: 1 },
			{ kind: "rate_limit", count: 3, on: "scraper", probability: 1 },
			{ kind: "server_error", on: "account", match: "/public/settings", probability: 1 },
		]);
		const emulator = await useEmulator({ scenario });
		expect(emulator.scraperKeys).toEqual(["scr-1", "scr-2"]);
		expect(emulator.accountKey).toBe("acc-1");
		expect(emulator.credits()).toBe(500);
	});

	test("a JSON file, and an empty file meaning every default", async () => {
		const json = await loadScenarioFile(await file("s.json", '{"credits": 7, "faults": [{"kind": "dns_failure"}]}'));
		expect(json.credits).toBe(7);
		expect(json.faults[0]).toMatchObject({ kind: "dns_failure" });
		const empty = await loadScenarioFile(await file("empty.yaml", ""));
		expect(empty).toMatchObject({ credits: 10_000, concurrency: 5, timeout_ms: 30_000, reset_seconds: 60 });
	});

	test("problems are reported with file:line:col, all of them", async () => {
		const path = await file(
			"bad.yaml",
			`credits: -1
concurency: 5
faults:
  - kind: explode
  - kind: scraping_error
    message: Something else
  - kind: unavailable
    match: "/(unclosed/"
    tims: 2
`,
		);
		const error = await loadScenarioFile(path).catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(UsageError);
		const message = (error as Error).message;
		expect(message).toContain(`invalid scenario file ${path}`);
		expect(message).toMatch(/bad\.yaml:1:\d+ credits: /);
		expect(message).toMatch(/bad\.yaml:2:1 concurency: unknown setting "concurency"; did you mean concurrency\?/);
		expect(message).toMatch(/bad\.yaml:4:\d+ faults\[0\]\.kind: kind must be one of unavailable, bad_gateway/);
		expect(message).toMatch(/bad\.yaml:6:\d+ faults\[1\]\.message: /);
		expect(message).toMatch(/bad\.yaml:8:\d+ faults\[2\]\.match: invalid regular expression/);
		expect(message).toMatch(/bad\.yaml:9:5 faults\[2\]\.tims: unknown setting "tims"; did you mean times\?/);
	});

	test("cross-field rules: fault kinds that only happen while fetching cannot be on: account", async () => {
		const path = await file("cross.yaml", "faults:\n  - kind: unavailable\n  - kind: dns_failure\n    on: account\n");
		await expect(loadScenarioFile(path)).rejects.toThrow(
			/cross\.yaml:4:5 faults\[1\]\.on: kind dns_failure happens while fetching a target, so it only applies on: scraper/,
		);
	});

	test("YAML syntax errors, non-mapping files and missing files", async () => {
		await expect(loadScenarioFile(await file("syntax.yaml", "credits: [1, 2\n"))).rejects.toThrow(
			/invalid scenario file .*syntax\.yaml:\d+:\d+/,
		);
		await expect(loadScenarioFile(await file("list.yaml", "- 1\n- 2\n"))).rejects.toThrow(
			/top level must be a mapping/,
		);
		await expect(loadScenarioFile(join(dir, "nope.yaml"))).rejects.toThrow(/cannot read scenario file/);
	});

	test("timeout_status must be 202 or 408, reset_seconds a whole number, keys distinct", () => {
		expect(() => parseScenarioText("timeout_status: 200", "x.yaml")).toThrow(/timeout_status/);
		expect(() => parseScenarioText("reset_seconds: 0.5", "x.yaml")).toThrow(/reset_seconds/);
		expect(() => parseScenarioText("keys: { account: same, scraper: same }", "x.yaml")).toThrow(/must all differ/);
	});
});

describe("startEmulator scenario validation", () => {
	test("an invalid scenario object throws UsageError listing the problems", async () => {
		const error = await startEmulator({
			scenario: { concurrency: -1, faults: [{ kind: "slow", delay_ms: "x" as unknown as number }] },
		}).catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(UsageError);
		expect((error as Error).message).toMatch(/concurrency: /);
		expect((error as Error).message).toMatch(/faults\[0\]\.delay_ms: /);
	});

	test("a scraper key list: every key works", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { keys: { scraper: ["k-1", "k-2"] } } });
		expect((await scrapeGet(emulator, { url: `${site.url}/page/1` }, "k-2")).status).toBe(200);
		expect((await scrapeGet(emulator, { url: `${site.url}/page/1` }, "k-3")).status).toBe(401);
	});
});
