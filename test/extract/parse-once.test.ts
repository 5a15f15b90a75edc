import { describe, expect, it } from "vitest";
import {
	compileFields,
	extractFields,
	extractLinks,
	extractPage,
	MAX_LIST_ITEMS,
	parseHtml,
} from "../../src/extract/index.js";

function plan(spec: Parameters<typeof compileFields>[0]) {
	const compiled = compileFields(spec);
	if (!compiled.ok) throw new Error(JSON.stringify(compiled.problems));
	return compiled.plan;
}

const PAGE = `<!doctype html><html><head>
<meta property="og:title" content="  OG   title ">
<script type="application/ld+json">{ broken json</script>
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[
  {"@type":"WebPage","name":"page"},
  {"@type":"Product","name":"Lamp","brand":{"name":"Acme"},"offers":[{"price":"1.299,00","priceCurrency":"EUR"},{"price":"9"}]}
]}</script></head>
<body><h1>  Lamp
   <small>deluxe</small> </h1>
<a href="/a#top">a</a> <a href="b?x=1">b</a> <a href="mailto:x@y.example">mail</a> <a href="https://other.example/c">c</a>
</body></html>`;

describe("one parse serves fields and links", () => {
	it("JSON-LD: @graph and lists are searched, a broken block is skipped; meta by property; text collapsed", () => {
		const page = parseHtml(PAGE, "https://shop.example/dir/page");
		const data = extractFields(
			page,
			plan({
				name: { jsonld: "name" },
				brand: { jsonld: "brand.name" },
				price: { jsonld: "offers.price", type: "number" },
				og: { meta: "OG:TITLE" },
				heading: "h1",
				missing: { jsonld: "gtin13" },
			}),
		);
		expect(data).toEqual({
			name: "page",
			brand: "Acme",
			price: 1299,
			og: "OG title",
			heading: "Lamp deluxe",
			missing: null,
		});
		expect(extractLinks(page)).toEqual([
			"https://shop.example/a",
			"https://shop.example/dir/b?x=1",
			"https://other.example/c",
		]);
	});

	it("regex-only plans read the raw body without building a tree", () => {
		expect(
			extractPage(PAGE, "https://shop.example/", plan({ currency: { regex: '"priceCurrency":"(\\w+)"' } })),
		).toEqual({
			currency: "EUR",
		});
	});

	it("type html is the element's outer HTML, entities kept valid (only markup characters escaped)", () => {
		const page = parseHtml('<div class="x"><p>Fish &amp; chips &lt;3 — café</p></div>', "https://shop.example/");
		expect(extractFields(page, plan({ block: { css: ".x", type: "html" } }))).toEqual({
			block: '<div class="x"><p>Fish &amp; chips &lt;3 — café</p></div>',
		});
	});

	it("an `all: true` list keeps its first 10,000 items, by regex and by CSS, in document order", () => {
		expect(MAX_LIST_ITEMS).toBe(10_000);
		const items = Array.from({ length: 25_000 }, (_, i) => `<li>i${i};</li>`).join("");
		const page = parseHtml(`<ul>${items}</ul>`, "https://shop.example/");
		const data = extractFields(
			page,
			plan({ byRegex: { regex: "i(\\d+);", all: true }, byCss: { css: "li", all: true } }),
		);
		const expected = Array.from({ length: 10_000 }, (_, i) => `${i}`);
		expect(data.byRegex).toEqual(expected);
		expect(data.byCss).toEqual(expected.map((i) => `i${i};`));
	});
});
