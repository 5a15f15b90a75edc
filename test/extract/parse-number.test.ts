import { describe, expect, it } from "vitest";
import { parseNumber } from "../../src/extract/index.js";

describe("parseNumber: prices as shops print them", () => {
	it.each([
		["$1,299.00", 1299],
		["1.299,00 €", 1299],
		["1 299,00", 1299],
		["1\u00a0299,50 Kč", 1299.5],
		["CHF 1'299.95", 1299.95],
		["€ 12,5", 12.5],
		["1,299", 1299],
		["1,5", 1.5],
		["1.5", 1.5],
		["1,299,000", 1_299_000],
		["1.299.000", 1_299_000],
		["-4.50", -4.5],
		["-$4.50", -4.5],
		["\u22124,50 €", -4.5],
		["($12.00)", -12],
		["Price: 80.19 USD", 80.19],
		["3 items", 3],
		["2024-05-01", 2024],
		[".99", 0.99],
		["$.99", 0.99],
		["Now only .99!", 0.99],
		["-.5", -0.5],
		["€ ,50", 0.5],
		["No.5", 5],
		["free", null],
		["", null],
	])("%j -> %j", (text, expected) => {
		expect(parseNumber(text)).toBe(expected);
	});
});
