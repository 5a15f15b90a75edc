import type { FileHandle } from "node:fs/promises";
import { open, stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { type CsvError, parse } from "csv-parse";
import { checkScrapeUrl, didYouMean } from "../common/index.js";
import { describeFsError } from "./parse-yaml.js";
import { quoteValue } from "./problems.js";
import { TARGET_ID_PATTERN } from "./schema.js";
import type { CsvSourceSpec, SourceSpec, TargetOrigin, TextSourceSpec } from "./types.js";
import { checkTargetUrl } from "./url-check.js";

/**
 * The longest line (text) or record (CSV) read from a source: 64 KiB. Real URLs stay far below
 * it; without a cap, a file with no line breaks (a binary, a minified blob) would be buffered whole.
 */
export const MAX_SOURCE_LINE_CHARS = 64 * 1024;
/** Bytes read from a source file at a time. */
const READ_CHUNK_BYTES = 64 * 1024;

const CARRIAGE_RETURN = 0x0d;
const HASH = 0x23;

/**
 * A non-empty line of printable ASCII only (`!` to `~`). A regex, not a `charCodeAt` loop: on the
 * substrings a read chunk is cut into, the regex engine's compiled loop is ~3× faster.
 */
const PRINTABLE_ASCII = /^[!-~]+$/;

/** What reading a source yields, one per line that holds data, in file order. */
export type SourceRow =
	| {
			kind: "row";
			url: string;
			line: number;
			col: number;
			/** From the source's `id_column`. */
			id?: string;
			/** The job's `carry:` columns of this row. */
			carried?: Record<string, string | null>;
	  }
	/** A row that cannot be a target; the job's `on_bad_row` decides whether it fails validation. */
	| { kind: "bad"; line: number; col: number; message: string }
	/** The source cannot be read any further (missing file, binary, CSV syntax, no such column): always an error. */
	| { kind: "fatal"; at: TargetOrigin; message: string };

type OpenResult = { ok: true; handle: FileHandle } | { ok: false; row: SourceRow };

async function openSource(spec: SourceSpec): Promise<OpenResult> {
	// Sources are relative to the job file, not to where the command runs: show where we looked.
	const where = spec.displayPath === spec.path ? "" : ` (${spec.path})`;
	const fail = (why: string): OpenResult => ({
		ok: false,
		row: {
			kind: "fatal",
			at: spec.origin,
			message: `cannot read source ${JSON.stringify(spec.displayPath)}${where}: ${why}`,
		},
	});
	// Checked before opening: opening a FIFO (or a device) for reading blocks until a writer appears.
	try {
		const kind = await stat(spec.path);
		if (!kind.isFile() && !kind.isDirectory()) return fail("is not a regular file (a pipe, socket or device)");
	} catch (error) {
		return fail(describeFsError(error));
	}
	let handle: FileHandle;
	try {
		handle = await open(spec.path, "r");
	} catch (error) {
		return fail(describeFsError(error));
	}
	try {
		const stats = await handle.stat();
		if (stats.isDirectory()) {
			await handle.close();
			return fail("is a directory, not a file");
		}
		if (!stats.isFile()) {
			await handle.close();
			return fail("is not a regular file");
		}
	} catch (error) {
		await handle.close();
		return fail(describeFsError(error));
	}
	return { ok: true, handle };
}

/**
 * Rows handed over at a time: enough to keep per-row async overhead off a million-row file (7,800
 * hops), few enough that their targets do not wait long. The runner queues twice its concurrency; rows
 * handed over ahead of that wait with their targets, and what waits past two young collections
 * (~0.1 s apart in a fast run) is copied into the old space to die there: 512 rows at a time promoted
 * ~250 KB per young collection, 128 ~80 KB (the bare undici pool of the benchmark: ~60 KB).
 */
export const ROWS_PER_BATCH = 128;

/**
 * Stream a source's rows lazily, in file order, in small batches (at most `ROWS_PER_BATCH` rows,
 * never more than one read chunk's), never holding the file whole. Blank lines are skipped everywhere, and
 * `#` comment lines in text sources; CRLF line ends and a UTF-8 BOM are accepted in both kinds.
 * A `fatal` row is always the last.
 */
export function readSourceRows(spec: SourceSpec): AsyncGenerator<SourceRow[]> {
	return spec.kind === "csv" ? readCsvRows(spec) : readTextRows(spec);
}

async function* readTextRows(spec: TextSourceSpec): AsyncGenerator<SourceRow[]> {
	const opened = await openSource(spec);
	if (!opened.ok) {
		yield [opened.row];
		return;
	}
	const stream = opened.handle.createReadStream({ encoding: "utf8", highWaterMark: READ_CHUNK_BYTES });
	const file = spec.displayPath;
	let line = 0;
	let carry = "";
	let overlong = false;

	const classify = (raw: string): SourceRow | undefined => {
		line++;
		let text = raw.charCodeAt(raw.length - 1) === CARRIAGE_RETURN ? raw.slice(0, -1) : raw;
		if (line === 1 && text.startsWith("\uFEFF")) text = text.slice(1);
		// Nearly every line is one URL in printable ASCII, where none of the searches below can find
		// anything (no whitespace, NUL, U+FFFD): one pass over its characters instead of six.
		if (text.charCodeAt(0) !== HASH && PRINTABLE_ASCII.test(text)) {
			const problem = checkScrapeUrl(text) === undefined ? undefined : checkTargetUrl(text);
			return problem ? { kind: "bad", line, col: 1, message: problem } : { kind: "row", url: text, line, col: 1 };
		}
		if (text.includes("\0")) {
			return { kind: "fatal", at: { file, line, col: text.indexOf("\0") + 1 }, message: "not a text file (NUL bytes)" };
		}
		const start = text.search(/\S/);
		if (start === -1 || text[start] === "#") return undefined;
		const col = start + 1;
		if (text.includes("\uFFFD")) return { kind: "bad", line, col, message: "the line is not valid UTF-8 text" };
		const url = start === 0 && !/\s$/.test(text) ? text : text.trim();
		const problem = checkTargetUrl(url);
		return problem ? { kind: "bad", line, col, message: problem } : { kind: "row", url, line, col };
	};
	const tooLong = (): SourceRow => {
		line++;
		return { kind: "bad", line, col: 1, message: `the line is longer than ${MAX_SOURCE_LINE_CHARS} characters` };
	};

	try {
		for await (const chunk of stream as AsyncIterable<string>) {
			let batch: SourceRow[] = [];
			let start = 0;
			for (let newline = chunk.indexOf("\n"); newline !== -1; newline = chunk.indexOf("\n", start)) {
				const piece = chunk.slice(start, newline);
				start = newline + 1;
				const row =
					overlong || carry.length + piece.length > MAX_SOURCE_LINE_CHARS ? tooLong() : classify(carry + piece);
				carry = "";
				overlong = false;
				if (!row) continue;
				batch.push(row);
				if (row.kind === "fatal") {
					yield batch;
					return;
				}
				// A read chunk holds ~2,000 URLs: handed over all at once, their targets would all wait in
				// memory long enough to outlive young collections (a megabyte promoted to the old space per chunk).
				if (batch.length === ROWS_PER_BATCH) {
					yield batch;
					batch = [];
				}
			}
			if (!overlong) {
				const rest = chunk.slice(start);
				// Past the cap, stop buffering: the rest of this line is dropped until its newline.
				if (carry.length + rest.length > MAX_SOURCE_LINE_CHARS) {
					overlong = true;
					carry = "";
				} else {
					carry += rest;
				}
			}
			if (batch.length > 0) yield batch;
		}
		const last = overlong ? tooLong() : carry !== "" ? classify(carry) : undefined;
		if (last) yield [last];
	} catch (error) {
		yield [{ kind: "fatal", at: { file, line: line + 1, col: 1 }, message: `cannot read: ${describeFsError(error)}` }];
	} finally {
		stream.destroy();
	}
}

/** Line breaks inside quoted fields: a record spans one line more than it holds. */
function countNewlines(record: readonly string[]): number {
	let count = 0;
	for (const field of record) {
		for (let i = field.indexOf("\n"); i !== -1; i = field.indexOf("\n", i + 1)) count++;
	}
	return count;
}

function csvErrorMessage(error: CsvError): string {
	switch (error.code) {
		case "CSV_QUOTE_NOT_CLOSED":
			return "CSV syntax error: a quoted field is never closed";
		case "CSV_INVALID_CLOSING_QUOTE":
			return "CSV syntax error: characters after a closing quote (a quote inside a field must be doubled)";
		case "CSV_MAX_RECORD_SIZE":
			return `the row is longer than ${MAX_SOURCE_LINE_CHARS} characters`;
		default:
			return `CSV syntax error: ${error.message}`;
	}
}

function describeHeader(header: readonly string[]): string {
	const shown = header.slice(0, 10).map((name) => quoteValue(name, 40));
	return header.length > shown.length ? `${shown.join(", ")}, … ${header.length} columns` : shown.join(", ");
}

function isBlankRecord(record: readonly string[]): boolean {
	for (const field of record) if (field.trim() !== "") return false;
	return true;
}

interface PendingCsvError {
	error: CsvError;
	/** Records parsed before the error (blank lines and the header count). */
	recordsBefore: number;
}

async function* readCsvRows(spec: CsvSourceSpec): AsyncGenerator<SourceRow[]> {
	const opened = await openSource(spec);
	if (!opened.ok) {
		yield [opened.row];
		return;
	}
	const file = spec.displayPath;
	const stream = opened.handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES });
	const pending: PendingCsvError[] = [];
	const parser = parse({
		bom: true,
		delimiter: spec.delimiter,
		relax_column_count: true,
		// Blank lines come through as records, so lines can be counted here: csv-parse's own
		// per-record `info` costs more than the parsing of a short row.
		skip_empty_lines: false,
		max_record_size: MAX_SOURCE_LINE_CHARS,
		// Errors come to `on_skip` instead of ending the stream, so rows parsed before them are
		// still reported, in order; the first syntax error then ends the source (what follows an
		// unbalanced quote cannot be trusted), an over-long row is only a bad row.
		skip_records_with_error: true,
		on_skip: (error) => {
			if (error) pending.push({ error, recordsBefore: Number(error.records ?? 0) });
			return undefined;
		},
	});
	stream.on("error", (error) => parser.destroy(error));
	const records = stream.pipe(parser) as Readable;

	let columnIndex = -1;
	let headerLength = 0;
	let extraColumns: ExtraColumns = { id: -1, carry: [] };
	/** The next record's first line. */
	let line = 1;
	let recordCount = 0;
	let batch: SourceRow[] = [];

	/** Turn errors that came before record number `beforeRecord` into rows; true when the source must stop. */
	const flush = (beforeRecord: number): boolean => {
		while (pending.length > 0 && pending[0]!.recordsBefore < beforeRecord) {
			const { error } = pending.shift()!;
			// csv-parse reports an unclosed quote where the file ends; the user needs where it opened.
			const at = error.code === "CSV_QUOTE_NOT_CLOSED" ? line : Number(error.lines ?? line);
			const message = csvErrorMessage(error);
			if (error.code === "CSV_MAX_RECORD_SIZE" && columnIndex !== -1) {
				batch.push({ kind: "bad", line: at, col: 1, message });
				line = at + 1;
				continue;
			}
			batch.push({ kind: "fatal", at: { file, line: at, col: 1 }, message });
			return true;
		}
		return false;
	};

	try {
		for await (const record of records as AsyncIterable<string[]>) {
			recordCount++;
			if (pending.length > 0 && flush(recordCount)) break;
			const recordLine = line;
			line += 1 + countNewlines(record);
			if (isBlankRecord(record)) continue;
			if (columnIndex === -1) {
				const header = record.map((name) => name.trim());
				if (header.some((name) => name.includes("\0"))) {
					batch.push({ kind: "fatal", at: { file, line: recordLine, col: 1 }, message: "not a text file (NUL bytes)" });
					break;
				}
				columnIndex = header.indexOf(spec.column);
				headerLength = header.length;
				const extra = locateExtraColumns(spec, header);
				if (typeof extra === "string") {
					batch.push({ kind: "fatal", at: { file, line: recordLine, col: 1 }, message: extra });
					break;
				}
				extraColumns = extra;
				if (columnIndex === -1) {
					const suggestion = didYouMean(spec.column, header);
					const hint = suggestion ? `; did you mean ${JSON.stringify(suggestion)}?` : "";
					batch.push({
						kind: "fatal",
						at: { file, line: recordLine, col: 1 },
						message: `column ${JSON.stringify(spec.column)} not found in the header (${describeHeader(header)})${hint}`,
					});
					break;
				}
				continue;
			}
			batch.push(
				withExtraColumns(
					classifyCsvRecord(record, recordLine, spec.column, columnIndex, headerLength, file),
					record,
					spec,
					extraColumns,
				),
			);
			if (batch.at(-1)?.kind === "fatal") break;
			if (batch.length >= ROWS_PER_BATCH) {
				yield batch;
				batch = [];
			}
		}
		if (batch.at(-1)?.kind !== "fatal") {
			flush(Number.POSITIVE_INFINITY);
			if (columnIndex === -1 && batch.at(-1)?.kind !== "fatal") {
				batch.push({ kind: "fatal", at: { file, line: 1, col: 1 }, message: "the CSV file is empty: no header row" });
			}
		}
		if (batch.length > 0) yield batch;
	} catch (error) {
		yield [...batch, { kind: "fatal", at: { file, line, col: 1 }, message: `cannot read: ${describeFsError(error)}` }];
	} finally {
		parser.destroy();
		stream.destroy();
	}
}

