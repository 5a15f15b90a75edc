import { describe, expect, it } from "vitest";
import { compileUserRegex, userRegexProblem } from "../../src/common/index.js";

/** What V8 and the RE2 translation find for the same pattern and text: first match and every match. */
function both(source: string, text: string) {
	const re2 = compileUserRegex(source);
	const native = new RegExp(source, "gu");
	return {
		re2: [re2.exec(text)?.slice(), [...re2.matchAll(text)].map((match) => match.slice())],
		native: [new RegExp(source, "u").exec(text)?.slice(), [...text.matchAll(native)].map((match) => match.slice())],
	};
}

describe("job-file regexes keep JavaScript's meaning on RE2", () => {
	it.each([
		["\\s matches a no-break space and other Unicode spaces", "^\\d+\\s€$", "12\u00a0€"],
		["\\S inside a class", "[\\S]+", "a\u2003b c"],
		["[^\\s] outside", "[^\\s]+", "x\u3000y"],
		[". stops at \\r as well as \\n", "price: (.*)", "price: 12\r\nnext"],
		["\\u escapes, and a surrogate pair", "caf\\u00e9 \\uD83D\\uDE00", "café 😀"],
		["\\u{…} escapes", "\\u{1F600}+", "😀😀"],
		["[^] is any character", "a[^]b", "a\nb"],
		["named groups and optional groups", "(?<sku>SKU-(\\d+))(x)?", "SKU-12 SKU-345"],
		["every match with its first group, empty matches stepping on", "(\\d*)", "1a22b"],
		["a class with ] escaped and [ literal", "[\\][]+", "a[]]b"],
	])("%s", (_name, source, text) => {
		const { re2, native } = both(source, text);
		expect(re2).toEqual(native);
	});

	it("refuses lookaround and backreferences with the construct named", () => {
		expect(userRegexProblem("(?<=\\$)\\d+")).toMatch(
			/^lookbehind `\(\?<=…\)` is not supported: job-file regexes use RE2/,
		);
		expect(userRegexProblem("(?<!a)b")).toMatch(/^negative lookbehind/);
		expect(userRegexProblem("a(?=b)")).toMatch(/^lookahead/);
		expect(userRegexProblem("(?<q>['\"]).*\\k<q>")).toMatch(/^backreference `\\k<q>`/);
		expect(userRegexProblem("(a)\\1")).toMatch(/^backreference `\\1`/);
		// A syntax error quotes what the user wrote, never the translation.
		expect(userRegexProblem("\\s(")).toBe("missing closing )");
		expect(userRegexProblem("(?<name>a)[\\d-z]")).toBeNull();
	});

	it("a pattern up to 262,144 characters compiles; a longer one is refused by its length, not compiled", () => {
		const alternation = (count: number) => Array.from({ length: count }, (_, i) => `sku-${i}`).join("|");
		const longest = alternation(30_000)
			.slice(0, 262_144)
			.replace(/\|[^|]*$/, "");
		expect(longest.length).toBeLessThanOrEqual(262_144);
		expect(compileUserRegex(longest).test("sku-29")).toBe(true);
		expect(userRegexProblem(`${"a".repeat(262_144)}b`)).toBe(
			"too long (262,145 characters, more than the 262,144 a job file's regex may have)",
		);
	});

	it("a pattern that backtracks exponentially on V8 answers in linear time", () => {
		const started = performance.now();
		expect(compileUserRegex("^(\\w+\\s?)+$").test(`${"a".repeat(5_000)}!`)).toBe(false);
		expect(performance.now() - started).toBeLessThan(1_000);
	});
});
