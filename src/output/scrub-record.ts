import { maskUrlCredentials, redactSecrets } from "../common/index.js";
import type { ResultRecord } from "./record.js";

/**
 * Make a record safe to write: every string in it that came from outside (the target URL, which may hold
 * `user:pass@` or an expanded `${KEY}`; the service's message, mode and task id, which a hostile or
 * buggy service may echo a key into) has URL credentials masked and the run's secrets redacted. The
 * common case — nothing to hide — costs a few `includes` per field.
 */
export function createRecordScrubber(
	secrets: ReadonlyArray<string | null | undefined>,
): (record: ResultRecord) => ResultRecord {
	const known = secrets.filter((secret): secret is string => typeof secret === "string" && secret.length >= 4);
	const dirty = (text: string | null) => {
		if (text === null) return false;
		for (const secret of known) if (text.includes(secret)) return true;
		return false;
	};
	const scrub = (text: string) => redactSecrets(text, known);
	return (record) => {
		if (record.url.includes("@")) record.url = maskUrlCredentials(record.url);
		if (dirty(record.url)) record.url = scrub(record.url);
		if (dirty(record.message)) record.message = scrub(record.message!);
		if (dirty(record.mode_used)) record.mode_used = scrub(record.mode_used!);
		if (dirty(record.task_id)) record.task_id = scrub(record.task_id!);
		if (dirty(record.error)) record.error = scrub(record.error!);
		if (dirty(record.parent)) record.parent = scrub(record.parent!);
		return record;
	};
}
