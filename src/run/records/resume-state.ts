import { appendFileSync, closeSync, fstatSync, openSync, readSync } from "node:fs";
import { dirname, join } from "node:path";
import { cutTornTail, jsonlLines, ScrapejobError, writeFileAtomic } from "../../common/index.js";
import { csvLines, csvRow, parseRecordLine, type ResultRecord, readCsvHeader } from "../../output/index.js";
import { createIdSet, type IdSet } from "./compact-id-set.js";
import { createRunStatistics, type RunStatistics } from "./run-statistics.js";

/** What earlier sessions of a run already did, read from its files without keeping records in memory. */
export interface PriorProgress {
	readonly done: IdSet;
	/** The run's statistics with every earlier record replayed into them (the same counting as a live record). */
	readonly statistics: RunStatistics;
	readonly lastRecord: ResultRecord | null;
	/** Bytes cut from the end of results.jsonl because the last line was torn by a crash. */
	readonly tornBytes: number;
}

/** The last line of a file (after a torn tail was cut), or null. */
export function lastLine(path: string): string | null {
	let fd: number;
	try {
		fd = openSync(path, "r");
	} catch {
		return null;
	}
	try {
		const size = fstatSync(fd).size;
		const length = Math.min(size, 256 * 1024);
		const buffer = Buffer.alloc(length);
		readSync(fd, buffer, 0, length, size - length);
		const text = buffer.toString("utf8").replace(/\r?\n$/, "");
		const cut = text.lastIndexOf("\n");
		return text.slice(cut + 1).replace(/\r$/, "");
	} finally {
		closeSync(fd);
	}
}

/**
 * results.jsonl holds lines that are not records: resuming on it would count wrong or never finish.
 * Thrown by `runJobFile` with `resume` (without `repair`) and by `extractJobFile` with that run as its
 * `run`, before anything is sent; `repair: true` on a resume moves the lines aside. Code `SCRAPEJOB_USAGE`.
 */
export class CorruptResultsError extends ScrapejobError {
	/** The results.jsonl that holds them. */
	readonly path: string;
	/** The first of their line numbers (1-based). */
	readonly lines: readonly number[];
	/** How many lines are not records. */
	readonly count: number;
	/** `repair`: what repairs it, in the caller's words (the CLI's command as it must be pasted; `runJobFile`'s options). */
	constructor(path: string, lines: readonly number[], count: number, repair = "resume with --repair") {
		const shown = lines.slice(0, 10).join(", ");
		super(
			"SCRAPEJOB_USAGE",
			`${path} has ${count} line${count === 1 ? "" : "s"} that ${count === 1 ? "is" : "are"} not a valid record (line ${shown}${count > lines.length ? ", …" : ""}); nothing was sent. To move them aside (to ${CORRUPT_FILE}) and fetch their targets again, ${repair}`,
		);
		this.path = path;
		this.lines = lines;
		this.count = count;
	}

	/** The same error, naming the command that repairs it. */
	withRepair(command: string): CorruptResultsError {
		return this.withHint(`run \`${command}\``);
	}

	/** The same error, ending with what repairs it in the caller's words (a library call's options). */
	withHint(hint: string): CorruptResultsError {
		return new CorruptResultsError(this.path, this.lines, this.count, hint);
	}
}

/** Where `--repair` puts the lines it takes out of results.jsonl. */
export const CORRUPT_FILE = "results.corrupt.jsonl";

/**
 * `--repair`: rewrite results.jsonl (and results.csv) without the lines that are not records, which go
 * to results.corrupt.jsonl; their targets have no record any more, so the resumed run fetches them.
 */
export async function repairResults(jsonlPath: string, csvPath: string, maxCell?: number): Promise<number> {
	const dir = dirname(jsonlPath);
	const kept: string[] = [];
	const dropped: string[] = [];
	for (const { text } of jsonlLines(jsonlPath)) (parseRecordLine(text) !== null ? kept : dropped).push(text);
	if (dropped.length === 0) return 0;
	appendFileSync(join(dir, CORRUPT_FILE), `${dropped.join("\n")}\n`);
	writeFileAtomic(jsonlPath, kept.length ? `${kept.join("\n")}\n` : "");
	// The CSV is derived from the records: written again in its own columns, from the repaired file.
	const columns = readCsvHeader(csvPath);
	if (columns) {
		const rows = kept.map((line) => csvRow(JSON.parse(line) as ResultRecord, columns, maxCell));
		writeFileAtomic(csvPath, csvLines([columns, ...rows]));
	}
	return dropped.length;
}

/**
 * Read `results.jsonl` of an earlier session: which targets are done, and every record replayed into
 * `statistics` (a fresh one by default), so totals are counted by the one code that counts live records.
 */
export async function readPriorProgress(
	jsonlPath: string,
	statistics: RunStatistics = createRunStatistics(),
): Promise<PriorProgress> {
	const tornBytes = cutTornTail(jsonlPath);
	const corrupt: number[] = [];
	let corruptCount = 0;
	const done = createIdSet();
	let lastRecord: ResultRecord | null = null;
	for (const line of jsonlLines(jsonlPath)) {
		const record = parseRecordLine(line.text);
		if (record === null) {
			corruptCount += 1;
			if (corrupt.length < 20) corrupt.push(line.number);
			continue;
		}
		done.add(record.id);
		statistics.replay(record);
		lastRecord = record;
	}
	if (corruptCount > 0) throw new CorruptResultsError(jsonlPath, corrupt, corruptCount);
	return { done, statistics, lastRecord, tornBytes };
}

/**
 * Bring `results.csv` level with `results.jsonl`. Records go to JSONL first, then CSV, so after a crash
 * the CSV can lack at most the last JSONL record (or end in a torn row): cut the torn row, add the record.
 * Returns the text appended, or "" when they already agree.
 */
export function csvCatchUp(csvPath: string, lastRecord: ResultRecord | null, maxCell?: number): string {
	cutTornTail(csvPath);
	if (!lastRecord) return "";
	// The row in the file's own columns (a job with `extract:` has more than the record's).
	const columns = readCsvHeader(csvPath) ?? undefined;
	const row = csvLines([csvRow(lastRecord, columns, maxCell)]);
	return lastLine(csvPath) === row.replace(/\r?\n$/, "") ? "" : row;
}
