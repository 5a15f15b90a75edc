import { existsSync } from "node:fs";
import { join } from "node:path";
import { CLI_WORDS, jsonlLines, type OptionWords, UsageError } from "../../common/index.js";
import type { JobHistory } from "../../history/index.js";
import { parseRecordLine, type ResultRecord, RUN_FILES } from "../../output/index.js";

/** A stored page's place, as records name it: a file directly in the run folder's `pages/`. */
const PAGE_PATH = /^pages\/[^/\\]+$/;

/** One record of a re-extraction's source and the run folder its page is in. */
export interface SourceEntry {
	readonly record: ResultRecord;
	readonly runDir: string;
}

/** The folder of a run id of this job: a folder name under `<out>/<job>/`, with records. */
export function sourceRunDir(
	jobDir: string,
	runId: string,
	jobName: string,
	outRoot: string,
	words: OptionWords = CLI_WORDS,
): string {
	// A run id names a folder of this job, nothing else: no path may lead out of output/<job>/.
	if (!/^[\w.-]+$/.test(runId) || runId.startsWith("."))
		throw new UsageError(
			`${words.run}: ${JSON.stringify(runId)} is not a run id (a folder name under output/<job>/) nor latest`,
		);
	const dir = join(jobDir, runId);
	if (!existsSync(join(dir, RUN_FILES.jsonl)))
		throw new UsageError(`${words.run}: no run ${runId} of job ${jobName} under ${outRoot}`);
	return dir;
}

/**
 * The source's records, one at a time: a run's results.jsonl front to back, or the latest ok record of
 * every target (the store's, run by run), then the targets that never had one (no page to read: listed).
 */
export function* sourceEntries(
	jobDir: string,
	history: JobHistory,
	sourceDir: string | null,
	noteMissing: (id: string, url: string, reason: string) => void,
): Generator<SourceEntry> {
	if (sourceDir !== null) {
		for (const record of readRecords(join(sourceDir, RUN_FILES.jsonl))) yield { record, runDir: sourceDir };
		return;
	}
	for (const { record, run } of history.latestOkEntries()) yield { record, runDir: join(jobDir, run) };
	for (const { id, url } of history.neverOk()) noteMissing(id, url, "never fetched ok");
}

/** A run's records, a megabyte of the file at a time (a results.jsonl may be larger than memory). */
function* readRecords(path: string): Generator<ResultRecord> {
	for (const line of jsonlLines(path)) {
		const record = parseRecordLine(line.text, true);
		if (record !== null) yield record;
	}
}

/** Where a record's page is, when it was kept and is still there. */
export function storedPagePath(entry: SourceEntry): string | null {
	const path = entry.record.content_path;
	if (typeof path !== "string" || !PAGE_PATH.test(path)) return null;
	const absolute = join(entry.runDir, path);
	return existsSync(absolute) ? absolute : null;
}

/** Why a source record has no page to read, as missing-pages.txt says it. */
export function missingReason(record: ResultRecord): string {
	return record.status === "ok" ? "no stored page" : `no stored page (${record.error ?? record.status})`;
}

/**
 * Whether any record of the source has its page still stored: read until the first one that has (at once
 * for a run that kept pages; to the end, a stream, for one that kept none).
 */
export function sourceHasStoredPage(jobDir: string, history: JobHistory, sourceDir: string | null): boolean {
	for (const entry of sourceEntries(jobDir, history, sourceDir, () => {}))
		if (storedPagePath(entry) !== null) return true;
	return false;
}