function classifyCsvRecord(
	record: readonly string[],
	line: number,
	column: string,
	columnIndex: number,
	headerLength: number,
	file: string,
): SourceRow {
	const cell = record[columnIndex];
	if (cell === undefined) {
		const fields = `${record.length} ${record.length === 1 ? "field" : "fields"}`;
		return {
			kind: "bad",
			line,
			col: 1,
			message: `the row has ${fields}, so no ${JSON.stringify(column)} (field ${columnIndex + 1} of ${headerLength})`,
		};
	}
	if (cell.includes("\0")) return { kind: "fatal", at: { file, line, col: 1 }, message: "not a text file (NUL bytes)" };
	if (cell.includes("\uFFFD")) return { kind: "bad", line, col: 1, message: "the row is not valid UTF-8 text" };
	const url = cell.trim();
	const problem = checkTargetUrl(url);
	return problem ? { kind: "bad", line, col: 1, message: `${column}: ${problem}` } : { kind: "row", url, line, col: 1 };
}

/** Where `id_column` and the `carry:` columns sit in a CSV header (-1: not asked for). */
interface ExtraColumns {
	id: number;
	carry: ReadonlyArray<{ name: string; index: number }>;
}

function missingColumn(what: string, name: string, header: readonly string[]): string {
	const suggestion = didYouMean(name, header);
	const hint = suggestion ? `; did you mean ${JSON.stringify(suggestion)}?` : "";
	return `${what} ${JSON.stringify(name)} not found in the header (${describeHeader(header)})${hint}`;
}

