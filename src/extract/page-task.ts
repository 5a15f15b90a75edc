import { matchCssSignature } from "./block-signatures.js";
import { compileFields, type ExtractPlan } from "./compile-fields.js";
import { type ExtractedData, extractFields } from "./extract-fields.js";
import { extractPage } from "./extract-page.js";
import type { FieldInput } from "./field-spec.js";
import { decodeHtml } from "./html-charset.js";
import { extractLinks, type ParsedPage, parseHtml, streamLinks } from "./parse-html.js";

/**
 * One page's work, as it crosses to a worker thread: plain data only (a compiled plan holds
 * functions, so its fields travel as written and are compiled once per worker).
 */
export interface PageTask {
	/**
	 * The page: its text, or its bytes, decoded only in the thread that reads it (a large page then
	 * crosses to the worker as one moved buffer and is never a string on the caller's thread).
	 */
	readonly html: string | Uint8Array;
	/** The Content-Type its answer was given with (its `charset` decodes the bytes), when known. */
	readonly contentType?: string;
	/** The page's address: links and `url` fields resolve against it. */
	readonly url: string;
	/** The target's `extract:` fields as written (JSON of name → field), or null when nothing is extracted. */
	readonly fields: string | null;
	/** Whether the crawler wants the page's links. */
	readonly links: boolean;
	/** The job's CSS block signatures, when it has any (docs/behaviour.md, "Useful records"). */
	readonly blockCss?: readonly string[];
}

export interface PageTaskResult {
	/** The fields' values (absent when nothing is extracted, or extraction failed: see `error`). */
	readonly data?: ExtractedData;
	/** Every link of the page, resolved, in document order (absent unless asked for). */
	readonly links?: string[];
	/** Why extraction failed on this page (its fields are then null; links may still be there). */
	readonly error?: string;
	/** The first CSS block signature that matched the page (asked for with `blockCss`). */
	readonly blocked?: string;
}

const compiled = new Map<string, ExtractPlan>();

/** The plan of a fields text, compiled on first use in this thread (a job has few distinct plans). */
function planFor(fields: string): ExtractPlan {
	let plan = compiled.get(fields);
	if (!plan) {
		const result = compileFields(JSON.parse(fields) as Record<string, FieldInput>);
		if (!result.ok) throw new Error(`extract plan does not compile: ${result.problems[0]?.message ?? "?"}`);
		plan = result.plan;
		compiled.set(fields, plan);
	}
	return plan;
}

/**
 * Parse once, then read the fields and the links from the same tree. Runs in a worker thread (see
 * page-pool.ts) or, where no worker can start, on the caller's thread.
 */
export function runPageTask(task: PageTask): PageTaskResult {
	const html = typeof task.html === "string" ? task.html : decodeHtml(task.html, task.contentType);
	const plan = task.fields === null ? null : planFor(task.fields);
	const blockCss = task.blockCss ?? [];
	// One tree, shared, when CSS block signatures or a field need it; links alone are read without one
	// (streamLinks), and fields alone go through extractPage, which parses only when a field needs it.
	const treeNeeded = blockCss.length > 0 || (task.links && plan?.needsDocument === true);
	const page: ParsedPage | null = treeNeeded ? parseHtml(html, task.url) : null;
	const blocked = page && blockCss.length > 0 ? matchCssSignature(page, blockCss) : null;
	let data: ExtractedData | undefined;
	let error: string | undefined;
	if (plan) {
		try {
			data = page ? extractFields(page, plan) : extractPage(html, task.url, plan);
		} catch (cause) {
			// A page a selector chokes on must not cost the record: its fields are null, and the record says why.
			error = cause instanceof Error ? cause.message : String(cause);
		}
	}
	const links = task.links ? (page ? extractLinks(page) : streamLinks(html, task.url)) : undefined;
	return {
		...(data ? { data } : {}),
		...(links ? { links } : {}),
		...(error !== undefined ? { error } : {}),
		...(blocked !== null ? { blocked } : {}),
	};
}
