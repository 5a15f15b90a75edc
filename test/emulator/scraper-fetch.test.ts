import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, test } from "vitest";
import { demoProductPrice } from "../../src/emulator/index.js";
import { scrapeGet, scrapePost, useDemoSite, useEmulator } from "./helpers.js";

/** A loopback port that refuses connections: a server that listened and closed. */
async function closedPort(): Promise<number> {
	const server = createServer();
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	await new Promise<void>((resolve) => server.close(() => resolve()));
	return port;
}

describe("successful fetches", () => {
	test("raw delivery returns the target's page itself with the X- headers", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 100, concurrency: 4 } });
		const answer = await scrapeGet(emulator, { url: `${site.url}/product/7`, mode: "request" });
		expect(answer.status).toBe(200);
		expect(answer.headers.get("content-type")).toBe("text/html; charset=utf-8");
		expect(answer.text).toContain("<title>Product 7</title>");
		expect(answer.text).toContain(`$${demoProductPrice(7)}`);
		expect(answer.headers.get("x-credits-used")).toBe("2");
		expect(answer.headers.get("x-credits-remaining")).toBe("98");
		expect(answer.headers.get("x-mode-used")).toBe("request");
		expect(answer.headers.get("x-ratelimit-limit")).toBe("4");
		expect(answer.headers.get("x-ratelimit-remaining")).toBe("4");
		expect(site.requestCount()).toBe(1);
	});

	test("credits per mode: request 2, datacenter 1, browser 5, auto 2", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 100 } });
		const url = `${site.url}/product/1`;
		const used = [];
		const cases: Array<Record<string, string>> = [
			{ url, mode: "request" },
			{ url, mode: "request", proxy_type: "datacenter" },
			{ url, mode: "browser" },
			{ url, mode: "auto" },
			{ url },
		];
		for (const params of cases) {
			const answer = await scrapeGet(emulator, params);
			used.push([answer.headers.get("x-mode-used"), Number(answer.headers.get("x-credits-used"))]);
		}
		expect(used).toEqual([
			["request", 2],
			["request", 1],
			["browser", 5],
			["auto (request)", 2],
			["auto (request)", 2],
		]);
		expect(emulator.credits()).toBe(100 - 12);
		expect(emulator.ledger.totalCharged()).toBe(12);
		expect(emulator.ledger.chargesByUrl().get(url)).toBe(12);
	});

	test("scenario costs replace the documented ones", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 100, costs: { request: 3, browser: 10 } } });
		const request = await scrapeGet(emulator, { url: `${site.url}/page/1`, mode: "request" });
		const browser = await scrapeGet(emulator, { url: `${site.url}/page/1`, mode: "browser" });
		expect([request.headers.get("x-credits-used"), browser.headers.get("x-credits-used")]).toEqual(["3", "10"]);
		expect(emulator.credits()).toBe(87);
	});

	test("auto upgrades to browser (6 credits) for a script-rendered page", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 100 } });
		const answer = await scrapeGet(emulator, { url: `${site.url}/app`, mode: "auto" });
		expect(answer.status).toBe(200);
		expect(answer.headers.get("x-mode-used")).toBe("auto (browser)");
		expect(answer.headers.get("x-credits-used")).toBe("6");
		expect(emulator.credits()).toBe(94);
		// request mode never upgrades
		const request = await scrapeGet(emulator, { url: `${site.url}/app`, mode: "request" });
		expect(request.headers.get("x-mode-used")).toBe("request");
		expect(emulator.ledger.entries.map((entry) => entry.modeUsed)).toEqual(["auto (browser)", "request"]);
	});

	test("auto upgrades when the scenario's auto_upgrade pattern matches the URL", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { auto_upgrade: ["/product/2", "/\\/page\\/[0-9]+$/"] } });
		const byPattern = await scrapeGet(emulator, { url: `${site.url}/product/2` });
		const byRegex = await scrapeGet(emulator, { url: `${site.url}/page/42` });
		const plain = await scrapeGet(emulator, { url: `${site.url}/product/3` });
		expect(byPattern.headers.get("x-mode-used")).toBe("auto (browser)");
		expect(byRegex.headers.get("x-mode-used")).toBe("auto (browser)");
		expect(plain.headers.get("x-mode-used")).toBe("auto (request)");
	});

	test("redirects are followed", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const answer = await scrapeGet(emulator, { url: `${site.url}/redirect` });
		expect(answer.status).toBe(200);
		expect(answer.text).toContain("<h1>Product 1</h1>");
	});

	test("additional_headers are sent to the target", async () => {
		let seen: string | undefined;
		const target = createServer((req, res) => {
			seen = req.headers["x-demo"] as string | undefined;
			res.end("<html><body><p>hello there, this page has plenty of visible text</p></body></html>");
		});
		await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
		try {
			const emulator = await useEmulator();
			const { port } = target.address() as AddressInfo;
			const answer = await scrapePost(emulator, {
				url: `http://127.0.0.1:${port}/`,
				additional_headers: { "X-Demo": "yes" },
			});
			expect(answer.status).toBe(200);
			expect(seen).toBe("yes");
		} finally {
			target.closeAllConnections();
			await new Promise<void>((resolve) => target.close(() => resolve()));
		}
	});
});

