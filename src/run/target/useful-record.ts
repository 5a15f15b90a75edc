import { DEFAULT_BLOCK_SIGNATURE_SET, isFilled, matchTextSignature, type PageTaskResult } from "../../extract/index.js";
import type { Job, Target } from "../../job/index.js";
import type { ResultRecord } from "../../output/index.js";
import { isHtmlResult, pageHtml } from "./extract-record.js";
import type { FetchResult } from "./fetch-target.js";

/**
 * Whether a record is useful (docs/behaviour.md, "Useful records"), set on the record as `useful` and
 * `useless_reason`: an ok record is useful when its required `extract` fields are filled and its page
 * matches none of the job's block signatures; a failed or skipped record is not (its reason is its error
 * kind). Text signatures are searched in the page's HTML here, without parsing it; CSS signatures were
 * matched by the page pool on the tree it parsed (`read.blocked`).
 */
export function judgeUseful(
	record: ResultRecord,
	target: Target,
	result: FetchResult,
	job: Job,
	read?: PageTaskResult,
): ResultRecord {
	setUseful(record, uselessReason(record, target, result, job, read));
	return record;
}

function uselessReason(
	record: ResultRecord,
	target: Target,
	result: FetchResult,
	job: Job,
	read: PageTaskResult | undefined,
): string | null {
	// A body that streamed to disk on its way in (over 1 MB, nobody reading it) is no interstitial: not searched.
	const searched = result.kind === "ok" && result.spilled === undefined && isHtmlResult(target, result);
	// The body's bytes as they are (matchTextSignature reads them without decoding the page).
	const html = () => (searched && result.kind === "ok" ? (result.json ? pageHtml(result) : result.body) : null);
	return uselessReasonOf(record, html, target.extract?.fields ?? [], job, read?.blocked);
}

/**
 * The one rule, for a fetched record and a re-extracted one alike: null when the record is useful, else why not.
 * `html` (the page's text, or its UTF-8 bytes) is asked for only when the job has text signatures.
 */
export function uselessReasonOf(
	record: Pick<ResultRecord, "status" | "error" | "data">,
	html: () => string | Buffer | null,
	fields: ReadonlyArray<{ readonly name: string; readonly required: boolean }>,
	job: Pick<Job, "blockSignatures">,
	/** The CSS signature the page pool found in the page, if any. */
	cssBlocked: string | undefined,
): string | null {
	if (record.status !== "ok") return record.error ?? record.status;
	const signatures = job.blockSignatures ?? DEFAULT_BLOCK_SIGNATURE_SET;
	if (signatures.text.length > 0) {
		const page = html();
		const found = page === null ? null : matchTextSignature(page, signatures.text);
		if (found !== null) return `block_signature: ${found}`;
	}
	if (cssBlocked !== undefined) return `block_signature: css ${cssBlocked}`;
	const empty: string[] = [];
	for (const field of fields) if (field.required && !isFilled(record.data?.[field.name])) empty.push(field.name);
	return empty.length > 0 ? `required_empty: ${empty.join(", ")}` : null;
}

/** `useful` and `useless_reason` on the record, before an inline `content` (records are written with `content` last). */
export function setUseful(record: ResultRecord, reason: string | null): void {
	const { content } = record;
	if (content !== undefined) delete record.content;
	record.useful = reason === null;
	record.useless_reason = reason;
	if (content !== undefined) record.content = content;
}
