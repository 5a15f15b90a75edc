import { describe, expect, it } from "vitest";
import { parseRobotsRules, ROBOTS_MATCH_BUDGET } from "../../src/crawl/robots-rules.js";

const O = "https://shop.example";

describe("robots.txt rules (RFC 9309 matching, bounded)", () => {
	const rules = parseRobotsRules(
		[
			"User-agent: *",
			"Disallow: /",
			"",
			"User-agent: Other",
			"User-agent: ScrapeJob/2.0 # comment",
			"Disallow: /private/",
			"Allow: /private/open",
			"Disallow: /*.pdf$",
			"Disallow: /a*b*c",
			"Allow: /tie",
			"Disallow: /tie",
			"Disallow: /caf%c3%a9",
			"Disallow: /ünï",
			"Crawl-delay: 2.5",
		].join("\r\n"),
	);

	it.each([
		["/", true],
		["/private/x", false],
		["/private/open/x", true],
		["/doc.pdf", false],
		["/doc.pdf?page=2", true],
		["/x/doc.pdf", false],
		["/a-b-c", false],
		["/a-c-b", true],
		["/abcx", false],
		["/tie", true],
		["/caf%C3%A9/menu", false],
		["/%C3%BCn%C3%AF", false],
	])("scrapejob's group: %s allowed %s", (path, allowed) => {
		expect(rules.allows(`${O}${path}`, "scrapejob")).toBe(allowed);
	});

	it("another agent falls back to *; Crawl-delay per group", () => {
		expect(rules.allows(`${O}/anything`, "somebot")).toBe(false);
		expect(rules.crawlDelay("scrapejob")).toBe(2.5);
		expect(rules.crawlDelay("somebot")).toBeUndefined();
		expect(parseRobotsRules("").allows(`${O}/x`, "scrapejob")).toBe(true);
	});

	it("hostile wildcard rules against a long path stop at the budget, in milliseconds", () => {
		const hostile = parseRobotsRules(`User-agent: *\n${"Disallow: /*a*a*a*a*a*a*a*a*b\n".repeat(20_000)}`);
		const started = performance.now();
		expect(hostile.allows(`${O}/${"a".repeat(100_000)}`, "scrapejob")).toBe("budget");
		expect(hostile.allows(`${O}/${"a".repeat(100)}`, "scrapejob")).toBe(true);
		expect(performance.now() - started).toBeLessThan(2_000);
		expect(ROBOTS_MATCH_BUDGET).toBeLessThan(100_000 * 20_000);
	});
});
