import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createUrlKeys } from "../../src/common/url-keys.js";
import { tempDir } from "../helpers/job-files.js";

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

describe("the crawl's URL keys, spilled to disk", () => {
	it("answer as a set in memory would while most keys are in sorted runs on disk, and leave no file behind", () => {
		const dir = join(tempDir(), "crawl-keys");
		const urls = createUrlKeys({ dir, inMemory: 1000 });
		const reference = new Map<string, boolean>();
		let seed = 12345;
		const random = () => {
			seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
			return seed;
		};
		// 40,000 operations over 15,000 keys: every key is met again long after it was spilled.
		const keys = Array.from({ length: 15_000 }, () => [random(), random()] as [number, number]);
		for (let step = 0; step < 40_000; step++) {
			const key = keys[random() % keys.length]!;
			const name = `${key[0]}:${key[1]}`;
			const op = random() % 3;
			if (op === 0) {
				expect(urls.see(...key)).toBe(!reference.has(name));
				if (!reference.has(name)) reference.set(name, false);
			} else if (op === 1) {
				expect(urls.claim(...key)).toBe(reference.get(name) !== true);
				reference.set(name, true);
			} else expect(urls.isClaimed(...key)).toBe(reference.get(name) === true);
		}
		expect(urls.size).toBe(reference.size);
		expect(readdirSync(dir).length).toBeGreaterThan(0);
		// Spilled keys cost their filter, block index and claimed bit: far less than the table's 12–23 bytes.
		expect(urls.bytes).toBeLessThan(reference.size * 4 + 64 * 1024);
		urls.close();
		expect(existsSync(dir)).toBe(false);
	});

	it("merge runs of one size, four at a time: a lookup asks a few runs, not one per spill, and no claim is lost", () => {
		const dir = join(tempDir(), "crawl-keys");
		const urls = createUrlKeys({ dir, inMemory: 100 });
		const key = (n: number): [number, number] => [(n * 2654435761) >>> 0, (n * 40503 + 7) >>> 0];
		// 100 spills of 100 keys; every fifth key claimed while in the table, every seventh once spilled.
		for (let n = 0; n < 10_000; n++) {
			expect(urls.see(...key(n))).toBe(true);
			if (n % 5 === 0) expect(urls.claim(...key(n))).toBe(true);
			if (n >= 500 && (n - 500) % 7 === 0) expect(urls.claim(...key(n - 500))).toBe((n - 500) % 5 !== 0);
		}
		// 100 spills are 1 + 2 + 1 runs of 6,400, 1,600 and 400 keys (100 in base 4 is 1210), not 100 files.
		expect(readdirSync(dir).length).toBe(4);
		for (let n = 0; n < 10_000; n++) {
			expect(urls.see(...key(n))).toBe(false);
			expect(urls.isClaimed(...key(n))).toBe(n % 5 === 0 || (n < 9_500 && n % 7 === 0));
		}
		expect(urls.see(...key(10_000))).toBe(true);
		expect(urls.size).toBe(10_001);
		urls.close();
		expect(existsSync(dir)).toBe(false);
	});
});
