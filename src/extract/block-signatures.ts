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

/** The first text signature found in `html` (as the job wrote it), or null. */
export function matchTextSignature(html: string, texts: readonly string[]): string | null {
	if (texts.length === 0 || html === "") return null;
	const found = textPattern(texts).exec(html);
	if (!found) return null;
	const lower = found[0].toLowerCase();
	return texts.find((text) => text.toLowerCase() === lower) ?? found[0];
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
