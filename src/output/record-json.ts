import type { ResultRecord } from "./record.js";

/**
 * A record as one JSON object, the text `JSON.stringify(record)` writes for a record built field by
 * field in column order (`fetchedRecord`): the fixed fields laid out here, `data` and `content` after
 * them. Node 20's `JSON.stringify` walks an object generically, key by key (~2.5 µs for a record in
 * a loop, ~5 µs in a run: 3 % of the runner's CPU per target); strings that cannot hold a character
 * JSON escapes (ids, hashes, timestamps, the closed sets of statuses, modes and changes) are written as
 * they are, the rest through `JSON.stringify`.
 */
export function recordJson(record: ResultRecord): string {
	let text = `{"id":${plain(record.id)},"url":${JSON.stringify(record.url)},"status":${plain(record.status)},"http_status":${numberOrNull(record.http_status)},"error":${stringOrNull(record.error)},"message":${stringOrNull(record.message)},"mode_requested":${plain(record.mode_requested)},"mode_used":${stringOrNull(record.mode_used)},"credits_used":${numberOrNull(record.credits_used)},"credits_remaining":${numberOrNull(record.credits_remaining)},"attempts":${numberOrNull(record.attempts)},"task_id":${stringOrNull(record.task_id)},"started_at":${plain(record.started_at)},"finished_at":${plain(record.finished_at)},"duration_ms":${numberOrNull(record.duration_ms)},"bytes":${numberOrNull(record.bytes)},"content_path":${stringOrNull(record.content_path)},"content_hash":${plainOrNull(record.content_hash)},"change":${plainOrNull(record.change)},"depth":${numberOrNull(record.depth)},"parent":${stringOrNull(record.parent)}`;
	if (record.data !== undefined) text += `,"data":${JSON.stringify(record.data)}`;
	if (record.content !== undefined) text += `,"content":${JSON.stringify(record.content)}`;
	return `${text}}`;
}

/** Characters a JSON string holds as they are: printable ASCII but `"` and `\`. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A string that is almost always plain (an id, a timestamp, a mode): quoted as it is when it is. */
function plain(value: string): string {
	return PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
}

function plainOrNull(value: string | null): string {
	return value === null ? "null" : plain(value);
}

function stringOrNull(value: string | null): string {
	return value === null ? "null" : JSON.stringify(value);
}

/** As JSON writes numbers: NaN and ±Infinity as null. */
function numberOrNull(value: number | null): string {
	return value === null || !Number.isFinite(value) ? "null" : `${value}`;
}
