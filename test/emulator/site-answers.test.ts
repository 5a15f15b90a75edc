import { describe, expect, test } from "vitest";
import { demoProductPrice } from "../../src/emulator/index.js";
import { scrapeGet, useDemoSite, useEmulator } from "./helpers.js";

/**
 * The scenario's sites that spend credits on useless pages (docs/guides/emulator.md, "Scenario files"):
 * block pages for datacenter addresses, a JavaScript shell for anything but a browser, 403 to everything.
 */
describe("sites of the scenario", () => {
	test("block_datacenter: a datacenter request gets a 200 block page and pays 1; residential and browser get the page", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 100, block_datacenter: ["/product/"] } });
		const url = `${site.url}/product/3`;
		const blocked = await scrapeGet(emulator, { url, mode: "request", proxy_type: "datacenter" });
		expect(blocked.status).toBe(200);
		expect(blocked.text).toContain("You don't have permission to access");
		expect(blocked.text).not.toContain(`$${demoProductPrice(3)}`);
		expect(blocked.headers.get("x-credits-used")).toBe("1");
		const residential = await scrapeGet(emulator, { url, mode: "request" });
		expect(residential.text).toContain(`$${demoProductPrice(3)}`);
		const browser = await scrapeGet(emulator, { url, mode: "browser" });
		expect(browser.text).toContain(`$${demoProductPrice(3)}`);
		// A URL the scenario does not name is fetched as ever.
		const other = await scrapeGet(emulator, { url: `${site.url}/page/1`, mode: "request", proxy_type: "datacenter" });
		expect(other.text).not.toContain("Access Denied");
		expect(emulator.ledger.chargesByUrl().get(url)).toBe(1 + 2 + 5);
	});

	test("browser_only: request and auto (request) get the shell and pay; browser and an upgraded auto get the page", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 100, browser_only: ["/product/"] } });
		const url = `${site.url}/product/4`;
		const price = `$${demoProductPrice(4)}`;
		const request = await scrapeGet(emulator, { url, mode: "request" });
		expect([request.status, request.headers.get("x-mode-used"), request.headers.get("x-credits-used")]).toEqual([
			200,
			"request",
			"2",
		]);
		expect(request.text).toContain('<div id="root"></div>');
		expect(request.text).not.toContain(price);
		const auto = await scrapeGet(emulator, { url, mode: "auto" });
		expect([auto.headers.get("x-mode-used"), auto.headers.get("x-credits-used")]).toEqual(["auto (request)", "2"]);
		expect(auto.text).not.toContain(price);
		const browser = await scrapeGet(emulator, { url, mode: "browser" });
		expect([browser.headers.get("x-mode-used"), browser.headers.get("x-credits-used")]).toEqual(["browser", "5"]);
		expect(browser.text).toContain(price);
		expect(emulator.ledger.chargesByUrl().get(url)).toBe(9);

		const upgrading = await useEmulator({
			scenario: { credits: 100, browser_only: ["/product/"], auto_upgrade: ["/product/"] },
		});
		const upgraded = await scrapeGet(upgrading, { url, mode: "auto" });
		expect([upgraded.headers.get("x-mode-used"), upgraded.headers.get("x-credits-used")]).toEqual([
			"auto (browser)",
			"6",
		]);
		expect(upgraded.text).toContain(price);
	});

	test("deny_all: 403 in every mode, passed through at 0 credits, and the site is never fetched", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { credits: 100, deny_all: ["/product/"] } });
		const url = `${site.url}/product/5`;
		const cases: Array<Record<string, string>> = [
			{ url, mode: "request" },
			{ url, mode: "request", proxy_type: "datacenter" },
			{ url, mode: "auto" },
			{ url, mode: "browser" },
		];
		for (const params of cases) {
			const answer = await scrapeGet(emulator, params);
			expect(answer.headers.get("x-target-status")).toBe("403");
			expect(answer.headers.get("x-credits-used") ?? "0").toBe("0");
		}
		expect(emulator.credits()).toBe(100);
		expect(emulator.ledger.totalCharged()).toBe(0);
		expect(site.requestCount()).toBe(0);
	});
});
