import { basename, extname } from "node:path";
import { contentOf } from "../../api/index.js";
import { errorMessage, FileTooLargeError, NotRegularFileError, readRegularFile } from "../../common/index.js";
import { decodeHtml, type ExtractPlan, type PagePool, PageTooComplexError, serviceData } from "../../extract/index.js";
import type { Job } from "../../job/index.js";
import type { ResultRecord } from "../../output/index.js";
import { setUseful, uselessReasonOf } from "../target/useful-record.js";

/**
 * The record read again from its stored page: the same page and fetch, this job's fields, no credits.
 * Null when `signal` ended the read (a stop past its grace period): the page gets no record.
 */
export async function reextracted(
	source: ResultRecord,
	pagePath: string,
	plan: ExtractPlan,
	job: Job,
	run: PagePool["run"],
	signal: AbortSignal,
): Promise<ResultRecord | null> {
	const { content: _inline, content_hash: _hash, change: _change, ...kept } = source;
	const record: ResultRecord = {
		...kept,
		status: "ok",
		error: null,
		message: null,
		// Nothing was sent: no credits, no attempts, no task.
		credits_used: 0,
		credits_remaining: null,
		attempts: 0,
		task_id: null,
		content_path: null,
		content_hash: null,
		change: null,
	};
	for (const name of job.extraction?.carry ?? []) {
		const carried = record as unknown as Record<string, unknown>;
		carried[name] = carried[name] ?? null;
	}
	let body: Buffer;
	try {
		// Only a regular file within the job's body cap: a FIFO blocked the whole extract, a link to /dev/zero
		// or a 600 MB page ran it out of memory. That page fails; the others are read.
		body = readRegularFile(pagePath, job.maxBodyBytes);
	} catch (error) {
		if (!(error instanceof NotRegularFileError || error instanceof FileTooLargeError)) throw error;
		const failed: ResultRecord = {
			...record,
			status: "failed",
			error: "page_unreadable",
			message: errorMessage(error),
		};
		setUseful(failed, "page_unreadable");
		return failed;
	}
	const { html, json } = storedContent(body, pagePath);
	const data: Record<string, unknown> = {};
	const blockCss = job.blockSignatures?.css ?? [];
	let cssBlocked: string | undefined;
	if (html === null) {
		record.message = `the stored page ${basename(pagePath)} is not html: nothing to extract`;
	} else {
		try {
			const read = await run({ html, url: source.url, plan, links: false, blockCss }, signal);
			Object.assign(data, read.data);
			cssBlocked = read.blocked;
			if (read.error !== undefined) record.message = `extraction failed: ${read.error}`.slice(0, 2000);
		} catch (error) {
			if (signal.aborted) return null;
			if (!(error instanceof PageTooComplexError)) throw error;
			record.status = "failed";
			record.error = "page_too_complex";
			record.message = error.message;
			delete record.data;
			setUseful(record, "page_too_complex");
			return record;
		}
	}
	for (const field of plan.fields) if (!(field.name in data)) data[field.name] = null;
	const fromService = json ? serviceData(json) : null;
	record.data = fromService ? { ...data, ...fromService } : data;
	setUseful(
		record,
		uselessReasonOf(record, () => html, plan.fields, job, cssBlocked),
	);
	return record;
}

/** A stored page's html (a `.json` page: the service's answer, its content inside) and that answer. */
function storedContent(body: Buffer, pagePath: string): { html: string | null; json: Record<string, unknown> | null } {
	const extension = extname(pagePath).toLowerCase();
	if (extension !== ".json")
		return { html: extension === ".html" || extension === ".htm" ? decodeHtml(body) : null, json: null };
	let json: Record<string, unknown> | null;
	try {
		json = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
	} catch {
		json = null;
	}
	const content = json ? contentOf(json) : null;
	return { html: typeof content === "string" ? content : null, json };
}
