import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Parser } from "htmlparser2";
import { describe, expect, it } from "vitest";
import {
	extractLinks,
	MAX_LINK_CHARS,
	MAX_PAGE_LINKS,
	parseHtml,
	resolveUrl,
	streamLinks,
} from "../../src/extract/index.js";
import { runPageTask } from "../../src/extract/page-task.js";

/** What the tree-built reading finds: the reference the streamed one must match link for link. */
function fromTree(html: string, url: string): string[] {
	return extractLinks(parseHtml(html, url));
}

const URL_OF_PAGE = "https://shop.example/dir/page?x=1";

/** A seeded generator of integers in [0, n): the random pages are the same on every run. */
function seededRandom(seed: number): (n: number) => number {
	let state = seed;
	return (n) => {
		state = (Math.imul(state, 1103515245) + 12345) >>> 0;
		return (state >>> 8) % n;
	};
}

/** The block and product pages of test/run/block-pages. */
function fixturePages(): Array<[file: string, html: string]> {
	const dir = join(import.meta.dirname, "../run/block-pages");
	return readdirSync(dir)
		.filter((file) => file.endsWith(".html"))
		.map((file) => [file, readFileSync(join(dir, file), "utf8")]);
}

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
	"a tag name that lower-cases to link (the Kelvin sign's lower case is k)": `<lin\u212A rel="next" href="/kelvin">`,
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
		const pages = fixturePages();
		expect(pages.length).toBeGreaterThan(3);
		for (const [file, html] of pages) expect(streamLinks(html, URL_OF_PAGE), file).toEqual(fromTree(html, URL_OF_PAGE));
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
		const random = seededRandom(0x5eed);
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
		let templatesClosedEarly = 0;
		for (let page = 0; page < 3000; page++) {
			let html = "";
			for (let piece = random(40); piece > 0; piece--) {
				const roll = random(4);
				if (roll === 0) html += `</${pick(tags)}>`;
				else if (roll === 1) html += pick(texts);
				else html += `<${pick(tags)} ${pick(attributes)} ${pick(attributes)}>`;
			}
			html = html.slice(0, random(html.length + 1));
			// The one way the tree's reading and the stream's part on purpose (see "where a template ends").
			if (parserEndsTemplateEarly(html)) {
				templatesClosedEarly += 1;
				continue;
			}
			const tree = fromTree(html, URL_OF_PAGE);
			linksSeen += tree.length;
			expect(streamLinks(html, URL_OF_PAGE), html).toEqual(tree);
		}
		// The pages did have links to find, and few were left out.
		expect(linksSeen).toBeGreaterThan(600);
		expect(templatesClosedEarly).toBeLessThan(150);
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

/**
 * The Parser-based `streamLinks` this reading replaced, kept as the oracle: htmlparser2's Parser with
 * its stack of open elements (quadratic on a page of unclosed tags), and the links resolved as before.
 */
function parserStreamLinks(html: string, url: string): string[] {
	const hrefs: string[] = [];
	let baseHref: string | undefined;
	let inTemplate = 0;
	const parser = new Parser(
		{
			onopentag(name, attributes) {
				if (name === "template") inTemplate += 1;
				const href = attributes.href;
				if (href === undefined || inTemplate > 0) return;
				if (name === "a" || (name === "link" && /(?:^|\s)next(?:$|\s)/i.test(attributes.rel ?? ""))) {
					if (hrefs.length < 2 * MAX_PAGE_LINKS) hrefs.push(href);
				} else if (name === "base") baseHref ??= href;
			},
			onclosetag(name) {
				if (name === "template" && inTemplate > 0) inTemplate -= 1;
			},
		},
		{ decodeEntities: true },
	);
	parser.end(html);
	const links: string[] = [];
	const base = (baseHref !== undefined ? resolveUrl(baseHref, url) : null) ?? url;
	for (const href of hrefs) {
		if (links.length === MAX_PAGE_LINKS) break;
		if (href.length > MAX_LINK_CHARS) continue;
		const resolved = resolveUrl(href, base);
		if (resolved !== null && (resolved.startsWith("http:") || resolved.startsWith("https:"))) {
			const hash = resolved.indexOf("#");
			const link = hash < 0 ? resolved : resolved.slice(0, hash);
			if (link.length <= MAX_LINK_CHARS) links.push(link);
		}
	}
	return links;
}

/**
 * Whether htmlparser2's Parser ends a `<template>` with the end tag of an element opened outside it
 * (`<div><template></div>`): it pops the template with it, where a browser ignores that end tag and
 * `streamLinks` keeps the template open. Seen as an implied close of a template that the same event
 * ends with another element's explicit close (a self-closed `<template/>` in svg is closed at its own `>`).
 */
