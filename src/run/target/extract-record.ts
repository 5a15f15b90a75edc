import { contentOf } from "../../api/index.js";
import { jsonlLines, parseJsonLine } from "../../common/index.js";
import {
	createFillStats,
	type ExtractPlan,
	type ExtractSummary,
	type FillStats,
	type PageTaskResult,
	serviceData,
} from "../../extract/index.js";
import type { Job, Target } from "../../job/index.js";
import type { ResultRecord } from "../../output/index.js";
import type { FetchResult } from "./fetch-target.js";

type OkResult = Extract<FetchResult, { kind: "ok" }>;

const NOT_HTML_TYPES = /image\/|pdf|octet-stream|markdown|text\/plain/i;

/**
 * Extraction reads html only: the service's default `content`, not markdown, pdf or screenshot.
 * A JSON delivery carries the page in its `content`, so the body's own type is not the page's.
 */
function isHtml(target: Target, result: OkResult): boolean {
	const format = target.params.content;
	if (format !== undefined && format !== "html") return false;
	if (target.params.screenshot === true || target.params.pdf === true) return false;
	if (target.params.delivery !== "json" && NOT_HTML_TYPES.test(result.contentType ?? "")) return false;
	if (result.json) return typeof contentOf(result.json) === "string";
	// Sniff: markup starts with "<" after any whitespace or BOM.
	for (let index = 0; index < Math.min(result.body.length, 1024); index++) {
		const byte = result.body[index]!;
		if (byte === 0x3c) return true;
		if (
			byte !== 0x20 &&
			byte !== 0x0a &&
			byte !== 0x0d &&
			byte !== 0x09 &&
			byte !== 0xef &&
			byte !== 0xbb &&
			byte !== 0xbf
		) {
			return false;
		}
	}
	return false;
}

/**
 * The page's HTML: the body itself, or with `delivery: json` (whose body is the service's whole JSON
 * object) the page inside it, `content` (with `include_content: true`); "" when the service sent none.
 */
export function pageHtml(result: OkResult): string {
	if (!result.json) return result.body.toString("utf8");
	const content = contentOf(result.json);
	return typeof content === "string" ? content : "";
}

/** Whether extraction (or a crawler) may read this fetch as an HTML page. */
export function isHtmlResult(target: Target, result: FetchResult): boolean {
	return result.kind === "ok" && isHtml(target, result);
}

/**
 * Fill a fetched record's `data` (the target's `extract:` fields as the page pool read them from its
 * html, then what the service returned for `extract_scheme` / `ai_enhance`) and its carried source
 * columns. With a job that extracts, every ok record has `data` (fields that found nothing are null).
 */
export function addExtraction(
	record: ResultRecord,
	target: Target,
	result: FetchResult,
	job: Job,
	/** What the page pool read from the page (absent when it was not html, or not read). */
	read?: PageTaskResult,
): ResultRecord {
	const extraction = job.extraction;
	if (!extraction) return record;
	if (result.kind === "ok") {
		let data: Record<string, unknown> | undefined;
		const plan = target.extract;
		if (plan && plan.fields.length > 0) {
			data = { ...read?.data };
			// A page the parser chokes on must not cost the record: its fields are null, and the record says why.
			if (read?.error !== undefined) record.message = `extraction failed: ${read.error}`.slice(0, 2000);
			for (const field of plan.fields) if (!(field.name in data)) data[field.name] = null;
		}
		const fromService = result.json ? serviceData(result.json) : null;
		if (fromService) data = { ...data, ...fromService };
		if (data) record.data = data;
	}
	if (extraction.carry.length > 0) {
		const carried = record as unknown as Record<string, unknown>;
		for (const name of extraction.carry) carried[name] = target.carried?.[name] ?? null;
	}
	return record;
}

/**
 * What a fetched page needs from the page pool: its fields (the target's `extract:`) and its links (a
 * crawl below `max_depth`), or null when nothing reads it (not html, or nobody asks).
 */
/** Whether the page pool will read this fetch (the same test as `pageWorkOf`, without building its html). */
export function needsPageRead(
	target: Target,
	result: FetchResult,
	wantsLinks: boolean,
	blockCss: readonly string[] = [],
): boolean {
	if (result.kind !== "ok") return false;
	const plan = target.extract && target.extract.fields.length > 0;
	return (plan || wantsLinks || blockCss.length > 0) && isHtml(target, result);
}

export function pageWorkOf(
	target: Target,
	result: FetchResult,
	wantsLinks: boolean,
	/** The job's CSS block signatures: a page is parsed for them only when there are some. */
	blockCss: readonly string[] = [],
): {
	html: string | Uint8Array;
	contentType?: string;
	url: string;
	plan: ExtractPlan | null;
	links: boolean;
	blockCss?: readonly string[];
} | null {
	if (result.kind !== "ok") return null;
	const plan = target.extract && target.extract.fields.length > 0 ? target.extract : null;
	if ((plan === null && !wantsLinks && blockCss.length === 0) || !isHtml(target, result)) return null;
	return {
		// The body's bytes: decoded in the page worker, never held as a string here.
		html: result.json ? pageHtml(result) : result.body,
		...(!result.json && result.contentType ? { contentType: result.contentType } : {}),
		url: result.finalUrl ?? target.url,
		plan,
		links: wantsLinks,
		...(blockCss.length > 0 ? { blockCss } : {}),
	};
}

/** Fill rates over ok records; with a resumed run, the earlier records of the folder are counted first. */
export async function createRunFillStats(job: Job, priorJsonl: string | null): Promise<FillStats | null> {
	const extraction = job.extraction;
	if (!extraction || extraction.fields.length === 0) return null;
	const stats = createFillStats(extraction.fields, extraction.minFill);
	if (priorJsonl === null) return stats;
	for (const { text } of jsonlLines(priorJsonl)) {
		if (!text.includes('"status":"ok"')) continue;
		// Anything unreadable is not a record (a torn last line was cut by the resume already).
		const record = parseJsonLine(text) as ResultRecord | null | undefined;
		if (record?.status === "ok") stats.add(record.data);
	}
	return stats;
}

export type { ExtractSummary };
