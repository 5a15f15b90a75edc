import { describe, expect, test } from "vitest";
import { account, call, scrapeGet, useDemoSite, useEmulator } from "./helpers.js";

describe("ledger", () => {
	test("one entry per request, in order, with endpoint, key place, status, mode and credits", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const url = `${site.url}/product/1`;
		await scrapeGet(emulator, { url, mode: "browser" });
		await call(`${emulator.scraperUrl}/scraper/health?api_key=${emulator.scraperKey}`);
		await account(emulator, "/public/settings");
		await account(emulator, "/public/generate", { product: "rp", amount: "1" });
		const entries = emulator.ledger.entries;
		expect(entries.map((entry) => [entry.seq, entry.endpoint, entry.method, entry.keyPlace, entry.status])).toEqual([
			[1, "realtime", "GET", "header", 200],
			[2, "health", "GET", "query", 200],
			[3, "account/settings", "GET", "header", 200],
			[4, "account/generate", "GET", "header", 200],
		]);
		expect(entries[0]).toMatchObject({
			url,
			mode: "browser",
			modeUsed: "browser",
			creditsCharged: 5,
			targetStatus: 200,
			key: emulator.scraperKey,
			path: "/api/v1/scraper/realtime",
		});
		for (const entry of entries) {
			expect(entry.finishedAt).toBeGreaterThanOrEqual(entry.at);
		}
		expect(emulator.ledger.totalCharged()).toBe(5);
		expect(emulator.ledger.requestCount).toBe(4);
		expect(emulator.ledger.statusCounts()).toEqual({ 200: 4 });
	});

	test("requestsDuring selects by arrival time and endpoint", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		await scrapeGet(emulator, { url: `${site.url}/page/1` });
		const middle = Date.now() + 1;
		await new Promise((resolve) => setTimeout(resolve, 5));
		await scrapeGet(emulator, { url: `${site.url}/page/2` });
		await account(emulator, "/public");
		const after = emulator.ledger.requestsDuring(middle, Number.POSITIVE_INFINITY);
		expect(after.map((entry) => entry.endpoint)).toEqual(["realtime", "account/proxy-data"]);
		expect(emulator.ledger.requestsDuring(middle, Number.POSITIVE_INFINITY, "realtime")).toHaveLength(1);
		expect(emulator.ledger.requestsDuring(0, middle).map((entry) => entry.url)).toEqual([`${site.url}/page/1`]);
	});

	test("a test can check that nothing was sent during a 429 pause", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { reset_seconds: 60, faults: [{ kind: "rate_limit", times: 1 }] } });
		expect((await scrapeGet(emulator, { url: `${site.url}/page/1` })).status).toBe(429);
		const [window] = emulator.ledger.rateLimits;
		if (!window) throw new Error("no 429 recorded");
		// A client that sends again at once breaks the pause, and the ledger shows it. (Sent in a later
		// millisecond than the 429's: the window below starts the millisecond after it.)
		while (Date.now() <= window.at) await new Promise((resolve) => setImmediate(resolve));
		await scrapeGet(emulator, { url: `${site.url}/page/2` });
		const during = emulator.ledger.requestsDuring(window.at + 1, window.untilMs, "realtime");
		expect(during.map((entry) => entry.url)).toEqual([`${site.url}/page/2`]);
	});

	test("ledger: false keeps totals only", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ ledger: false, scenario: { concurrency: 10 } });
		await Promise.all([1, 2, 3].map((i) => scrapeGet(emulator, { url: `${site.url}/page/${i}`, mode: "request" })));
		expect(emulator.ledger.entries).toEqual([]);
		expect(emulator.ledger.requestCount).toBe(3);
		expect(emulator.ledger.unstoredCount).toBe(3);
		expect(emulator.ledger.totalCharged()).toBe(6);
		expect(emulator.ledger.statusCounts()).toEqual({ 200: 3 });
		expect(emulator.ledger.maxInFlight()).toBeGreaterThanOrEqual(1);
	});

	test("maxEntries caps storage; clear() forgets entries and totals", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ ledger: { maxEntries: 2 } });
		for (let i = 1; i <= 3; i++) await scrapeGet(emulator, { url: `${site.url}/page/${i}`, mode: "request" });
		expect(emulator.ledger.entries.map((entry) => entry.seq)).toEqual([1, 2]);
		expect(emulator.ledger.totalCharged()).toBe(6);
		emulator.ledger.clear();
		expect(emulator.ledger.entries).toEqual([]);
		expect(emulator.ledger.totalCharged()).toBe(0);
		expect(emulator.credits()).toBe(10_000 - 6);
	});
});
