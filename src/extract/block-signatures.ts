import type { ParsedPage } from "./parse-html.js";
import { type CompiledSelector, compileCss, selectFirst } from "./select.js";

/**
 * A job's block signatures (`block_signatures:`, docs/behaviour.md, "Useful records"): texts found in
 * the page's HTML (case-insensitive substrings, no parse) and CSS selectors that match an element of the
 * parsed page. A page that matches one is a block page or an interstitial, not the page asked for.
 */
export interface BlockSignatures {
	readonly text: readonly string[];
	readonly css: readonly string[];
}

/** One of the default signatures: what it finds, and which kind of page has it. */
export interface DefaultBlockSignature {
	readonly text: string;
	readonly page: string;
}

/**
 * The default set, used when a job does not set `block_signatures`. Texts only (so a job without
 * extraction never parses a page for them), each a phrase or marker that the interstitial carries and
 * a product or article page does not.
 */
export const DEFAULT_BLOCK_SIGNATURES: readonly DefaultBlockSignature[] = Object.freeze([
	{ text: "Checking your browser before accessing", page: "Cloudflare's browser check" },
	{ text: "Enable JavaScript and cookies to continue", page: "Cloudflare's challenge page" },
	{ text: "Please enable JS and disable any ad blocker", page: "DataDome's enable-JavaScript page" },
	{ text: "captcha-delivery.com", page: "DataDome's captcha widget (its iframe's host)" },
	{ text: 'id="px-captcha"', page: "PerimeterX's press-and-hold captcha widget" },
	{ text: "You don't have permission to access", page: "Akamai's Access Denied block page" },
]);

export const DEFAULT_BLOCK_SIGNATURE_SET: BlockSignatures = Object.freeze({
	text: Object.freeze(DEFAULT_BLOCK_SIGNATURES.map((signature) => signature.text)),
	css: Object.freeze([]),
});

export const NO_BLOCK_SIGNATURES: BlockSignatures = Object.freeze({ text: Object.freeze([]), css: Object.freeze([]) });

/** One regex of every text (escaped, case-insensitive), built once per list. */
const textPatterns = new WeakMap<readonly string[], RegExp>();

function textPattern(texts: readonly string[]): RegExp {
	let pattern = textPatterns.get(texts);
	if (!pattern) {
		pattern = new RegExp(texts.map((text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "i");
		textPatterns.set(texts, pattern);
	}
	return pattern;
}

/**
 * How much of a page the default set is searched in: its first 64 KiB. Each default text is a marker of
 * an interstitial, a page of a few kilobytes (the test pages under test/run/block-pages/ have theirs in
 * their first 700 bytes); the search reads about a millisecond per megabyte, so a 300 KB product page
 * no longer pays for a search of all of it. A job's own texts are searched in the whole page.
 */
export const DEFAULT_SIGNATURE_SCAN_BYTES = 64 * 1024;

/** Whether every text is ASCII, per list. */
const asciiLists = new WeakMap<readonly string[], boolean>();

function isAsciiList(texts: readonly string[]): boolean {
	let ascii = asciiLists.get(texts);
	if (ascii === undefined) {
		ascii = texts.every((text) => !/[^\p{ASCII}]/u.test(text));
		asciiLists.set(texts, ascii);
	}
	return ascii;
}

/**
 * The first text signature found in a page (as the job wrote it), or null: `html` is the page's text, or
 * its bytes (UTF-8). Texts of ASCII only are searched in the bytes read as Latin-1, which needs no decode
 * and finds what the decoded page would give: a case-insensitive match of an ASCII text is a run of ASCII
 * characters (no other character case-folds to one), and ASCII bytes are the same characters either way.
 */
export function matchTextSignature(html: string | Buffer, texts: readonly string[]): string | null {
	if (texts.length === 0 || html.length === 0) return null;
	const found = textPattern(texts).exec(searchedText(html, texts));
	if (!found) return null;
	const lower = found[0].toLowerCase();
	return texts.find((entry) => entry.toLowerCase() === lower) ?? found[0];
}

/** The part of the page searched, as text: the default set's first 64 KiB (of its UTF-8 bytes), or all of it. */
function searchedText(html: string | Buffer, texts: readonly string[]): string {
	const limit = texts === DEFAULT_BLOCK_SIGNATURE_SET.text ? DEFAULT_SIGNATURE_SCAN_BYTES : Number.POSITIVE_INFINITY;
	if (typeof html === "string") {
		// Under a third of the limit in characters is under it in bytes.
		if (html.length * 3 <= limit) return html;
		const bytes = Buffer.from(html.slice(0, limit), "utf8");
		return bytes.toString("latin1", 0, Math.min(bytes.length, limit));
	}
	const end = Math.min(html.length, limit);
	return isAsciiList(texts) ? html.toString("latin1", 0, end) : html.toString("utf8", 0, end);
}

const compiledCss = new Map<string, CompiledSelector>();

/** The first CSS signature that matches an element of the page, or null. */
export function matchCssSignature(page: ParsedPage, selectors: readonly string[]): string | null {
	for (const selector of selectors) {
		let compiled = compiledCss.get(selector);
		if (!compiled) {
			compiled = compileCss(selector);
			compiledCss.set(selector, compiled);
		}
		if (selectFirst(compiled, page.document) !== null) return selector;
	}
	return null;
}