describe("delivery and content", () => {
	test("delivery=json without include_content has no content", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const url = `${site.url}/product/4`;
		const answer = await scrapePost(emulator, { url, mode: "request", delivery: "json" });
		expect(answer.status).toBe(200);
		expect(answer.json).toEqual({
			success: true,
			url,
			title: "Product 4",
			status_code: 200,
			credits_used: 2,
			mode_used: "request",
		});
	});

	test("delivery=json with include_content carries the HTML", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const answer = await scrapeGet(emulator, {
			url: `${site.url}/product/4`,
			delivery: "json",
			include_content: "true",
		});
		expect(answer.json.mode_used).toBe("auto (request)");
		expect(answer.json.content).toContain('<article class="product" data-id="4">');
	});

	test("content=markdown converts the page", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const raw = await scrapeGet(emulator, { url: `${site.url}/product/5`, content: "markdown" });
		expect(raw.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
		expect(raw.text).toContain("# Product 5");
		expect(raw.text).toContain(`$${demoProductPrice(5)}`);
		expect(raw.text).not.toContain("<h1>");
		const json = await scrapePost(emulator, {
			url: `${site.url}/product/5`,
			content: "markdown",
			delivery: "json",
			include_content: true,
		});
		expect(json.json.content).toBe(raw.text);
		expect(json.json.title).toBe("Product 5");
	});

	test("screenshot in browser mode answers a PNG", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const response = await fetch(
			`${emulator.scraperUrl}/scraper/realtime?${new URLSearchParams({ url: `${site.url}/product/1`, mode: "browser", screenshot: "true" })}`,
			{ headers: { "x-api-key": emulator.scraperKey } },
		);
		const bytes = Buffer.from(await response.arrayBuffer());
		expect(response.status).toBe(200);
		expect(response.headers.get("content-type")).toBe("image/png");
		expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG");
	});
});

describe("failures cost nothing", () => {
	test("a target 404 is passed through with X-Target-Status and 0 credits", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 20 } });
		const answer = await scrapeGet(emulator, { url: `${site.url}/missing`, mode: "request" });
		expect(answer.status).toBe(404);
		expect(answer.headers.get("x-target-status")).toBe("404");
		expect(answer.headers.get("x-credits-used")).toBe("0");
		expect(answer.headers.get("x-credits-remaining")).toBe("20");
		expect(answer.text).toContain("<h1>Not found</h1>");
		expect(emulator.credits()).toBe(20);
		expect(emulator.ledger.entries[0]).toMatchObject({ status: 404, targetStatus: 404, creditsCharged: 0 });
	});

	test("a target 500 is passed through too", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const answer = await scrapeGet(emulator, { url: `${site.url}/status/503` });
		expect(answer.status).toBe(503);
		expect(answer.headers.get("x-target-status")).toBe("503");
		expect(answer.text).toContain("The demo site answered 503");
	});

	test("an unreachable target is a 500 scraping error: Connection refused", async () => {
		const port = await closedPort();
		const emulator = await useEmulator({ scenario: { credits: 20 } });
		const url = `http://127.0.0.1:${port}/x`;
		const answer = await scrapeGet(emulator, { url, mode: "request" });
		expect(answer.status).toBe(500);
		expect(answer.json).toMatchObject({
			success: false,
			error: "Scraping error",
			message: "Connection refused",
			url,
			credits_used: 0,
		});
		expect(answer.headers.get("x-credits-used")).toBe("0");
		expect(emulator.credits()).toBe(20);
	});

	test("402 when the credits are short of the mode's worst case; no fetch, no charge", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 5 } });
		const auto = await scrapeGet(emulator, { url: `${site.url}/product/1`, mode: "auto" });
		expect(auto.status).toBe(402);
		expect(auto.json).toMatchObject({
			success: false,
			error: "Insufficient credits",
			message: "Insufficient credits: required 6, available 5",
			credits_remaining: 5,
		});
		expect(site.requestCount()).toBe(0);
		// request mode needs only 2
		const request = await scrapeGet(emulator, { url: `${site.url}/product/1`, mode: "request" });
		expect(request.status).toBe(200);
		expect(emulator.credits()).toBe(3);
	});

	test("setCredits changes the balance at run time", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		emulator.setCredits(1);
		const refused = await scrapeGet(emulator, { url: `${site.url}/product/1`, mode: "request" });
		expect(refused.status).toBe(402);
		expect(refused.json.credits_remaining).toBe(1);
		const datacenter = await scrapeGet(emulator, {
			url: `${site.url}/product/1`,
			mode: "request",
			proxy_type: "datacenter",
		});
		expect(datacenter.status).toBe(200);
		expect(emulator.credits()).toBe(0);
	});

	test("concurrent fetches never spend more than the balance (worst case reserved)", async () => {
		const site = await useDemoSite({ latencyMs: 300 });
		const emulator = await useEmulator({ scenario: { credits: 13, concurrency: 10 } });
		const answers = await Promise.all(
			Array.from({ length: 5 }, (_, i) => scrapeGet(emulator, { url: `${site.url}/page/${i + 1}` })),
		);
		const statuses = answers.map((answer) => answer.status).sort();
		// 13 credits cover two auto worst cases (6 each), so three are refused while two run.
		expect(statuses).toEqual([200, 200, 402, 402, 402]);
		expect(emulator.credits()).toBe(9);
	});
});
