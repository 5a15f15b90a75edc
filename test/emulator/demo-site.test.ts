import { describe, expect, test } from "vitest";
import { demoProductPrice } from "../../src/emulator/index.js";
import { call, useDemoSite } from "./helpers.js";

describe("demo site", () => {
	test("product pages, generic pages, script page, 404s", async () => {
		const site = await useDemoSite({ pages: 3 });
		expect(site.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
		const product = await call(`${site.url}/product/3`);
		expect(product.status).toBe(200);
		expect(product.text).toContain("<title>Product 3</title>");
		expect(product.text).toContain(`<p class="price">$${demoProductPrice(3)}</p>`);
		expect((await call(`${site.url}/product/4`)).status).toBe(404);
		expect((await call(`${site.url}/page/12345`)).text).toContain("<h1>Page 12345</h1>");
		const app = await call(`${site.url}/app`);
		expect(app.text).toContain('<div id="root"></div>');
		expect(app.text).toContain("<script>");
		const missing = await call(`${site.url}/missing`);
		expect(missing.status).toBe(404);
		expect((await call(`${site.url}/status/418`)).status).toBe(418);
		const index = await call(`${site.url}/`);
		expect(index.text).toContain('href="/product/3"');
		expect(site.requestCount()).toBe(7);
	});

	test("a path spelled with percent-encoded unreserved characters is the same page, as a run's URL identity says", async () => {
		const site = await useDemoSite({ pages: 3 });
		const plain = await call(`${site.url}/product/1`);
		for (const spelling of ["/product/%31", "/%70roduct/1", "/product/./1", "/large/2?kb=5&x=%41"]) {
			const answer = await call(`${site.url}${spelling}`);
			expect(answer.status, spelling).toBe(200);
			if (spelling.startsWith("/large/")) expect(answer.text).toContain("<title>Product 2</title>");
			else expect(answer.text).toBe(plain.text);
		}
		// A reserved character stays encoded: %2F is no path separator.
		expect((await call(`${site.url}/product%2F1`)).status).toBe(404);
	});

	test("slow path and latency", async () => {
		const site = await useDemoSite({ latencyMs: 20 });
		const started = Date.now();
		const slow = await call(`${site.url}/slow?ms=30`);
		expect(slow.text).toContain("Answered after 30 ms");
		expect(Date.now() - started).toBeGreaterThanOrEqual(48);
	});

	test("prices are deterministic", () => {
		expect(demoProductPrice(1)).toBe(demoProductPrice(1));
		expect(demoProductPrice(1)).toMatch(/^\d+\.\d{2}$/);
	});
});
