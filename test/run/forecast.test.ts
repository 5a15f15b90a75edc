import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { HostCost } from "../../src/history/index.js";
import { forecastCredits, forecastReport } from "../../src/run/economics/forecast.js";
import { createHostCosts, hostOf } from "../../src/run/economics/host-costs.js";
import { ageStoredRobots, isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { listenForTest } from "../helpers/loopback.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

/** A host's past: `costs` are the credits of each of its targets (every fetch, first and last alike). */
function past(host: string, costs: readonly number[], first = costs, last = costs, price = "auto"): HostCost {
	const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
	const squares = (values: readonly number[]) => values.reduce((a, b) => a + b * b, 0);
	return {
		host,
		price,
		targets: costs.length,
		credits: sum(costs),
		creditsSq: squares(costs),
		first: sum(first),
		firstSq: squares(first),
		last: sum(last),
		lastSq: squares(last),
	};
}

/** The forecast model (docs/behaviour.md, "Forecast"). */
describe("forecastCredits", () => {
	it("scales a domain's mean by its targets now; a steady domain has no spread", () => {
		const forecast = forecastCredits(
			[{ host: "shop.example", price: "auto" as const, targets: 10, min: 20, max: 20 }],
			[past("shop.example", [2, 2, 2, 2])],
			[],
			false,
		);
		expect(forecast).toEqual({ expected: 20, low: 20, high: 20 });
	});

	it("the 80 % interval is ±1.2816 sd of the total: each target's spread and the mean's own", () => {
		// Mean 3, variance 1 over k = 4 targets; n = 16 now: variance 16·1 + 256·1/4 = 80.
		const forecast = forecastCredits(
			[{ host: "a.example", price: "auto" as const, targets: 16, min: 32, max: 96 }],
			[past("a.example", [2, 4, 2, 4])],
			[],
			false,
		);
		const margin = 1.2816 * Math.sqrt(80);
		expect(forecast!.expected).toBe(48);
		expect(forecast!.low).toBeCloseTo(48 - margin, 1);
		expect(forecast!.high).toBeCloseTo(48 + margin, 1);
	});

	it("hosts are grouped by registrable domain; an unknown domain adds its static range, its middle expected", () => {
		const forecast = forecastCredits(
			[
				{ host: "www.shop.example", price: "auto" as const, targets: 2, min: 4, max: 4 },
				{ host: "img.shop.example", price: "auto" as const, targets: 2, min: 4, max: 4 },
				{ host: "new.example", price: "auto" as const, targets: 3, min: 6, max: 18 },
			],
			[past("shop.example", [1, 1])],
			[],
			false,
		);
		expect(forecast).toEqual({ expected: 4 + 12, low: 4 + 6, high: 4 + 18 });
	});

	it("no known domain, no forecast", () => {
		expect(
			forecastCredits([{ host: "new.example", price: "auto" as const, targets: 3, min: 6, max: 18 }], [], [], false),
		).toBeNull();
		expect(
			forecastCredits(
				[{ host: "new.example", price: "auto" as const, targets: 3, min: 6, max: 18 }],
				[past("old.example", [1])],
				[],
				false,
			),
		).toBeNull();
	});

	it("adaptive: a remembered rung forecasts from the last fetch, a domain given up from the first", () => {
		const targets = [
			{ host: "climbs.example", price: "auto" as const, targets: 2, min: 2, max: 28 },
			{ host: "blocked.example", price: "auto" as const, targets: 2, min: 2, max: 28 },
		];
		const costs = [past("climbs.example", [10, 5], [1, 5], [5, 5]), past("blocked.example", [0, 0], [0, 0], [0, 0])];
		const modes = [
			{ domain: "climbs.example", mode: "browser", proxyType: "residential", useful: true },
			{ domain: "blocked.example", mode: "request", proxyType: "datacenter", useful: false },
		];
		expect(forecastCredits(targets, costs, modes, true)!.expected).toBe(10);
		// The same store read for a job that is not adaptive: every fetch counts.
		expect(forecastCredits(targets, costs, modes, false)!.expected).toBe(15);
	});

	it("the report's error is (spent − expected) / expected", () => {
		expect(forecastReport({ expected: 40, low: 30, high: 50 }, 46)).toEqual({
			expected: 40,
			low: 30,
			high: 50,
			spent: 46,
			error: 0.15,
		});
		expect(forecastReport({ expected: 0, low: 0, high: 0 }, 0).error).toBeNull();
	});
});

describe("what the store keeps of adaptive targets", () => {
	// The full ladder: rungs 0–3 (request+datacenter 1, request+residential 2, auto 2–6, browser 5).
	const LADDER = [0, 1, 2, 3];
	const range = { price: "adaptive", min: 1, max: 14 } as const;
	/** A target of shop.example that started on the cheapest rung and paid `charges`, one a rung. */
	const climbed = (...charges: number[]) => ({ domain: "shop.example", ladder: LADDER, from: 0, charges });

	it("a target fetched before its domain climbed is costed on the rung the next run starts it on", () => {
		const costs = createHostCosts();
		// Two pages never needed more than the cheapest rung; the third was blocked there and climbed.
		costs.add("http://shop.example/1", 1, 1, 1, range, climbed(1));
		costs.add("http://shop.example/2", 1, 1, 1, range, climbed(1));
		costs.add("http://shop.example/3", 3, 1, 2, range, climbed(1, 2));
		// The domain's next run starts on rung 1: every target is one residential fetch (2).
		const [row] = costs.rows(() => 1);
		expect(row).toMatchObject({ targets: 3, credits: 5, first: 3, last: 6, lastSq: 12 });
		// Had the domain stayed on rung 0, each target would pay its fetches from there: the climb again.
		expect(costs.rows(() => 0)[0]).toMatchObject({ last: 5, lastSq: 1 + 1 + 9 });
	});

	it("a page no rung makes useful, on a domain that stays cheap, climbs again next run: every rung is in its cost", () => {
		const costs = createHostCosts();
		costs.add("http://shop.example/1", 1, 1, 1, range, climbed(1));
		costs.add("http://shop.example/page", 10, 1, 5, range, climbed(1, 2, 2, 5));
		expect(costs.rows(() => 0)[0]).toMatchObject({ last: 11, lastSq: 101 });
	});
});

describe("hostOf", () => {
	it("reads the usual URL's host without parsing it, and any other as the URL parser does", () => {
		for (const url of [
			"http://127.0.0.1:8080/product/1",
			"https://shop.example/a?b#c",
			"https://shop.example",
			"https://Shop.Example/A",
			"http://user:secret@shop.example/",
			"http://[::1]:4/x",
		])
			expect(hostOf(url), url).toBe(new URL(url).hostname);
		expect(hostOf("not a url")).toBe("not a url");
	});
});

describe("the forecast across runs of a job", () => {
	it("a --retry-failed run (its failures only) does not replace what the full run cost: the next full run is forecast from that", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		// Three pages that answer and one 404: the retry run fetches only the 404.
		const targets = ["1", "2", "3", "999"].map((page) => `  - ${service?.site.url}/product/${page}`);
		const job = writeJob(
			dir,
			"shop",
			["name: shop", "defaults: {mode: request}", "targets:", ...targets, ""].join("\n"),
		);
		const run = async (...flags: string[]) => {
			const result = await runCli(["run", job, "--out", out, "--json", ...flags], { env: service?.env });
			return JSON.parse(result.stdout.trim().split("\n").at(-1)!) as { credits: { used: number } };
		};
		const full = (await run()).credits.used;
		const retried = (await run("--retry-failed")).credits.used;
		// The retry's one target costs other than the full run's mean: a forecast from it would differ.
		expect(retried * 4).not.toBe(full);
		const dry = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
		expect(dry.code, dry.stderr).toBe(0);
		expect(JSON.parse(dry.stdout)[0].forecast.expected).toBe(full);
	});

	it("a run whose every fetch failed for free (the site down) saw no price: the next run is forecast from the run before", async () => {
		service = await startTestService();
		let down = false;
		const site = await startTargetSite((_req, res) => html(res, down ? "down" : "<p>page</p>", down ? 503 : 200));
		const dir = tempDir();
		const out = join(dir, "out");
		const targets = ["1", "2", "3"].map((page) => `  - ${site.origin}/p/${page}`);
		const job = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"defaults: {mode: request}",
				"retry: {attempts: 1}",
				"breaker: false",
				"targets:",
				...targets,
				"",
			].join("\n"),
		);
		const run = async () => {
			const result = await runCli(["run", job, "--out", out, "--json"], { env: service?.env });
			return JSON.parse(result.stdout.trim().split("\n").at(-1)!) as {
				credits: { used: number };
				targets: { failed: number };
			};
		};
		const paid = await run();
		expect(paid.credits.used).toBeGreaterThan(0);
		down = true;
		const failed = await run();
		expect(failed).toMatchObject({ credits: { used: 0 }, targets: { by_status: { failed: 3 } } });
		const dry = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
		expect(dry.code, dry.stderr).toBe(0);
		expect(JSON.parse(dry.stdout)[0].forecast.expected).toBe(paid.credits.used);
	});
});

