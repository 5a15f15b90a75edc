import { hash } from "node:crypto";
import { join } from "node:path";
import { canonicalJson, jsonlLines } from "../common/index.js";
import { type AppendFile, openAppendFile, parseRecordLine, type ResultRecord } from "../output/index.js";
import type { JobHistory } from "./job-history.js";

/** Where change tracking finds each target's previous ok record: the job's store, or a fleet's earlier runs. */
export type PreviousRecords = Pick<JobHistory, "previous" | "readOkRecord">;

export const CHANGES_FILE = "changes.jsonl";

export interface ChangeCounts {
	new: number;
	changed: number;
	unchanged: number;
}

/**
 * Change tracking: every ok record gets `content_hash` (64 bits of SHA-1 — of the extracted data when
 * the job extracts, so a rotating ad is not a change; else of the content) and `change` against the
 * target's previous ok record in this job. A changed target gets a line in `changes.jsonl` with each
 * field's old and new value (the old record is read back from its run's results.jsonl).
 */
export function createChangeTracker(history: PreviousRecords, runDir: string, extracts: boolean) {
	// A resumed run's summary counts every session: what earlier ones wrote is counted from their records.
	const counts: ChangeCounts = countWrittenChanges(join(runDir, "results.jsonl"));
	let changes: AppendFile | null = null;
	/** Whether the last stamp appended a line to changes.jsonl (what `retractLast` takes back). */
	let lastAppended = false;
	return {
		counts,
		/** Stamp an ok record before it is written; `body` is the content the service returned. */
		stamp(record: ResultRecord, body: Buffer | { readonly sha1: string } | null): void {
			lastAppended = false;
			if (record.status !== "ok") return;
			const data = extracts && record.data ? canonicalJson(record.data) : null;
			if (data === null && body === null) return;
			// A body that left memory on its way in was hashed as it streamed: the same SHA-1.
			const sha1 =
				data !== null ? hash("sha1", data, "hex") : Buffer.isBuffer(body) ? hash("sha1", body, "hex") : body!.sha1;
			const contentHash = sha1.slice(0, 16);
			record.content_hash = contentHash;
			const previous = history.previous(record.id);
			if (!previous?.okHash || previous.okAt === null) {
				record.change = "new";
				counts.new += 1;
				return;
			}
			// The job holds a newer ok record of the target (a re-extraction of an older run's pages): this one
			// has no change to report against it — the old and new values would be the wrong way round in time.
			if (previous.okAt > Date.parse(record.finished_at)) return;
			if (previous.okHash === contentHash) {
				record.change = "unchanged";
				counts.unchanged += 1;
				return;
			}
			const fields: Record<string, { old: unknown; new: unknown }> = {};
			if (extracts && record.data) {
				// The old record is read back only for its fields: without extraction the line says the hashes.
				const oldData = (history.readOkRecord(previous)?.data ?? {}) as Record<string, unknown>;
				const added: string[] = [];
				for (const [name, value] of Object.entries(record.data)) {
					// A field the previous record did not have at all: the job's extract: gained it (docs/behaviour.md, "Change tracking").
					// Listed filled or not: the field is new to the plan either way.
					if (!Object.hasOwn(oldData, name)) {
						added.push(name);
						continue;
					}
					if (canonicalJson(oldData[name] ?? null) !== canonicalJson(value ?? null))
						fields[name] = { old: oldData[name] ?? null, new: value ?? null };
				}
				if (added.length > 0) setAddedFields(record, added);
				if (Object.keys(fields).length === 0) {
					record.change = "unchanged";
					counts.unchanged += 1;
					return;
				}
			} else fields.content_hash = { old: previous.okHash, new: contentHash };
			record.change = "changed";
			counts.changed += 1;
			changes ??= openAppendFile(join(runDir, CHANGES_FILE));
			changes.append(
				`${JSON.stringify({ id: record.id, url: record.url, finished_at: record.finished_at, previous_finished_at: new Date(previous.okAt).toISOString(), fields })}\n`,
			);
			lastAppended = true;
		},
		/** Take the last stamp's changes.jsonl line back, when nothing follows it (AppendFile.retractLast). */
		retractLast(): void {
			if (lastAppended) changes?.retractLast();
			lastAppended = false;
		},
		close(): void {
			changes?.close();
		},
	};
}
export type ChangeTracker = ReturnType<typeof createChangeTracker>;

/** `added_fields` on the record, before an inline `content` (records are written with `content` last). */
function setAddedFields(record: ResultRecord, added: string[]): void {
	if (record.content === undefined) {
		record.added_fields = added;
		return;
	}
	const { content } = record;
	delete record.content;
	record.added_fields = added;
	record.content = content;
}

/**
 * The `change` of the records already in a run's results.jsonl (a resumed run's earlier sessions;
 * none for a new run), each line parsed by the one record validator (inline content left unparsed).
 */
function countWrittenChanges(path: string): ChangeCounts {
	const counts: ChangeCounts = { new: 0, changed: 0, unchanged: 0 };
	for (const line of jsonlLines(path)) {
		const change = parseRecordLine(line.text)?.change;
		if (change === "new" || change === "changed" || change === "unchanged") counts[change] += 1;
	}
	return counts;
}