function parserEndsTemplateEarly(html: string): boolean {
	let templateOpenedAt = -1;
	let templateImplied = false;
	let early = false;
	const parser = new Parser(
		{
			onopentag(name) {
				templateImplied = false;
				if (name === "template") templateOpenedAt = parser.endIndex;
			},
			onclosetag(name, isImplied) {
				if (!isImplied) {
					if (templateImplied) early = true;
					templateImplied = false;
				} else if (name === "template" && parser.endIndex !== templateOpenedAt) templateImplied = true;
			},
		},
		{ decodeEntities: true },
	);
	parser.end(html);
	return early;
}

/** A page of `count` unclosed `<a href>`s: each stays open, so the Parser's stack holds them all. */
function unclosedLinks(count: number): string {
	return Array.from({ length: count }, (_, index) => `<a href="/p${index}">x`).join("");
}

/** Random pages of the markup that decides what a page's links are, and much that must not. */
function randomPages(count: number, seed: number): string[] {
	const random = seededRandom(seed);
	const pick = <T>(items: readonly T[]): T => items[random(items.length)]!;
	const linkTags = ["a", "A", "link", "LINK", "Link", "base", "BASE", "template", "TEMPLATE", "Template", "lin\u212A"];
	const otherTags = [
		"div",
		"p",
		"span",
		"li",
		"table",
		"tr",
		"body",
		"svg",
		"math",
		"foreignObject",
		"desc",
		"mi",
		"noscript",
		"iframe",
	];
	const rawText = ["script", "style", "textarea", "title", "xmp", "SCRIPT", "Style"];
	const values = [
		"/p/1",
		"../up",
		"#frag",
		"?q=1&amp;r=2",
		"&#x2F;hex",
		"&#47;dec",
		"/a?x=1&copy=2",
		"/a?x=1&copy",
		"/lt&lt",
		"/amp&amp",
		"/ampx&ampx",
		"&notin;/n",
		"/zero&#0;",
		"/far&#x110000;",
		"&#X2f;upper-x",
		"mailto:x@y.example",
		"javascript:void(0)",
		"HTTPS://Other.Example/p#f",
		" /spaced ",
		"",
		"/p/2",
		"https://cdn.example/base/",
		"next",
		"Next",
		"NEXT prev",
		"nextpage",
		"prev\tnext",
	];
	const attributeNames = ["href", "HREF", "Href", "rel", "REL", "Rel", "class", "xlink:href", "hre\u212Af"];
	const attribute = (): string => {
		const name = pick(attributeNames);
		const value = pick(values);
		switch (random(5)) {
			case 0:
				return `${name}='${value.replaceAll("'", "")}'`;
			case 1:
				return /[\s>]/.test(value) || value === "" ? name : `${name}=${value}`;
			case 2:
				return name;
			default:
				return `${name}="${value}"`;
		}
	};
	const openTag = (name: string): string => {
		let tag = `<${name}`;
		for (let index = random(4); index > 0; index--) tag += ` ${attribute()}`;
		return tag + pick([">", ">", ">", "/>", " />", "\n>"]);
	};
	const pieces: Array<() => string> = [
		() => openTag(pick(linkTags)),
		() => openTag(pick(linkTags)),
		() => `${openTag("a")}text</a>`,
		() => openTag(pick(otherTags)),
		() => `</${pick([...linkTags, ...otherTags])}${pick([">", " >", " x>"])}`,
		() => `</${pick(["template", "TEMPLATE", "a", "svg", "div"])}>`,
		() => {
			const name = pick(rawText);
			return `${openTag(name)}<a href="/raw-${name}"></${pick([name, name.toLowerCase(), "script"])}>`;
		},
		() => pick(["text", "&amp;", "&lt;a href=x&gt;", "<", ">", "\n", '"', "'", "</", "<!DOCTYPE html>", "<?xml x?>"]),
		() => pick(["<!-- <a href='/comment'> -->", "<!--->", "<!-- unclosed", "<![CDATA[<a href='/cdata'>]]>", "<!x>"]),
		() => `<template>${openTag("a")}</template>`,
		() => `<svg><a href="/svg"/><template/><a href="/svg-after"></svg>`,
	];
	const pages: string[] = [];
	for (let page = 0; page < count; page++) {
		let html = "";
		for (let piece = random(60); piece > 0; piece--) html += pick(pieces)();
		pages.push(random(4) === 0 ? html.slice(0, random(html.length + 1)) : html);
	}
	return pages;
}

