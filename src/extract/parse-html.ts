import type { AnyNode, Document } from "domhandler";
import type { TokenizerCallbacks } from "htmlparser2";
import { domutils, htmlparser2 } from "./html-libraries.js";
import { type CompiledSelector, lazyCss, selectEvery, selectFirst } from "./select.js";

/**
 * One parsed page. Parse once, then read fields (`extractFields`) and links (`extractLinks`) from
 * the same tree: the parse is most of the cost, so a page is never parsed twice.
 */
export interface ParsedPage {
	readonly document: Document;
	/** The raw HTML, for `regex` fields. */
	readonly html: string;
	/** Absolute page URL: `url` fields and links are resolved against it (or a `<base href>`). */
	readonly url: string;
	/** JSON-LD blocks, parsed on first use only. */
	jsonLd?: unknown[];
}

/**
 * Parse an HTML page with htmlparser2 (forgiving, like browsers are with broken markup). Entities
 * are decoded; tag and attribute names lower-cased.
 */
export function parseHtml(html: string, url: string): ParsedPage {
	return { document: htmlparser2().parseDocument(html, { decodeEntities: true }), html, url };
}

/** An element's text: every descendant text node, whitespace runs collapsed to one space, trimmed. */
export function elementText(node: AnyNode): string {
	return collapseWhitespace(domutils().textContent(node));
}

export function collapseWhitespace(text: string): string {
	return text.replace(/\s+/g, " ").trim();
}

const LINKS = lazyCss('a[href], link[rel~="next" i][href]');
const BASE = lazyCss("base[href]");

/**
 * A link longer than this is no page's address (sitemaps.org caps a `<loc>` at 2,048 characters, servers
 * refuse request lines past ~8 KiB): left out, so a hostile page cannot have a crawl pay to follow it.
 */
export const MAX_LINK_CHARS = 8 * 1024;

/**
 * A page's links read at most (of its first twice as many `href`s): past them the page's links are left
 * out, so one page cannot hold its worker, the run's memory or the frontier with millions of them.
 */
export const MAX_PAGE_LINKS = 100_000;
const MAX_PAGE_HREFS = 2 * MAX_PAGE_LINKS;

/**
 * Every `<a href>` and `<link rel=next href>` of the page, resolved against the page URL (or its
 * `<base href>`), fragment dropped, in document order (duplicates kept: the caller normalizes and
 * dedupes), up to `MAX_PAGE_LINKS`. Links that are not http(s), or longer than `MAX_LINK_CHARS`, are dropped.
 */
export function extractLinks(page: ParsedPage): string[] {
	const hrefs: string[] = [];
	for (const element of selectEvery(LINKS(), page.document)) {
		const href = domutils().getAttributeValue(element, "href");
		if (href !== undefined) hrefs.push(href);
		if (hrefs.length === MAX_PAGE_HREFS) break;
	}
	return resolveLinks(hrefs, selectFirstOf(BASE(), page), page.url);
}

/** `link[rel~="next" i]`'s test, as css-select makes it: `next` as one of the value's whitespace-separated words. */
const REL_NEXT = /(?:^|\s)next(?:$|\s)/i;

/**
 * `extractLinks(parseHtml(html, url))` without the tree: the same tags and attributes, read from
 * htmlparser2's tokenizer (the tree's own tokenizer) as it meets them. It keeps no stack of open
 * elements (htmlparser2's Parser shifts its whole stack on every open tag, so a page of unclosed
 * `<a>`s cost it quadratic time): linear time, and the memory of the links alone.
 */
export function streamLinks(html: string, url: string): string[] {
	const reader = new LinkReader(html);
	const tokenizer = new (htmlparser2().Tokenizer)({ decodeEntities: true }, reader);
	if (html !== "") tokenizer.write(html);
	tokenizer.end();
	return resolveLinks(reader.hrefs, reader.baseHref, url);
}

