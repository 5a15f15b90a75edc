import { jsonlLines } from "../common/index.js";
import { RECORD_STATUSES, type ResultRecord } from "./record.js";

/**
 * The one rule for "this line of a results.jsonl is a record scrapejob wrote" (docs/behaviour.md,
 * "Records"): an object with an id, a known status, a finite non-negative `credits_used` and whole
 * `attempts`. Everything that reads records back (resume, merge, the job store, re-extraction, export)
 * uses it, so a hand-edited or damaged line is found the same way everywhere.
 */
export function isResultRecord(record: unknown): record is ResultRecord {
	if (record === null || typeof record !== "object") return false;
	const { id, status, credits_used: credits, attempts } = record as Partial<ResultRecord>;
	return (
		typeof id === "string" &&
		id !== "" &&
		(RECORD_STATUSES as readonly unknown[]).includes(status) &&
		typeof credits === "number" &&
		Number.isFinite(credits) &&
		credits >= 0 &&
		Number.isInteger(attempts) &&
		(attempts as number) >= 0
	);
}

/** Records are JSON with `content` last: dropping it before parsing keeps reading inline pages cheap. */
export function parseRecordLine(line: string, withContent = false): ResultRecord | null {
	const contentAt = withContent ? -1 : line.indexOf(',"content":');
	const text = contentAt > 0 ? `${line.slice(0, contentAt)}}` : line;
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		return null;
	}
	return isResultRecord(parsed) ? parsed : null;
}

/** Lines of a results.jsonl that are not records: the first 20 line numbers, and how many in all. */
export function findCorruptLines(jsonlPath: string): { lines: number[]; count: number } {
	const lines: number[] = [];
	let count = 0;
	for (const line of jsonlLines(jsonlPath)) {
		if (parseRecordLine(line.text) !== null) continue;
		count += 1;
		if (lines.length < 20) lines.push(line.number);
	}
	return { lines, count };
}