/**
 * The forecast against what the emulator charged, under `mode: adaptive` on mixed domains: `localhost`
 * blocks datacenter addresses everywhere; `127.0.0.1` serves them, except two product pages that block
 * them, and two pages with no price that no rung makes useful.
 */
describe("the adaptive forecast against the ledger", () => {
	const yaml = (port: number, extra = "") => {
		const targets: string[] = [];
		for (let page = 1; page <= 12; page++)
			targets.push(`  - http://127.0.0.1:${port}/product/${page}`, `  - http://localhost:${port}/product/${page}`);
		targets.push(`  - http://127.0.0.1:${port}/page/1`, `  - http://127.0.0.1:${port}/page/2`);
		return [
			"name: mixed",
			"concurrency: 2",
			"breaker: false",
			"defaults: {mode: adaptive}",
			"retry: {attempts: 8, backoff_ms: 5, max_backoff_ms: 10}",
			extra,
			"extract:",
			"  price: {css: .price, required: true}",
			"targets:",
			...targets,
			"",
		].join("\n");
	};

	it("the run after the store learned each domain's rung costs what was forecast, pages fetched before their domain climbed included", async () => {
		const service = await useTestService({
			block_datacenter: ["//localhost:", "/127\\.0\\.0\\.1:\\d+\\/product\\/(10|11)$/"],
			// Service 503s on both runs: retried (eight attempts: 0.3⁸ that a target fails), never charged.
			faults: [{ kind: "unavailable", probability: 0.3 }],
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "mixed", yaml(service.site.port));
		const dryRun = async () => {
			const dry = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
			expect(dry.code, dry.stderr).toBe(0);
			return JSON.parse(dry.stdout)[0].forecast as { expected: number; low: number; high: number } | undefined;
		};
		const run = async () => {
			const before = service.emulator.ledger.totalCharged();
			const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
			expect(result.code, result.stderr).toBe(0);
			const dirs = readdirSync(join(out, "mixed")).filter((name) => /^\d/.test(name));
			const summary = readSummary(join(out, "mixed", dirs.sort().at(-1)!));
			return { charged: service.emulator.ledger.totalCharged() - before, summary };
		};
		// No store yet: no forecast, only the static range.
		expect(await dryRun()).toBeUndefined();
		const first = await run();
		expect(first.summary.forecast).toBeUndefined();
		// 127.0.0.1 ends on the residential rung (its two blocked pages needed it), localhost too.
		expect(first.summary.modes?.["127.0.0.1"]).toMatchObject({ mode: "request", proxy_type: "residential" });

		const forecast = (await dryRun())!;
		const second = await run();
		// Every target of a domain now goes on its learned rung; the two priceless pages climb again.
		expect(second.charged).toBe(12 * 2 + 12 * 2 + 2 * (2 + 2 + 5));
		expect(forecast.expected).toBe(second.charged);
		expect(second.summary.forecast).toMatchObject({ expected: second.charged, spent: second.charged, error: 0 });
		// Learned, the next run costs the same.
		expect((await dryRun())!.expected).toBe(second.charged);
	});

	it("a crawl's dry run forecasts its seeds only (the pages it finds are not known before it runs); the run's own forecast covers every page it wrote", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"crawl: {max_depth: 1, robots: ignore}",
				"targets:",
				`  - http://127.0.0.1:${service.site.port}/graph/1`,
				"",
			].join("\n"),
		);
		const run = async () => {
			const before = service.emulator.ledger.totalCharged();
			const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
			expect(result.code, result.stderr).toBe(0);
			return service.emulator.ledger.totalCharged() - before;
		};
		const crawled = await run();
		// The seed and the pages it links to, 2 credits each.
		expect(crawled).toBeGreaterThan(2);
		const dry = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
		// One seed at 2 credits: the pages the run will find again are not in it.
		expect(JSON.parse(dry.stdout)[0].forecast).toEqual({ expected: 2, low: 2, high: 2 });
		const text = await runCli(["run", job, "--out", out, "--dry-run"], { env: service.env });
		expect(text.stdout).toContain(
			"forecast from earlier runs: 2 credits expected (no spread in earlier runs) for the listed targets only",
		);
		expect(await run()).toBe(crawled);
		const dirs = readdirSync(join(out, "crawl")).filter((name) => /^\d/.test(name));
		expect(readSummary(join(out, "crawl", dirs.sort().at(-1)!)).forecast).toMatchObject({
			expected: crawled,
			spent: crawled,
		});
	});
});

