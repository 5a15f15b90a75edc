import { domutils } from "./html-libraries.js";
import type { ParsedPage } from "./parse-html.js";
import { lazyCss, selectEvery } from "./select.js";

const JSON_LD_SCRIPTS = lazyCss('script[type="application/ld+json" i]');

/** The page's JSON-LD blocks, parsed once per page on first use; a block that is not JSON is ignored. */
export function jsonLdOf(page: ParsedPage): unknown[] {
	if (page.jsonLd) return page.jsonLd;
	const blocks: unknown[] = [];
	for (const script of selectEvery(JSON_LD_SCRIPTS(), page.document)) {
		try {
			blocks.push(JSON.parse(domutils().textContent(script)));
		} catch {
			// Broken JSON-LD is common in the wild; the field is then simply not found.
		}
	}
	page.jsonLd = blocks;
	return blocks;
}

/**
 * The first value at a dotted path (`brand.name`, `offers.price`) in the page's JSON-LD. Arrays
 * are searched at every level (`@graph`, lists of offers, a block that is a list), depth first, in
 * document order.
 */
export function findJsonLd(blocks: readonly unknown[], path: readonly string[]): unknown {
	for (const block of blocks) {
		const found = walk(block, path, 0, 0);
		if (found !== undefined) return found;
	}
	return undefined;
}

/** Deeper than this is not data someone means to extract (and keeps hostile nesting cheap). */
const MAX_DEPTH = 32;

function walk(node: unknown, path: readonly string[], index: number, depth: number): unknown {
	if (depth > MAX_DEPTH || node === null || node === undefined) return undefined;
	if (Array.isArray(node)) {
		for (const item of node) {
			const found = walk(item, path, index, depth + 1);
			if (found !== undefined) return found;
		}
		return undefined;
	}
	if (index === path.length) return node;
	if (typeof node !== "object") return undefined;
	const record = node as Record<string, unknown>;
	const key = path[index]!;
	if (Object.hasOwn(record, key)) {
		const found = walk(record[key], path, index + 1, depth + 1);
		if (found !== undefined) return found;
	}
	// A top-level `@graph` holds the page's entities: search it for the whole path.
	if (index === 0 && Array.isArray(record["@graph"])) return walk(record["@graph"], path, 0, depth + 1);
	return undefined;
}