/** What a tag is to `LinkReader`. */
const TAG = {
	other: 0,
	a: 1,
	link: 2,
	base: 3,
	template: 4,
	/** `svg`, `math`: their content is foreign (a self-closing tag there closes). */
	foreign: 5,
	/** Elements whose content is HTML again, as htmlparser2's Parser lists them. */
	integration: 6,
} as const;
type TagKind = (typeof TAG)[keyof typeof TAG];

/** The attribute of the current tag being read. */
const HREF = 1;
const REL = 2;

/**
 * The tokenizer's events read as htmlparser2's Parser reads them in HTML mode with `decodeEntities`
 * (names lower-cased, values entity-decoded, the first of duplicate attributes kept), only for what
 * links need: `href` and `rel` of `a`, `link`, `base`, and how deep in `<template>`s the tag is.
 */
class LinkReader implements TokenizerCallbacks {
	private readonly html: string;
	readonly hrefs: string[] = [];
	baseHref: string | undefined;
	/**
	 * Open `<template>`s (css-select does not look inside one: its content is inert until a script uses
	 * it). Only `</template>` closes one, as in a browser, where a template bounds the end tags' scope;
	 * the Parser also closes it with an end tag of an element open outside it (`<div><template></div>`),
	 * and the tree, built by the Parser, reads the links after that `</div>`: this reading does not.
	 */
	private templates = 0;
	private tag: TagKind = TAG.other;
	private attribute = 0;
	/** The attributes of the current tag already read (HREF | REL): the first of duplicates is kept. */
	private read = 0;
	private value = "";
	private href: string | undefined;
	private rel: string | undefined;
	/**
	 * The Parser's foreign-content flags, one bit a level: pushed on `svg`/`math` (set) and integration
	 * elements (clear), popped by any end tag of those names. It only decides whether `<template/>` closes
	 * itself (in svg or math, as a browser's foreign element does) or opens a template.
	 */
	private foreign = new Uint32Array(1);
	/** Starts at 1: the page's own level, HTML (bit 0 clear). */
	private foreignDepth = 1;

	constructor(html: string) {
		this.html = html;
	}

	onopentagname(start: number, end: number): void {
		const kind = tagKind(this.html, start, end);
		this.tag = kind <= TAG.template ? kind : TAG.other;
		this.read = 0;
		this.href = undefined;
		this.rel = undefined;
		if (kind === TAG.foreign || kind === TAG.integration) this.pushForeign(kind === TAG.foreign);
	}

	onattribname(start: number, end: number): void {
		const tag = this.tag;
		if (tag === TAG.other || tag === TAG.template) return;
		if (end - start === 4 && (this.read & HREF) === 0 && nameIs(this.html, start, "href")) this.attribute = HREF;
		else if (end - start === 3 && tag === TAG.link && (this.read & REL) === 0 && nameIs(this.html, start, "rel"))
			this.attribute = REL;
	}

	onattribdata(start: number, end: number): void {
		if (this.attribute !== 0) this.value += this.html.slice(start, end);
	}

	onattribentity(codepoint: number): void {
		if (this.attribute !== 0) this.value += String.fromCodePoint(codepoint);
	}

	onattribend(): void {
		if (this.attribute === HREF) this.href = this.value;
		else if (this.attribute === REL) this.rel = this.value;
		else return;
		this.read |= this.attribute;
		this.attribute = 0;
		this.value = "";
	}

	onopentagend(): void {
		this.openTag(false);
	}

	/** HTML ignores the `/` of `<a/>`; the Parser closes the element at once in foreign content only. */
	onselfclosingtag(): void {
		this.openTag(this.foreignDepth > 0 && this.foreignBit(this.foreignDepth - 1));
	}

	onclosetag(start: number, end: number): void {
		const kind = tagKind(this.html, start, end);
		if (kind === TAG.template) {
			if (this.templates > 0) this.templates -= 1;
		} else if ((kind === TAG.foreign || kind === TAG.integration) && this.foreignDepth > 0) this.foreignDepth -= 1;
	}