/** A crawl of the demo site's link graph from /graph/1, its endless calendar left out. */
function demoCrawlJob(dir: string, port: number): string {
	return writeJob(
		dir,
		"crawl",
		[
			"name: crawl",
			"defaults: {mode: request}",
			'crawl: {max_depth: 3, scope: host, exclude: ["/calendar/"]}',
			"targets:",
			`  - http://127.0.0.1:${port}/graph/1`,
			"",
		].join("\n"),
	);
}

describe("a crawl's --retry-failed run", () => {
	it("says the credits it paid once: the forecast's spent is the credits line's figure, robots.txt and sitemaps included", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		// The demo site's link graph has two dead links: the retry run fetches them, and robots.txt and the sitemaps again.
		const job = demoCrawlJob(dir, service.site.port);
		const full = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(full.code, full.stderr).toBe(1);
		ageStoredRobots(join(out, "crawl"), 2 * 24 * 60 * 60 * 1000);
		const before = service.emulator.ledger.totalCharged();
		const retry = await runCli(["run", job, "--out", out, "--retry-failed"], { env: service.env });
		expect(retry.code, retry.stderr).toBe(1);
		const charged = service.emulator.ledger.totalCharged() - before;
		// The dead links are free: what it paid is robots.txt and the sitemaps, which no target's record holds.
		expect(charged).toBeGreaterThan(0);
		expect(retry.stdout).toMatch(new RegExp(`^credits +${charged} used`, "m"));
		expect(retry.stdout).toMatch(new RegExp(`^forecast .*; ${charged} spent`, "m"));
		const dirs = readdirSync(join(out, "crawl")).filter((name) => /^\d/.test(name));
		const summary = readSummary(join(out, "crawl", dirs.sort().at(-1)!));
		expect(summary.forecast?.spent).toBe(summary.credits.used);
		// Paid, not forecast: they are in expected too, so the error is the targets' own.
		expect(summary.forecast?.expected).toBeGreaterThanOrEqual(charged);
	});
});