describe("streamLinks reads what the Parser-based reading read", () => {
	it("six hundred random pages of links, templates, raw text, comments, entities and broken markup", () => {
		let links = 0;
		let hiddenByTemplates = 0;
		let templatesClosedEarly = 0;
		for (const html of randomPages(600, 0x11e5)) {
			if (parserEndsTemplateEarly(html)) {
				templatesClosedEarly += 1;
				continue;
			}
			const expected = parserStreamLinks(html, URL_OF_PAGE);
			expect(streamLinks(html, URL_OF_PAGE), html).toEqual(expected);
			links += expected.length;
			if (
				/<template[\s>]/i.test(html) &&
				expected.length < parserStreamLinks(html.replace(/template/gi, "span"), URL_OF_PAGE).length
			)
				hiddenByTemplates += 1;
		}
		// The pages had links to find and templates that hid some; the pages left out are few.
		expect(links).toBeGreaterThan(1000);
		expect(hiddenByTemplates).toBeGreaterThan(100);
		expect(templatesClosedEarly).toBeLessThan(100);
	});

	it("the edge cases, the repository's pages and a page of unclosed links", () => {
		const pages = [...Object.values(EDGE_CASES), ...fixturePages().map(([, html]) => html), unclosedLinks(20_000)];
		for (const html of pages)
			expect(streamLinks(html, URL_OF_PAGE), html.slice(0, 200)).toEqual(parserStreamLinks(html, URL_OF_PAGE));
	});

	const templates: Record<string, [html: string, links: string[]]> = {
		"nested templates": [
			`<template><a href="/t1"><template><a href="/t2"></template><a href="/t3"></template><a href="/out">`,
			["/out"],
		],
		"an unclosed template hides the rest of the page": [
			`<a href="/before"><div><template><p><a href="/t">`,
			["/before"],
		],
		"a stray </template> closes nothing": [
			`</template><a href="/one"></TEMPLATE ><template></template></template><a href="/two">`,
			["/one", "/two"],
		],
		"a </template> closes the elements opened in it": [`<template><div><span></template><a href="/out">`, ["/out"]],
		"<template/> opens a template in HTML": [`<template/><a href="/hidden">`, []],
		"<template/> in svg is svg's own element, closed at once": [
			`<svg><template/><a href="/svg"></svg><template/><a href="/hidden">`,
			["/svg"],
		],
		"<template/> in svg's foreignObject is HTML again": [`<svg><foreignObject><template/><a href="/hidden">`, []],
		"upper-case and spaced template tags": [`<TEMPLATE><a href="/t"></Template ><a href="/out">`, ["/out"]],
		"a template inside raw text or a comment is text": [
			`<script><template></script><!-- <template> --><textarea><template></textarea><a href="/out">`,
			["/out"],
		],
	};

	for (const [name, [html, paths]] of Object.entries(templates))
		it(`templates: ${name}`, () => {
			const links = paths.map((path) => `https://shop.example${path}`);
			expect(streamLinks(html, URL_OF_PAGE)).toEqual(links);
			expect(parserStreamLinks(html, URL_OF_PAGE)).toEqual(links);
		});

	it("where a template ends: only at </template>, as in a browser, not at the end tag of an element opened outside it as the Parser has it", () => {
		const pages: Array<[html: string, browser: string[], parser: string[]]> = [
			[`<div><template><a href="/in"></div><a href="/after"></template><a href="/out">`, ["/out"], ["/after", "/out"]],
			[`<body><template><a href="/in"></body><a href="/after">`, [], ["/after"]],
			[`<span><template><base href="/t/"></span><base href="/b/"></template><a href="x">`, ["/dir/x"], ["/b/x"]],
		];
		for (const [html, browser, parser] of pages) {
			expect(parserEndsTemplateEarly(html)).toBe(true);
			expect(streamLinks(html, URL_OF_PAGE)).toEqual(browser.map((path) => `https://shop.example${path}`));
			expect(parserStreamLinks(html, URL_OF_PAGE)).toEqual(parser.map((path) => `https://shop.example${path}`));
		}
	});

	it("a hostile page of 400,000 unclosed <a href>s is read in linear time: no stack of open elements", () => {
		// The Parser shifted its stack on every open tag: ~14 s for this page on the 2-core machine, 0.3 s now.
		const html = unclosedLinks(400_000);
		const started = performance.now();
		const links = streamLinks(html, URL_OF_PAGE);
		const elapsed = performance.now() - started;
		expect(links).toHaveLength(MAX_PAGE_LINKS);
		expect(links.at(-1)).toBe(`https://shop.example/p${MAX_PAGE_LINKS - 1}`);
		expect(elapsed).toBeLessThan(3000);
	});

	it("reading a page of unclosed tags shifts no array (the Parser unshifts its stack once a tag)", () => {
		const unshift = Array.prototype.unshift;
		let calls = 0;
		Array.prototype.unshift = function (this: unknown[], ...items: unknown[]) {
			calls += 1;
			return unshift.apply(this, items);
		};
		try {
			streamLinks(unclosedLinks(2000), URL_OF_PAGE);
		} finally {
			Array.prototype.unshift = unshift;
		}
		expect(calls).toBe(0);
	});
});
