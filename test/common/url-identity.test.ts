import { describe, expect, it } from "vitest";
import { normalizeUrl, urlIdentity } from "../../src/common/index.js";
import { shardOf } from "../../src/job/index.js";

/** [as written, its identity] */
const TABLE: ReadonlyArray<readonly [string, string]> = [
	["https://x.example/p", "https://x.example/p"],
	["https://x.example/p#frag", "https://x.example/p"],
	["HTTPS://X.Example/p", "https://x.example/p"],
	["https://x.example:443/p", "https://x.example/p"],
	["http://x.example:80/p", "http://x.example/p"],
	["http://x.example:443/p", "http://x.example:443/p"],
	["https://x.example", "https://x.example/"],
	["https://x.example?q=1", "https://x.example/?q=1"],
	["https://x.example/a/./b/../p", "https://x.example/a/p"],
	["https://x.example/%7euser/%41%2d%5F%2e", "https://x.example/~user/A-_."],
	["https://x.example/a%2fb%c3%a9", "https://x.example/a%2Fb%C3%A9"],
	["https://x.example/p?b=2&a=1&b=1", "https://x.example/p?a=1&b=2&b=1"],
	["https://x.example/p?q=x%26y%3d&r=%31", "https://x.example/p?q=x%26y%3D&r=1"],
	["https://x.example/p?", "https://x.example/p"],
	["https://user:secret@x.example/p", "https://x.example/p"],
	["https://x.example/docs/", "https://x.example/docs/"],
	["https://x.example/docs", "https://x.example/docs"],
	["https://x.example/P", "https://x.example/P"],
];

describe("urlIdentity: one spelling per page (RFC 3986 §6.2.2, fragment dropped, query sorted by name)", () => {
	it.each(TABLE)("%s → %s", (written, identity) => {
		expect(urlIdentity(written)).toBe(identity);
		// An identity is its own identity.
		expect(urlIdentity(identity)).toBe(identity);
	});

	it("another scheme is another page; what is not an http(s) URL is kept as written", () => {
		expect(urlIdentity("http://x.example/p")).not.toBe(urlIdentity("https://x.example/p"));
		expect(normalizeUrl("mailto:a@x.example")).toBeNull();
		expect(urlIdentity("not a url")).toBe("not a url");
	});
});

describe("shardOf: every spelling of a page lands in one shard", () => {
	const spellings = [
		"https://x.example/p#frag",
		"HTTPS://X.EXAMPLE/p",
		"https://x.example:443/p",
		"https://x.example/./p",
	];
	it.each([2, 3, 7, 16])("of %i shards, by host and by url", (count) => {
		for (const by of ["host", "url"] as const) {
			const shards = new Set(spellings.map((url) => shardOf(url, count, by)));
			expect(shards.size, `${by}: ${[...shards].join(",")}`).toBe(1);
			expect([...shards][0]).toBe(shardOf("https://x.example/p", count, by));
		}
	});

	it("by url, a query written in another order is the same page", () => {
		const pages = Array.from({ length: 40 }, (_, index) => index);
		for (const index of pages) {
			expect(shardOf(`https://x.example/p?b=${index}&a=1#top`, 7, "url")).toBe(
				shardOf(`https://x.example/p?a=1&b=${index}`, 7, "url"),
			);
		}
	});
});