describe("a crawl resumed after a kill", () => {
	it("the resumed session's forecast counts the robots.txt and sitemaps it paid, not those of the session before", async () => {
		assertBuilt();
		service = await startTestService({ concurrency: 2, latency_ms: 40 });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = demoCrawlJob(dir, service.site.port);
		// A first run teaches the store what the site costs: the next runs have a forecast.
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: service.env })).code).toBe(1);
		const [learned] = readdirSync(join(out, "crawl")).filter(isRunFolderName);
		ageStoredRobots(join(out, "crawl"), 2 * 24 * 60 * 60 * 1000);
		const second = spawnCli(["run", job, "--out", out, "--quiet"], service.env);
		const runs = () => readdirSync(join(out, "crawl")).filter((name) => isRunFolderName(name) && name !== learned);
		await until(() => runs().length === 1 && readRecords(join(out, "crawl", runs()[0]!)).length >= 10, "10 records");
		second.child.kill("SIGKILL");
		await second.done;
		const runDir = join(out, "crawl", runs()[0]!);
		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env: service.env });
		expect(resumed.code, resumed.stderr).toBe(1);
		const summary = readSummary(runDir);
		// robots.txt and the sitemaps were paid by the killed session (journalled), not again by this one.
		expect(summary.crawl?.sitemap_credits).toBeGreaterThan(0);
		expect(summary.forecast?.spent).toBe(summary.session?.credits_used);
	}, 60_000);
});