	private openTag(closed: boolean): void {
		const { tag, href } = this;
		this.tag = TAG.other;
		if (tag === TAG.template) {
			if (!closed) this.templates += 1;
		} else if (href !== undefined && this.templates === 0) {
			if (tag === TAG.a || (tag === TAG.link && REL_NEXT.test(this.rel ?? ""))) {
				if (this.hrefs.length < MAX_PAGE_HREFS) this.hrefs.push(href);
			} else if (tag === TAG.base) this.baseHref ??= href;
		}
	}

	private pushForeign(set: boolean): void {
		const depth = this.foreignDepth;
		if (depth >>> 5 === this.foreign.length) {
			const grown = new Uint32Array(this.foreign.length * 2);
			grown.set(this.foreign);
			this.foreign = grown;
		}
		const bit = 1 << (depth & 31);
		this.foreign[depth >>> 5] = set ? this.foreign[depth >>> 5]! | bit : this.foreign[depth >>> 5]! & ~bit;
		this.foreignDepth = depth + 1;
	}

	private foreignBit(depth: number): boolean {
		return (this.foreign[depth >>> 5]! & (1 << (depth & 31))) !== 0;
	}

	ontext(): void {}
	ontextentity(): void {}
	oncdata(): void {}
	oncomment(): void {}
	ondeclaration(): void {}
	onprocessinginstruction(): void {}
	onend(): void {}
}

/** The kind of the tag named by `html[start, end)`, its name read as the Parser lower-cases it. */
function tagKind(html: string, start: number, end: number): TagKind {
	switch (end - start) {
		case 1:
			return nameIs(html, start, "a") ? TAG.a : TAG.other;
		case 2:
			return nameIs(html, start, "mi") ||
				nameIs(html, start, "mo") ||
				nameIs(html, start, "mn") ||
				nameIs(html, start, "ms")
				? TAG.integration
				: TAG.other;
		case 3:
			return nameIs(html, start, "svg") ? TAG.foreign : TAG.other;
		case 4:
			if (nameIs(html, start, "link")) return TAG.link;
			if (nameIs(html, start, "base")) return TAG.base;
			if (nameIs(html, start, "math")) return TAG.foreign;
			return nameIs(html, start, "desc") ? TAG.integration : TAG.other;
		case 5:
			return nameIs(html, start, "title") || nameIs(html, start, "mtext") ? TAG.integration : TAG.other;
		case 8:
			return nameIs(html, start, "template") ? TAG.template : TAG.other;
		case 13:
			return nameIs(html, start, "foreignobject") ? TAG.integration : TAG.other;
		case 14:
			return nameIs(html, start, "annotation-xml") ? TAG.integration : TAG.other;
		default:
			return TAG.other;
	}
}

/**
 * Whether `html` from `start` is `name` (lower-case ASCII) once lower-cased as `toLowerCase` does:
 * besides A–Z, only the Kelvin sign (U+212A) lower-cases to an ASCII letter (`k`).
 */
function nameIs(html: string, start: number, name: string): boolean {
	for (let index = 0; index < name.length; index++)
		if (lowerCodeAt(html, start + index) !== name.charCodeAt(index)) return false;
	return true;
}

function lowerCodeAt(html: string, index: number): number {
	const code = html.charCodeAt(index);
	return code >= 0x41 && code <= 0x5a ? code | 0x20 : code === 0x212a ? 0x6b : code;
}

/** The links' `href`s resolved against the page's `<base href>` (itself resolved against the page URL) or the page URL. */
function resolveLinks(hrefs: readonly string[], baseHref: string | undefined, pageUrl: string): string[] {
	const links: string[] = [];
	const base = (baseHref !== undefined ? resolveUrl(baseHref, pageUrl) : null) ?? pageUrl;
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

function selectFirstOf(selector: CompiledSelector, page: ParsedPage): string | undefined {
	const element = selectFirst(selector, page.document);
	return element ? domutils().getAttributeValue(element, "href") : undefined;
}

/** `value` resolved against `base`; null when it is not a URL. */
export function resolveUrl(value: string, base: string): string | null {
	const trimmed = value.trim();
	if (trimmed === "") return null;
	try {
		return new URL(trimmed, base).href;
	} catch {
		return null;
	}
}
