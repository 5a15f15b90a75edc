import type { AnyNode, Document } from "domhandler";
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
 * `extractLinks(parseHtml(html, url))` without the tree: the same tags and attributes, read as the
 * tokenizer meets them. For a page nothing else reads, it costs ~0.6× the parse and holds only the
 * links, so a page of hundreds of thousands of links fits a page worker's heap.
 */
export function streamLinks(html: string, url: string): string[] {
	const hrefs: string[] = [];
	let baseHref: string | undefined;
	// css-select does not look inside <template> (its content is inert until a script uses it): neither does this.
	let inTemplate = 0;
	const { Parser } = htmlparser2();
	const parser = new Parser(
		{
			onopentag(name, attributes) {
				if (name === "template") inTemplate += 1;
				const href = attributes.href;
				if (href === undefined || inTemplate > 0) return;
				if (name === "a" || (name === "link" && REL_NEXT.test(attributes.rel ?? ""))) {
					if (hrefs.length < MAX_PAGE_HREFS) hrefs.push(href);
				} else if (name === "base") baseHref ??= href;
			},
			onclosetag(name) {
				if (name === "template" && inTemplate > 0) inTemplate -= 1;
			},
		},
		{ decodeEntities: true },
	);
	parser.end(html);
	return resolveLinks(hrefs, baseHref, url);
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