/** The indices of `id_column` and the carried columns, or why they cannot be read (a missing header). */
function locateExtraColumns(spec: CsvSourceSpec, header: readonly string[]): ExtraColumns | string {
	let id = -1;
	if (spec.idColumn !== undefined) {
		id = header.indexOf(spec.idColumn);
		if (id === -1) return missingColumn("id_column", spec.idColumn, header);
	}
	const carry: Array<{ name: string; index: number }> = [];
	for (const name of spec.carry ?? []) {
		const index = header.indexOf(name);
		if (index === -1) return missingColumn("carried column", name, header);
		carry.push({ name, index });
	}
	return { id, carry };
}

const TARGET_ID_RULE_TEXT =
	"1–128 letters, digits, '.', '_' or '-', not a Windows device name (CON, NUL, …), not 16 hex digits (kept for derived ids); it names files under pages/";

/** A good row gets its id and carried values; a bad id makes it a bad row. */
function withExtraColumns(
	row: SourceRow,
	record: readonly string[],
	spec: CsvSourceSpec,
	extra: ExtraColumns,
): SourceRow {
	if (row.kind !== "row") return row;
	if (extra.id !== -1) {
		const id = (record[extra.id] ?? "").trim();
		if (!TARGET_ID_PATTERN.test(id)) {
			return {
				kind: "bad",
				line: row.line,
				col: 1,
				message: `${spec.idColumn}: ${quoteValue(id, 40)} is not a usable id: ${TARGET_ID_RULE_TEXT}`,
			};
		}
		row.id = id;
	}
	if (extra.carry.length > 0) {
		const carried: Record<string, string | null> = {};
		for (const { name, index } of extra.carry) carried[name] = record[index] ?? null;
		row.carried = carried;
	}
	return row;
}
