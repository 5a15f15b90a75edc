import { describe, expect, test } from "vitest";
import { SCRAPING_ERROR_MESSAGES } from "../../src/emulator/index.js";
import { account, call, scrapeGet, useDemoSite, useEmulator } from "./helpers.js";

describe("answer faults on the scraper", () => {
	test("unavailable → 503, bad_gateway → 502, server_error → 500, each for its matching URLs", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({
			scenario: {
				faults: [
					{ kind: "unavailable", match: "/page/1" },
					{ kind: "bad_gateway", match: "/page/2" },
					{ kind: "server_error", match: "/page/3", message: "boom" },
				],
			},
		});
		const [a, b, c, d] = await Promise.all(
			[1, 2, 3, 4].map((i) => scrapeGet(emulator, { url: `${site.url}/page/${i}` })),
		);
		expect(a?.status).toBe(503);
		expect(a?.json).toMatchObject({ success: false, error: "Service unavailable" });
		expect(b?.status).toBe(502);
		expect(b?.json.error).toBe("Bad gateway");
		expect(c?.status).toBe(500);
		expect(c?.json).toMatchObject({ error: "Internal server error", message: "boom" });
		expect(d?.status).toBe(200);
		expect(site.requestCount()).toBe(1);
		expect(emulator.ledger.totalCharged()).toBe(2);
		expect(
			emulator.ledger.entries
				.slice()
				.sort((x, y) => (x.url ?? "").localeCompare(y.url ?? ""))
				.map((entry) => entry.fault ?? null),
		).toEqual(["unavailable", "bad_gateway", "server_error", null]);
	});

	test("times: N hits only the first N matching requests", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { faults: [{ kind: "unavailable", times: 2 }] } });
		const statuses = [];
		for (let i = 0; i < 4; i++) statuses.push((await scrapeGet(emulator, { url: `${site.url}/page/1` })).status);
		expect(statuses).toEqual([503, 503, 200, 200]);
	});

	test("regex match", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { faults: [{ kind: "unavailable", match: "/\\/page\\/[12]$/" }] } });
		const statuses = [];
		for (const i of [1, 2, 3, 12]) statuses.push((await scrapeGet(emulator, { url: `${site.url}/page/${i}` })).status);
		expect(statuses).toEqual([503, 503, 200, 200]);
	});

	test("probability is drawn from the seed: the same seed gives the same sequence", async () => {
		const site = await useDemoSite();
		const run = async (seed: number) => {
			const emulator = await useEmulator({ scenario: { seed, faults: [{ kind: "unavailable", probability: 0.5 }] } });
			const statuses = [];
			for (let i = 0; i < 20; i++) statuses.push((await scrapeGet(emulator, { url: `${site.url}/page/1` })).status);
			return statuses;
		};
		const first = await run(7);
		const second = await run(7);
		expect(second).toEqual(first);
		const failures = first.filter((status) => status === 503).length;
		expect(failures).toBeGreaterThan(2);
		expect(failures).toBeLessThan(18);
		expect(await run(8)).not.toEqual(first);
	});

	test("drop_connection closes the socket without an answer", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { faults: [{ kind: "drop_connection", times: 1 }] } });
		await expect(scrapeGet(emulator, { url: `${site.url}/page/1` })).rejects.toThrow();
		const next = await scrapeGet(emulator, { url: `${site.url}/page/1` });
		expect(next.status).toBe(200);
		expect(emulator.ledger.entries[0]).toMatchObject({ status: 0, fault: "drop_connection" });
		expect(emulator.ledger.statusCounts()).toEqual({ 0: 1, 200: 1 });
	});

	test("rate_limit starts a burst: this and the next count-1 requests of the key answer 429", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({
			scenario: { reset_seconds: 1, faults: [{ kind: "rate_limit", count: 3, times: 1 }] },
		});
		const statuses = [];
		for (let i = 0; i < 5; i++) statuses.push((await scrapeGet(emulator, { url: `${site.url}/page/1` })).status);
		expect(statuses).toEqual([429, 429, 429, 200, 200]);
		expect(emulator.ledger.rateLimits.map((window) => window.cause)).toEqual(["fault", "fault", "fault"]);
		const first = await scrapeGet(emulator, { url: `${site.url}/page/1` });
		expect(first.status).toBe(200);
		expect(emulator.ledger.rateLimits[0]?.resetSeconds).toBe(1);
	});

	test("the 429 burst body has limit and reset", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({
			scenario: { concurrency: 4, reset_seconds: 2, faults: [{ kind: "rate_limit", times: 1 }] },
		});
		const answer = await scrapeGet(emulator, { url: `${site.url}/page/1` });
		expect(answer.json).toMatchObject({ error: "Concurrency limit exceeded (4/4)", limit: 4, reset: 2 });
	});
});

