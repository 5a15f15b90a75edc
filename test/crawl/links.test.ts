import { describe, expect, it } from "vitest";
import { stripUrlCredentials } from "../../src/common/index.js";
import { createLinkScope, normalizeUrl, withSeedCredentials } from "../../src/crawl/index.js";
import { extractLinks, parseHtml } from "../../src/extract/index.js";

describe("normalizeUrl", () => {
	it("gives one spelling per page: scheme and host case, default port, fragment, query order", () => {
		expect(normalizeUrl("HTTP://Example.COM:80/a/b?z=1&a=2&a=1#frag")).toBe("http://example.com/a/b?a=2&a=1&z=1");
		expect(normalizeUrl("https://example.com:443")).toBe("https://example.com/");
		expect(normalizeUrl("https://example.com:8443/x/../y/./z")).toBe("https://example.com:8443/y/z");
		expect(normalizeUrl("https://example.com/p?")).toBe("https://example.com/p");
		// A host's trailing dot is kept (docs/behaviour.md): another name to the server, another page here.
		expect(normalizeUrl("https://Example.COM./p")).toBe("https://example.com./p");
	});

	it("follows RFC 3986 §6.2.2: hex in upper case, unreserved characters decoded, reserved ones kept", () => {
		const one = ["/v/~user", "/v/%7Euser", "/v/%7euser"].map((path) => normalizeUrl(`http://h.test${path}`));
		expect(new Set(one)).toEqual(new Set(["http://h.test/v/~user"]));
		expect(normalizeUrl("http://h.test/v/%41")).toBe("http://h.test/v/A");
		expect(normalizeUrl("http://h.test/p?a=%31")).toBe(normalizeUrl("http://h.test/p?a=1"));
		expect(normalizeUrl("http://h.test/p?b=%31&a=%2d")).toBe("http://h.test/p?a=-&b=1");
		expect(normalizeUrl("http://h.test/a%2fb%c3%a9?q=x%26y%3d")).toBe("http://h.test/a%2Fb%C3%A9?q=x%26y%3D");
	});

	it("drops userinfo: the page's identity carries no credentials; the fetch gets its seed's back", () => {
		expect(normalizeUrl("http://alice:S3cret@h.test/a")).toBe("http://h.test/a");
		expect(withSeedCredentials("http://h.test/a", "http://alice:S3cret@h.test/links")).toBe(
			"http://alice:S3cret@h.test/a",
		);
		expect(withSeedCredentials("http://other.test/a", "http://alice:S3cret@h.test/links")).toBe("http://other.test/a");
		expect(withSeedCredentials("http://h.test/a", "http://h.test/links")).toBe("http://h.test/a");
		// Map/search answers are journalled (discovery.jsonl) without them too.
		expect(stripUrlCredentials("https://bob:pw@h.test/x?u=a@b")).toBe("https://h.test/x?u=a@b");
		expect(stripUrlCredentials("https://h.test/x?u=a@b")).toBe("https://h.test/x?u=a@b");
	});

	it("keeps the trailing slash as written (the documented rule) and refuses what is not http(s)", () => {
		expect(normalizeUrl("https://example.com/docs")).not.toBe(normalizeUrl("https://example.com/docs/"));
		expect(normalizeUrl("mailto:someone@example.com")).toBeNull();
		expect(normalizeUrl("not a url")).toBeNull();
	});
});

describe("link scope", () => {
	it("host: the seed's host with its port; domain: the registrable domain (public suffix list); any", () => {
		const host = createLinkScope("host");
		host.addSeed(new URL("https://shop.example.co.uk/"));
		expect(host.allows(new URL("https://shop.example.co.uk/x"))).toBe(true);
		expect(host.allows(new URL("https://shop.example.co.uk:8443/x"))).toBe(false);
		expect(host.allows(new URL("https://www.example.co.uk/x"))).toBe(false);

		const domain = createLinkScope("domain");
		domain.addSeed(new URL("https://shop.example.co.uk/"));
		expect(domain.allows(new URL("https://www.example.co.uk/x"))).toBe(true);
		// co.uk is a public suffix: another registrant's site is another domain.
		expect(domain.allows(new URL("https://other.co.uk/x"))).toBe(false);

		expect(createLinkScope("any").allows(new URL("https://anything.example/"))).toBe(true);
	});
});

describe("extractLinks", () => {
	it("reads <a href> and <link rel=next>, resolved against <base href>, fragments dropped, http(s) only", () => {
		const page = parseHtml(
			`<html><head><base href="/docs/"><link rel="Next" href="page-2"><link rel="stylesheet" href="x.css"></head>
			<body><a href="intro#top">i</a><a href="/abs">a</a><a href="mailto:x@y.z">m</a><a href="javascript:void(0)">j</a></body></html>`,
			"https://example.com/start/here",
		);
		expect(extractLinks(page)).toEqual([
			"https://example.com/docs/page-2",
			"https://example.com/docs/intro",
			"https://example.com/abs",
		]);
	});
});
