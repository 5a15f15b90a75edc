import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { extractLinks, MAX_LINK_CHARS, MAX_PAGE_LINKS, parseHtml, streamLinks } from "../../src/extract/index.js";
import { runPageTask } from "../../src/extract/page-task.js";

/** What the tree-built reading finds: the reference the streamed one must match link for link. */
function fromTree(html: string, url: string): string[] {
	return extractLinks(parseHtml(html, url));
}

const URL_OF_PAGE = "https://shop.example/dir/page?x=1";

const EDGE_CASES: Record<string, string> = {
	"base after the links it applies to": `<a href="a">a</a><p><base href="/late/"><a href="b">b</a>`,
	"two bases: the first with href wins": `<base target="_top"><base href="https://cdn.example/one/"><base href="/two/"><a href="x">x</a>`,
	"a relative base": `<base href="../up/"><a href="x">x</a>`,
	"a base that is no URL": `<base href="http://[bad"><a href="x">x</a>`,
	"rel tokens": `<link rel="NEXT" href="1"><link rel="prev next" href="2"><link rel="nextpage" href="3"><link rel="
next" href="4"><link rel="stylesheet" href="5"><link href="6"><link rel="next">`,
	"entities and whitespace in href": `<a href="/q?a=1&amp;b=2&lt;">q</a><a href="  /trimmed  ">t</a><a href="&#x2F;hex">h</a><a href="">e</a>`,
	"schemes and fragments": `<a href="mailto:a@b.example">m</a><a href="javascript:void(0)">j</a><a href="#top">f</a><a href="ftp://x.example/">f</a><a href="HTTPS://Other.Example/p#frag">o</a>`,
	"upper-case tags and attributes": `<A HREF="/upper">u</A><LINK REL="next" HREF="/next">`,
	"duplicate attributes": `<a href="/first" href="/second">d</a>`,
	"raw text elements": `<script>var s = '<a href="/in-script">';</script><style>a{}</style><textarea><a href="/in-textarea"></textarea><title><a href="/in-title"></title><a href="/after">a</a>`,
	"comments and CDATA": `<!-- <a href="/commented"> --><![CDATA[<a href="/cdata">]]><a href="/real">r</a>`,
	"foreign content and templates": `<svg><a href="/svg-a"></a><a xlink:href="/xlink"></a></svg><template><a href="/tpl"></a></template><noscript><a href="/noscript"></a></noscript>`,
	"inside templates, nested and unclosed": `<template><div><a href="/t1"><template><a href="/t2"></template><a href="/t3"></div></template><a href="/out"><template href="/self"><base href="/in-template/"><a href="/t4">`,
	"a template that is itself a link's child": `<a href="/outer"><template><a href="/inner"></a></template></a><a href="/after">`,
	"unclosed and broken markup": `<div><a href="/one"><a href="/two"<a href="/three">x</div></a><a href='/single'>s<a href=/bare>b<a href="/unterminated`,
	"long links": `<a href="/${"x".repeat(MAX_LINK_CHARS)}">l</a><a href="/${"y".repeat(MAX_LINK_CHARS - 40)}">near</a><a href="/short">s</a>`,
	"no links": `<p>nothing here</p>`,
	"empty page": ``,
};

