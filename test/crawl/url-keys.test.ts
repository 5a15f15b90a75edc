import { describe, expect, it } from "vitest";
import { createUrlKeys } from "../../src/crawl/url-keys.js";

describe("the crawl's URL keys", () => {
	it("sees each key once, claims each once, and keeps both through growth", () => {
		const urls = createUrlKeys();
		const key = (n: number): [number, number] => [(n * 2654435761) >>> 0, (n * 40503 + 7) >>> 0];
		// Seen as they come, every third claimed at once: the table grows many times after claims were made.
		for (let n = 0; n < 50_000; n++) {
			expect(urls.see(...key(n))).toBe(true);
			if (n % 3 === 0) expect(urls.claim(...key(n))).toBe(true);
		}
		// A claim of a key never seen adds it as seen too.
		expect(urls.claim(...key(70_000))).toBe(true);
		expect(urls.size).toBe(50_001);
		for (let n = 0; n < 50_000; n++) {
			expect(urls.see(...key(n))).toBe(false);
			expect(urls.isClaimed(...key(n))).toBe(n % 3 === 0);
		}
		expect(urls.see(...key(70_000))).toBe(false);
		expect(urls.claim(...key(3))).toBe(false);
		expect(urls.isClaimed(...key(60_000))).toBe(false);
		// (0, 0) marks an empty slot: a real (0, 0) key still counts.
		expect(urls.isClaimed(0, 0)).toBe(false);
		expect(urls.claim(0, 0)).toBe(true);
		expect(urls.isClaimed(0, 0)).toBe(true);
		// 8 bytes a slot and a bit, at most 70 % full.
		expect(urls.bytes).toBeLessThanOrEqual((urls.size / 0.7) * 2 * (8 + 1 / 8));
	});
});
