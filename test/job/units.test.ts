// biome-ignore-all lint/suspicious/noTemplateCurlyInString: job files spell variables as ${NAME}
import { describe, expect, it } from "vitest";
import { canonicalJson, didYouMean, editDistance } from "../../src/common/index.js";
import { createTargetKeySet } from "../../src/job/dedupe.js";
import { expandString } from "../../src/job/expand-env.js";
import { formatProblem } from "../../src/job/index.js";
import { createTargetKey, identityOptionsJson } from "../../src/job/target-id.js";

describe("editDistance (optimal string alignment)", () => {
	it.each([
		["concurrency", "concurrency", 0],
		["concurency", "concurrency", 1],
		["mdoe", "mode", 1],
		["tragets", "targets", 1],
		["", "abc", 3],
		["kitten", "sitting", 3],
	])("%s → %s = %i", (a, b, distance) => {
		expect(editDistance(a, b)).toBe(distance);
		expect(editDistance(b, a)).toBe(distance);
	});
});

describe("didYouMean", () => {
	const keys = ["name", "concurrency", "max_credits", "defaults", "targets", "sources", "output", "retry", "id", "url"];
	it.each([
		["concurency", "concurrency"],
		["Name", "name"],
		["max_credit", "max_credits"],
		["taregts", "targets"],
		["sorces", "sources"],
		["ur", "url"],
		["idd", "id"],
	])("%s → %s", (word, expected) => {
		expect(didYouMean(word, keys)).toBe(expected);
	});

	it.each([["colour"], ["xyz"], ["ab"], ["budget"]])("%s → no suggestion", (word) => {
		expect(didYouMean(word, keys)).toBeUndefined();
	});
});

describe("expandString", () => {
	const env = { HOST: "shop.example", EMPTY: "" };
	it.each([
		["https://${HOST}/a", "https://shop.example/a", []],
		["${HOST}${HOST}", "shop.exampleshop.example", []],
		["a${EMPTY}b", "ab", []],
		["$${HOST}", "${HOST}", []],
		["cost: $5 and $HOST", "cost: $5 and $HOST", []],
		["${MISSING}/x", "${MISSING}/x", ["0 environment variable MISSING is not set"]],
		[
			"x ${bad-name} y",
			"x ${bad-name} y",
			[
				'2 invalid variable reference "${bad-name}": write ${NAME} with letters, digits and _ (or $${ for a literal ${)',
			],
		],
		[
			"open ${HOST",
			"open ${HOST",
			['5 invalid variable reference "${HOST": write ${NAME} with letters, digits and _ (or $${ for a literal ${)'],
		],
	])("%s", (input, value, problems) => {
		const result = expandString(input, env);
		expect(result.value).toBe(value);
		expect(result.problems.map((p) => `${p.index} ${p.message}`)).toEqual(problems);
	});
});

describe("canonicalJson and identity options", () => {
	it("sorts keys at every depth and drops undefined members", () => {
		expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe(
			'{"a":{"d":[1,{"y":2,"z":1}]},"b":1}',
		);
	});

	it("target ids do not change between versions: earlier runs, stores and fleets are found by them", () => {
		// Computed by the version that first wrote them; a change here orphans every user's history.
		const id = (url: string, options: Parameters<typeof identityOptionsJson>[0]) =>
			createTargetKey(url, identityOptionsJson(options)).id;
		expect(id("https://shop.example/p/1?b=2&a=1", { proxy_country: "US", mode: "browser" })).toBe("1d62c5413dd4bc31");
		expect(id("https://shop.example/p/1", {})).toBe("1cbf5e58180c18f1");
		const scheme = { b: [1, { z: 1, y: undefined }], a: "x" } as unknown as string;
		expect(id("https://shop.example/p/1", { mode: "auto", extract_scheme: scheme })).toBe("8e8fc71c6a50a1af");
	});

	it("spells out the default mode, so written and implied auto are one identity", () => {
		expect(identityOptionsJson({})).toBe('{"mode":"auto"}');
		expect(identityOptionsJson({ mode: "auto" })).toBe(identityOptionsJson({}));
		expect(identityOptionsJson({ proxy_country: "US", mode: "browser" })).toBe(
			'{"mode":"browser","proxy_country":"US"}',
		);
	});
});

describe("createTargetKeySet", () => {
	it("adds, refuses repeats, grows past its first table, keeps (0, 0) apart from empty slots", () => {
		const set = createTargetKeySet(16);
		expect(set.add(0, 0)).toBe(true);
		expect(set.add(0, 0)).toBe(false);
		for (let i = 1; i <= 10_000; i++) expect(set.add(i * 2654435761, i)).toBe(true);
		for (let i = 1; i <= 10_000; i++) expect(set.add(i * 2654435761, i)).toBe(false);
		expect(set.size).toBe(10_001);
		// 10,001 keys at a load factor ≤ 0.7 need 16,384 slots of 8 bytes.
		expect(set.bytes).toBe(16_384 * 8);
	});
});

describe("formatProblem", () => {
	it("is file:line:col message, and says warning for warnings", () => {
		expect(formatProblem({ file: "a.yaml", line: 3, col: 7, message: "x", severity: "error" })).toBe("a.yaml:3:7 x");
		expect(formatProblem({ file: "u.csv", line: 17, col: 1, message: "y", severity: "warning" })).toBe(
			"u.csv:17:1 warning: y",
		);
	});
});
