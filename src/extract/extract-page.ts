import type { ExtractPlan } from "./compile-fields.js";
import { type ExtractedData, extractFields } from "./extract-fields.js";
import { type ParsedPage, parseHtml } from "./parse-html.js";

/**
 * Extract a plan's fields from one page's HTML: parsed once (not at all when only regex fields run),
 * then dropped — nothing of the tree outlives the call unless `page` is kept by the caller.
 * Use `parseHtml` + `extractFields` (+ `extractLinks`) directly to share one parse between fields and links.
 */
export function extractPage(html: string, url: string, plan: ExtractPlan): ExtractedData {
	const page: ParsedPage = plan.needsDocument ? parseHtml(html, url) : { document: emptyDocument(), html, url };
	return extractFields(page, plan);
}

let empty: ParsedPage["document"] | undefined;
/** The document of regex-only plans, parsed once, on first use (parsing loads htmlparser2). */
function emptyDocument(): ParsedPage["document"] {
	empty ??= parseHtml("", "about:blank").document;
	return empty;
}