/**
 * A service that charges failed attempts (the emulator charges none): every fetch's first attempt is a
 * "Page crashed" 500 that costs 1 credit, retried; `b.example` serves datacenter addresses a block page.
 */
async function chargingService(): Promise<{ env: NodeJS.ProcessEnv; charged: () => number }> {
	let charged = 0;
	const attempts = new Map<string, number>();
	const server = createServer((req, res) => {
		if (req.url?.includes("/scraper/health")) {
			res.writeHead(200, { "content-type": "application/json" });
			res.end('{"success":true}');
			return;
		}
		let body = "";
		req.on("data", (chunk) => {
			body += chunk;
		});
		req.on("end", () => {
			const query = new URL(req.url ?? "/", "http://service").searchParams;
			const params: Record<string, unknown> = body ? JSON.parse(body) : Object.fromEntries(query);
			const { url, mode, proxy_type: proxy } = params as { url: string; mode: string; proxy_type?: string };
			const key = `${url} ${mode} ${proxy}`;
			const attempt = (attempts.get(key) ?? 0) + 1;
			attempts.set(key, attempt);
			charged += 1;
			if (attempt % 2 === 1) {
				res.writeHead(500, { "content-type": "application/json" });
				res.end('{"success":false,"error":"Scraping failed","message":"Page crashed","credits_used":1}');
				return;
			}
			const datacenter = mode === "request" && proxy === "datacenter";
			const credits = mode === "browser" ? 5 : datacenter ? 1 : 2;
			charged += credits - 1;
			const blocked = datacenter && url.includes("b.example");
			res.writeHead(200, { "content-type": "text/html", "x-credits-used": String(credits), "x-mode-used": mode });
			res.end(
				blocked
					? "<html><head><title>Access Denied</title></head><body><h1>Access Denied</h1></body></html>"
					: '<html><body><h1>Item</h1><span class="price">9.99</span></body></html>',
			);
		});
	});
	const origin = await listenForTest(server);
	return {
		env: { SCRAPEJOB_SCRAPER_KEY: "charging-test-key-0123456789", SCRAPEJOB_SCRAPER_URL: `${origin}/api/v1` },
		charged: () => charged,
	};
}

describe("the adaptive forecast and charged retries", () => {
	it("failed attempts the service charged are in what the targets cost, and so in the next run's forecast", async () => {
		const service = await chargingService();
		const dir = tempDir();
		const out = join(dir, "out");
		const targets = [1, 2, 3, 4, 5, 6].flatMap((page) => [
			`  - https://a.example/${page}`,
			`  - https://b.example/${page}`,
		]);
		const job = writeJob(
			dir,
			"retries",
			[
				"name: retries",
				"concurrency: 1",
				"breaker: false",
				"defaults: {mode: adaptive}",
				"retry: {attempts: 2, backoff_ms: 5, max_backoff_ms: 10}",
				"extract:",
				"  price: {css: .price, required: true}",
				"targets:",
				...targets,
				"",
			].join("\n"),
		);
		const run = async () => {
			const before = service.charged();
			const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
			expect(result.code, result.stderr).toBe(0);
			return service.charged() - before;
		};
		await run();
		const dry = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
		expect(dry.code, dry.stderr).toBe(0);
		const forecast = JSON.parse(dry.stdout)[0].forecast as { expected: number };
		// a.example: a charged crash (1) and a datacenter fetch (1); b.example: a crash (1) and a residential fetch (2).
		expect(await run()).toBe(6 * 2 + 6 * 3);
		expect(forecast.expected).toBe(6 * 2 + 6 * 3);
	});
});