describe("streamLinks reads the links extractLinks reads, without a tree", () => {
	for (const [name, html] of Object.entries(EDGE_CASES))
		it(name, () => {
			expect(streamLinks(html, URL_OF_PAGE)).toEqual(fromTree(html, URL_OF_PAGE));
		});

	it("the repository's block and product pages", () => {
		const dir = join(import.meta.dirname, "../run/block-pages");
		const pages = readdirSync(dir).filter((file) => file.endsWith(".html"));
		expect(pages.length).toBeGreaterThan(3);
		for (const file of pages) {
			const html = readFileSync(join(dir, file), "utf8");
			expect(streamLinks(html, URL_OF_PAGE), file).toEqual(fromTree(html, URL_OF_PAGE));
		}
	});

	it("a page's links are read up to MAX_PAGE_LINKS, of its first twice as many hrefs", () => {
		const many = Array.from({ length: MAX_PAGE_LINKS + 5 }, (_, index) => `<a href="/p/${index}"></a>`).join("");
		const capped = streamLinks(many, URL_OF_PAGE);
		expect(capped).toHaveLength(MAX_PAGE_LINKS);
		expect(capped.at(-1)).toBe(`https://shop.example/p/${MAX_PAGE_LINKS - 1}`);
		expect(capped).toEqual(fromTree(many, URL_OF_PAGE));
		// Hrefs that are no links count toward the hrefs read: past twice the bound, nothing more is looked at.
		const mail = '<a href="mailto:x@y.example"></a>'.repeat(MAX_PAGE_LINKS * 2 - 3);
		const late = `${mail}<a href="/one"></a><a href="/two"></a><a href="/three"></a><a href="/four"></a>`;
		expect(streamLinks(late, URL_OF_PAGE)).toEqual([
			"https://shop.example/one",
			"https://shop.example/two",
			"https://shop.example/three",
		]);
		expect(fromTree(late, URL_OF_PAGE)).toEqual(streamLinks(late, URL_OF_PAGE));
	});

	it("three thousand random pages of tags, attributes and text cut anywhere", () => {
		let seed = 0x5eed;
		const random = (n: number) => {
			seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
			return (seed >>> 8) % n;
		};
		const pick = <T>(items: readonly T[]): T => items[random(items.length)]!;
		const tags = ["a", "A", "link", "base", "div", "p", "script", "svg", "template", "textarea", "span", "LINK"];
		const attributes = [
			'href="/h"',
			"href=rel",
			'rel="next"',
			'rel="NEXT prev"',
			"href='../up'",
			'href="#f"',
			"href",
			'rel="next"',
		];
		const texts = ["text", "&amp;", "<!--", "-->", "<![CDATA[", "]]>", '"', "'", ">", "</", "\n"];
		let linksSeen = 0;
		for (let page = 0; page < 3000; page++) {
			let html = "";
			for (let piece = random(40); piece > 0; piece--) {
				const roll = random(4);
				if (roll === 0) html += `</${pick(tags)}>`;
				else if (roll === 1) html += pick(texts);
				else html += `<${pick(tags)} ${pick(attributes)} ${pick(attributes)}>`;
			}
			html = html.slice(0, random(html.length + 1));
			const tree = fromTree(html, URL_OF_PAGE);
			linksSeen += tree.length;
			expect(streamLinks(html, URL_OF_PAGE), html).toEqual(tree);
		}
		// The pages did have links to find.
		expect(linksSeen).toBeGreaterThan(600);
	});
});

describe("a page's task reads its links without a tree unless something else needs one", () => {
	const html = `<h1>Lamp</h1><span class="price">12</span><a href="/p/2">next</a><link rel="next" href="/list?page=2">`;
	const links = ["https://shop.example/p/2", "https://shop.example/list?page=2"];

	it("links alone, links with regex fields, links with CSS fields, links with CSS block signatures: the same links", () => {
		const base = { html, url: "https://shop.example/p/1", links: true } as const;
		expect(runPageTask({ ...base, fields: null })).toEqual({ links });
		expect(runPageTask({ ...base, fields: JSON.stringify({ price: { regex: 'price">(\\d+)' } }) })).toEqual({
			links,
			data: { price: "12" },
		});
		expect(runPageTask({ ...base, fields: JSON.stringify({ name: "h1" }) })).toEqual({ links, data: { name: "Lamp" } });
		expect(runPageTask({ ...base, fields: null, blockCss: ["form#captcha"] })).toEqual({ links });
		expect(runPageTask({ ...base, fields: null, blockCss: ["span.price"] })).toEqual({ links, blocked: "span.price" });
	});
});
