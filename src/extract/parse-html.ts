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
 * Every `<a href>` and `<link rel=next href>` of the page, resolved against the page URL (or its
 * `<base href>`), fragment dropped, in document order (duplicates kept: the caller normalizes and
 * dedupes). Links that are not http(s), or longer than `MAX_LINK_CHARS`, are dropped.
 */
export function extractLinks(page: ParsedPage): string[] {
	const links: string[] = [];
	const baseHref = selectFirstOf(BASE(), page);
	const base = (baseHref !== undefined ? resolveUrl(baseHref, page.url) : null) ?? page.url;
	for (const element of selectEvery(LINKS(), page.document)) {
		const href = domutils().getAttributeValue(element, "href");
		if (href === undefined || href.length > MAX_LINK_CHARS) continue;
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