/** Run SQL on a job's store with python3's sqlite3 (another SQLite than the runner's), answering rows as JSON. */
function storeSql(storeFile: string, sql: string): unknown[] {
	const script =
		"import json, sqlite3, sys\n" +
		"db = sqlite3.connect(sys.argv[1])\n" +
		"rows = []\n" +
		"for statement in sys.argv[2].split(';\\n'):\n" +
		"    rows = db.execute(statement).fetchall()\n" +
		"db.commit()\n" +
		"print(json.dumps(rows))";
	return JSON.parse(execFileSync("python3", ["-c", script, storeFile, sql], { encoding: "utf8" })) as unknown[];
}

describe("the forecast per price class", () => {
	it("a job switched to another mode is not forecast at the old mode's price; a store kept before classes is migrated in place, nothing it learned lost", async () => {
		service = await startTestService();
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const store = join(out, "shop", "history.sqlite");
		const job = (defaults: string) =>
			writeJob(
				dir,
				"shop",
				[
					"name: shop",
					`defaults: ${defaults}`,
					"targets:",
					...[1, 2, 3].map((page) => `  - ${site}/product/${page}`),
					"",
				].join("\n"),
			);
		const run = async (defaults: string) => {
			const before = service!.emulator.ledger.totalCharged();
			const result = await runCli(["run", job(defaults), "--out", out, "--quiet"], { env: service!.env });
			expect(result.code, result.stderr).toBe(0);
			return service!.emulator.ledger.totalCharged() - before;
		};
		const forecast = async (defaults: string) => {
			const dry = await runCli(["run", job(defaults), "--out", out, "--dry-run", "--json"], { env: service!.env });
			expect(dry.code, dry.stderr).toBe(0);
			return (JSON.parse(dry.stdout)[0].forecast as { expected: number } | undefined)?.expected;
		};
		const DATACENTER = "{mode: request, proxy_type: datacenter}";
		const BROWSER = "{mode: browser}";

		expect(await run(DATACENTER)).toBe(3);
		// The store as a release before price classes kept it (layout 3), with a domain's learned rung.
		storeSql(
			store,
			[
				"CREATE TABLE old (run TEXT NOT NULL, host TEXT NOT NULL, targets INTEGER NOT NULL, credits REAL NOT NULL, credits_sq REAL NOT NULL, first REAL NOT NULL, first_sq REAL NOT NULL, last REAL NOT NULL, last_sq REAL NOT NULL, PRIMARY KEY (run, host))",
				"INSERT INTO old SELECT run, host, targets, credits, credits_sq, first, first_sq, last, last_sq FROM host_costs",
				"DROP TABLE host_costs",
				"ALTER TABLE old RENAME TO host_costs",
				"INSERT INTO domain_modes VALUES ('learned.example', 'browser', 'residential', 1, 'r', '2026-01-01T00:00:00.000Z')",
				"PRAGMA user_version = 3",
			].join(";\n"),
		);
		// Read without writing (a dry run), the old store's rows stand for any class, as they did.
		expect(await forecast(BROWSER)).toBe(3);
		expect(await forecast(DATACENTER)).toBe(3);

		// A run migrates the store in place: what it learned stays, its rows get their class.
		expect(await run(DATACENTER)).toBe(3);
		expect(storeSql(store, "PRAGMA user_version")).toEqual([[4]]);
		expect(storeSql(store, "SELECT domain, mode FROM domain_modes")).toEqual([["learned.example", "browser"]]);
		expect(storeSql(store, "SELECT host, price, targets, credits FROM host_costs")).toEqual([
			["127.0.0.1", "request_datacenter", 3, 3],
		]);

		// Switched to browser: no browser run is known, so no forecast (the static range), not 3 credits.
		expect(await forecast(BROWSER)).toBeUndefined();
		expect(await run(BROWSER)).toBe(15);
		expect(await forecast(BROWSER)).toBe(15);
		// Each class keeps its own latest run: switching back forecasts the datacenter price again.
		expect(await forecast(DATACENTER)).toBe(3);
	});
});
