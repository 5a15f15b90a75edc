import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createIdSet } from "../../src/run/records/compact-id-set.js";

const hexId = (n: number) => createHash("sha256").update(String(n)).digest("hex").slice(0, 16);

describe("compact id set", () => {
	it("holds derived hex ids exactly through growth", () => {
		const set = createIdSet();
		for (let n = 0; n < 200_000; n += 2) set.add(hexId(n));
		expect(set.size).toBe(100_000);
		for (let n = 0; n < 2_000; n += 1) expect(set.has(hexId(n))).toBe(n % 2 === 0);
		set.add(hexId(0));
		expect(set.size).toBe(100_000);
	});

	it("keeps user-chosen ids and the all-zero id too", () => {
		const set = createIdSet();
		set.add("sku-1");
		set.add("0000000000000000");
		expect(set.has("sku-1")).toBe(true);
		expect(set.has("sku-2")).toBe(false);
		expect(set.has("0000000000000000")).toBe(true);
		expect(set.has("1000000000000000")).toBe(false);
		expect(set.size).toBe(2);
	});
});
