import { describe, expect, test } from "vitest";
import { delay, scrapeGet, useDemoSite, useEmulator, waitFor } from "./helpers.js";

describe("per-key concurrency (docs/service.md, Concurrency and 429)", () => {
	test("over the limit answers 429 with used/limit, limit and reset", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { concurrency: 2, reset_seconds: 1 } });
		const slow = [1, 2].map((i) => scrapeGet(emulator, { url: `${site.url}/slow?ms=400&i=${i}` }));
		await waitFor(() => site.requestCount() === 2);
		const refused = await scrapeGet(emulator, { url: `${site.url}/product/1` });
		expect(refused.status).toBe(429);
		expect(refused.json).toMatchObject({
			success: false,
			error: "Concurrency limit exceeded (2/2)",
			limit: 2,
			reset: 1,
		});
		expect(refused.headers.get("x-ratelimit-limit")).toBe("2");
		expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
		const done = await Promise.all(slow);
		expect(done.map((answer) => answer.status)).toEqual([200, 200]);
		expect(done[1]?.headers.get("x-ratelimit-remaining")).toBe("2");
		expect(emulator.ledger.maxInFlight(emulator.scraperKey)).toBe(2);
		expect(emulator.ledger.maxInFlight()).toBe(2);
		const [window] = emulator.ledger.rateLimits;
		expect(window).toMatchObject({ key: emulator.scraperKey, resetSeconds: 1, cause: "concurrency" });
		expect(window?.untilMs).toBe((window?.at ?? 0) + 1000);
		// a 429 costs nothing and did not reach the target
		expect(emulator.ledger.totalCharged()).toBe(4);
		expect(site.requestCount()).toBe(2);
	});

	test("limits are per key", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { concurrency: 1, keys: { scraper: ["key-a", "key-b"] } } });
		const slowA = scrapeGet(emulator, { url: `${site.url}/slow?ms=300` }, "key-a");
		await waitFor(() => site.requestCount() === 1);
		const b = await scrapeGet(emulator, { url: `${site.url}/product/1` }, "key-b");
		const a = await scrapeGet(emulator, { url: `${site.url}/product/1` }, "key-a");
		expect([b.status, a.status, (await slowA).status]).toEqual([200, 429, 200]);
		expect(emulator.ledger.maxInFlight("key-a")).toBe(1);
		expect(emulator.ledger.maxInFlight("key-b")).toBe(1);
	});

	test("slots expire after slot_expiry_ms even while their fetch runs", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { concurrency: 1, slot_expiry_ms: 250 } });
		const stuck = scrapeGet(emulator, { url: `${site.url}/slow?ms=800` });
		const first = await waitFor(() => emulator.ledger.entries[0]);
		const refused = await scrapeGet(emulator, { url: `${site.url}/product/1` });
		expect(Date.now() - first.at).toBeLessThan(250);
		expect(refused.status).toBe(429);
		// Ask again until the slot is free: it must be, once its expiry has passed, while the fetch still runs.
		let again = refused;
		while (again.status === 429 && Date.now() - first.at < 5000) {
			await delay(10);
			again = await scrapeGet(emulator, { url: `${site.url}/product/1` });
		}
		expect(again.status).toBe(200);
		expect(Date.now() - first.at).toBeGreaterThanOrEqual(250);
		expect(first.finishedAt).toBeNull();
		expect((await stuck).status).toBe(200);
	});

	test("setConcurrency changes the limit at run time", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { concurrency: 1 } });
		emulator.setConcurrency(3);
		const answers = await Promise.all(
			[1, 2, 3].map((i) => scrapeGet(emulator, { url: `${site.url}/slow?ms=40&i=${i}` })),
		);
		expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
		expect(answers[0]?.headers.get("x-ratelimit-limit")).toBe("3");
		expect(emulator.concurrency()).toBe(3);
		expect(emulator.ledger.maxInFlight()).toBe(3);
	});

	test("50 concurrent fetches with limit 50: none refused, all charged", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { concurrency: 50, credits: 1000 } });
		const answers = await Promise.all(
			Array.from({ length: 50 }, (_, i) => scrapeGet(emulator, { url: `${site.url}/page/${i + 1}`, mode: "request" })),
		);
		expect(answers.every((answer) => answer.status === 200)).toBe(true);
		expect(emulator.ledger.totalCharged()).toBe(100);
		expect(emulator.credits()).toBe(900);
		expect(emulator.ledger.maxInFlight()).toBeLessThanOrEqual(50);
		expect(emulator.ledger.chargesByUrl().size).toBe(50);
	});
});