describe("fetch faults on the scraper", () => {
	test.each(SCRAPING_ERROR_MESSAGES)("scraping_error %s → 500 with that message and 0 credits", async (message) => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { faults: [{ kind: "scraping_error", message }] } });
		const url = `${site.url}/page/1`;
		const answer = await scrapeGet(emulator, { url });
		expect(answer.status).toBe(500);
		expect(answer.json).toMatchObject({ success: false, error: "Scraping error", message, url, credits_used: 0 });
		expect(site.requestCount()).toBe(0);
		expect(emulator.ledger.totalCharged()).toBe(0);
	});

	test("scraping_error with credits: the failure is charged, in its answer and in the ledger", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({
			scenario: { credits: 100, faults: [{ kind: "scraping_error", message: "Page crashed", credits: 3, times: 1 }] },
		});
		const url = `${site.url}/page/1`;
		const failed = await scrapeGet(emulator, { url });
		expect(failed.status).toBe(500);
		expect(failed.json).toMatchObject({ success: false, message: "Page crashed", credits_used: 3 });
		expect(failed.headers.get("x-credits-used")).toBe("3");
		expect(emulator.ledger.totalCharged()).toBe(3);
		expect(emulator.credits()).toBe(97);
		// `times: 1`: the next fetch is the page, charged as any.
		expect((await scrapeGet(emulator, { url })).status).toBe(200);
		expect(emulator.ledger.totalCharged()).toBe(3 + 2);
	});

	test("dns_failure → DNS resolution failed", async () => {
		const emulator = await useEmulator({ scenario: { faults: [{ kind: "dns_failure", match: "shop.invalid" }] } });
		const answer = await scrapeGet(emulator, { url: "http://shop.invalid/a" });
		expect(answer.status).toBe(500);
		expect(answer.json.message).toBe("DNS resolution failed");
		expect(emulator.ledger.entries[0]?.fault).toBe("dns_failure");
	});

	test("slow adds delay before the fetch and can push it into a task", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({
			scenario: { timeout_ms: 40, faults: [{ kind: "slow", delay_ms: 80, match: "/page/9" }] },
		});
		const started = Date.now();
		const fast = await scrapeGet(emulator, { url: `${site.url}/page/1` });
		expect(fast.status).toBe(200);
		const slow = await scrapeGet(emulator, { url: `${site.url}/page/9` });
		expect(slow.status).toBe(202);
		expect(Date.now() - started).toBeGreaterThanOrEqual(40);
	});

	test("latency_ms is added to every fetch", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { latency_ms: 30 } });
		const started = Date.now();
		await scrapeGet(emulator, { url: `${site.url}/page/1` });
		expect(Date.now() - started).toBeGreaterThanOrEqual(29);
	});
});

describe("account faults", () => {
	test("server_error with a message, drop and unavailable on account paths", async () => {
		const emulator = await useEmulator({
			scenario: {
				faults: [
					{ on: "account", kind: "server_error", match: "/public/settings", message: "Temporary data unavailability" },
					{ on: "account", kind: "server_error", match: "/public/rotate_session", message: "Failed to reset session" },
					{ on: "account", kind: "unavailable", match: "/public/browser" },
					{ on: "account", kind: "rate_limit", match: "/public/usage" },
				],
			},
		});
		const settings = await account(emulator, "/public/settings");
		expect(settings.status).toBe(500);
		expect(settings.json).toEqual({ error: "Temporary data unavailability", success: false });
		const rotate = await account(emulator, "/public/rotate_session", { sessionid: "abc123", product: "rp" });
		expect(rotate.json).toEqual({ error: "Failed to reset session", success: false });
		expect((await account(emulator, "/public/browser")).status).toBe(503);
		expect((await account(emulator, "/public/usage", { product: "rp" })).status).toBe(429);
		// scraper traffic is untouched by account faults, and 401 comes before faults
		expect((await account(emulator, "/public")).status).toBe(200);
		expect((await account(emulator, "/public/settings", {}, "wrong")).status).toBe(401);
		const health = await call(`${emulator.scraperUrl}/scraper/health`, {
			headers: { "x-api-key": emulator.scraperKey },
		});
		expect(health.status).toBe(200);
	});

	test("drop_connection and slow on account paths", async () => {
		const emulator = await useEmulator({
			scenario: {
				faults: [
					{ on: "account", kind: "drop_connection", match: "/public/scraper", times: 1 },
					{ on: "account", kind: "slow", match: "/public/browser", delay_ms: 40 },
				],
			},
		});
		await expect(account(emulator, "/public/scraper")).rejects.toThrow();
		expect((await account(emulator, "/public/scraper")).status).toBe(200);
		const started = Date.now();
		expect((await account(emulator, "/public/browser")).status).toBe(200);
		expect(Date.now() - started).toBeGreaterThanOrEqual(39);
	});
});
