import { isoTime } from "../../common/index.js";
import type { Target } from "../../job/index.js";
import { extensionFor, type PageStore, type ResultRecord } from "../../output/index.js";
import type { FetchResult } from "./fetch-target.js";

const BINARY_TYPES = /png|jpe?g|pdf|octet-stream|image\//i;

/** Messages are one CSV cell and one log field: one line, bounded. */
function oneLine(text: string): string {
	return text.replace(/[\r\n]+/g, " ").slice(0, 2000);
}

/**
 * The record of a target that was fetched (or failed), with its content placed per `output.content`:
 * a file under `pages/` (`pages` given), inline in the JSONL (`inline`), or nowhere.
 *
 * @param creditsUsed what the fetch is booked at (the service's figure, or the worst case when it gave none)
 */
export function fetchedRecord(
	target: Target,
	result: Extract<FetchResult, { kind: "ok" | "failed" }>,
	creditsUsed: number,
	startedMs: number,
	finishedMs: number,
	content: { mode: "inline" | "files" | "none"; pages: PageStore | null },
): ResultRecord {
	const record: ResultRecord = {
		id: target.id,
		url: target.url,
		status: result.kind,
		http_status: result.httpStatus,
		error: result.kind === "failed" ? result.error : null,
		message: result.kind === "failed" ? oneLine(result.message) : null,
		mode_requested: target.browserSession ? "browser_session" : (target.params.mode ?? "auto"),
		mode_used: result.modeUsed,
		credits_used: creditsUsed,
		credits_remaining: result.creditsRemaining,
		attempts: result.attempts,
		task_id: result.taskId,
		started_at: isoTime(startedMs),
		finished_at: isoTime(finishedMs),
		duration_ms: finishedMs - startedMs,
		bytes: result.kind === "ok" ? (result.spilled?.bytes ?? result.body.length) : 0,
		content_path: null,
		content_hash: null,
		change: null,
		depth: target.crawl?.depth ?? null,
		parent: target.crawl?.parent ?? null,
		// Judged once the page is read (useful-record.ts); a failed record stays as it is here.
		useful: false,
		useless_reason: result.kind === "failed" ? result.error : null,
	};
	if (result.kind === "ok" && result.title !== undefined) record.data = { ...record.data, title: result.title };
	if (result.kind !== "ok" || content.mode === "none") return record;
	if (content.pages) {
		// A JSON delivery is saved as the JSON it is, whatever `content` format it wraps.
		const jsonDelivery = target.params.delivery === "json";
		const extension = jsonDelivery ? "json" : extensionFor(result.contentType, target.params.content);
		const spilledFile = result.spilled?.stored;
		record.content_path = spilledFile
			? content.pages.adopt(target.id, spilledFile, extension)
			: content.pages.save(target.id, result.body, extension);
	} else {
		const format = target.params.content;
		const binary =
			target.params.delivery !== "json" &&
			(BINARY_TYPES.test(result.contentType ?? "") || format === "screenshot" || format === "pdf");
		record.content = binary ? result.body.toString("base64") : result.body.toString("utf8");
	}
	return record;
}
