import { describe, expect, it } from "vitest";
import { hexWord } from "../../src/common/index.js";

describe("hexWord", () => {
	it("reads 8 lowercase hex digits as parseInt does, at any offset", () => {
		for (let index = 0; index < 2000; index += 1) {
			const value = Math.floor(Math.random() * 2 ** 32);
			const hex = value.toString(16).padStart(8, "0");
			expect(hexWord(`xx${hex}yy`, 2)).toBe(Number.parseInt(hex, 16));
		}
		expect(hexWord("00000000", 0)).toBe(0);
		expect(hexWord("ffffffff", 0)).toBe(2 ** 32 - 1);
	});

	it("is -1 for anything else: uppercase, other characters, too few digits", () => {
		for (const text of ["FFFFFFFF", "0000000g", "1234567", ""]) expect(hexWord(text, 0)).toBe(-1);
		// Eight digits, but only seven from the offset on.
		expect(hexWord("12345678", 1)).toBe(-1);
	});
});
