import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import type { Readable } from "node:stream";
import { type CsvError, type Info, parse } from "csv-parse";
import { didYouMean } from "./did-you-mean.js";
import { describeFsError } from "./parse-yaml.js";
import { quoteValue } from "./problems.js";
import type { CsvSourceSpec, SourceSpec, TargetOrigin, TextSourceSpec } from "./types.js";
import { checkTargetUrl } from "./url-check.js";

/**
 * The longest line (text) or record (CSV) read from a source: 64 KiB. Real URLs stay far below
 * it; without a cap, a file with no line breaks (a binary, a minified blob) would be buffered whole.
 */
export const MAX_SOURCE_LINE_CHARS = 64 * 1024;
/** Bytes read from a source file at a time. */
const READ_CHUNK_BYTES = 64 * 1024;

/** What reading a source yields, one per line that holds data, in file order. */
export type SourceRow =
	| { kind: "row"; url: string; line: number; col: number }
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
 * Stream a source's rows lazily (nothing is read ahead of what the consumer pulls beyond one
 * chunk), in file order, never holding the file whole. Blank lines are skipped everywhere, and
 * `#` comment lines in text sources; CRLF line ends and a UTF-8 BOM are accepted in both kinds.
 */
export function readSourceRows(spec: SourceSpec): AsyncGenerator<SourceRow> {
	return spec.kind === "csv" ? readCsvRows(spec) : readTextRows(spec);
}

async function* readTextRows(spec: TextSourceSpec): AsyncGenerator<SourceRow> {
	const opened = await openSource(spec);
	if (!opened.ok) {
		yield opened.row;
		return;
	}
	const stream = opened.handle.createReadStream({ encoding: "utf8", highWaterMark: READ_CHUNK_BYTES });
	const file = spec.displayPath;
	let line = 0;
	let carry = "";
	let overlong = false;

	const classify = (raw: string): SourceRow | undefined => {
		line++;
		let text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
		if (line === 1 && text.startsWith("\uFEFF")) text = text.slice(1);
		if (text.includes("\0")) {
			return { kind: "fatal", at: { file, line, col: text.indexOf("\0") + 1 }, message: "not a text file (NUL bytes)" };
		}
		const start = text.search(/\S/);
		if (start === -1 || text[start] === "#") return undefined;
		const col = start + 1;
		if (text.includes("\uFFFD")) return { kind: "bad", line, col, message: "the line is not valid UTF-8 text" };
		const url = text.trim();
		const problem = checkTargetUrl(url);
		return problem ? { kind: "bad", line, col, message: problem } : { kind: "row", url, line, col };
	};
	const tooLong = (): SourceRow => {
		line++;
		return { kind: "bad", line, col: 1, message: `the line is longer than ${MAX_SOURCE_LINE_CHARS} characters` };
	};

	try {
		for await (const chunk of stream as AsyncIterable<string>) {
			let start = 0;
			for (let newline = chunk.indexOf("\n"); newline !== -1; newline = chunk.indexOf("\n", start)) {
				const piece = chunk.slice(start, newline);
				start = newline + 1;
				const row =
					overlong || carry.length + piece.length > MAX_SOURCE_LINE_CHARS ? tooLong() : classify(carry + piece);
				carry = "";
				overlong = false;
				if (!row) continue;
				yield row;
				if (row.kind === "fatal") return;
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
		}
		const last = overlong ? tooLong() : carry !== "" ? classify(carry) : undefined;
		if (last) yield last;
	} catch (error) {
		yield { kind: "fatal", at: { file, line: line + 1, col: 1 }, message: `cannot read: ${describeFsError(error)}` };
	} finally {
		stream.destroy();
	}
}

/** Newlines inside quoted fields, so a record's first line can be told from the line it ends on. */
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

interface PendingCsvError {
	error: CsvError;
	/** Records parsed before the error (the header counts). */
	recordsBefore: number;
}

async function* readCsvRows(spec: CsvSourceSpec): AsyncGenerator<SourceRow> {
	const opened = await openSource(spec);
	if (!opened.ok) {
		yield opened.row;
		return;
	}
	const file = spec.displayPath;
	const stream = opened.handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES });
	const pending: PendingCsvError[] = [];
	const parser = parse({
		bom: true,
		delimiter: spec.delimiter,
		info: true,
		relax_column_count: true,
		skip_empty_lines: true,
		skip_records_with_empty_values: true,
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
	/** Flush errors that happened before the record numbered `beforeRecord`; true when the source must stop. */
	function* flush(beforeRecord: number): Generator<SourceRow, boolean> {
		while (pending.length > 0 && pending[0]!.recordsBefore < beforeRecord) {
			const { error } = pending.shift()!;
			const line = Number(error.lines ?? 1);
			const message = csvErrorMessage(error);
			if (error.code === "CSV_MAX_RECORD_SIZE" && columnIndex !== -1) {
				yield { kind: "bad", line, col: 1, message };
				continue;
			}
			yield { kind: "fatal", at: { file, line, col: 1 }, message };
			return true;
		}
		return false;
	}

	try {
		for await (const item of records as AsyncIterable<{ record: string[]; info: Info }>) {
			const { record, info } = item;
			if (yield* flush(info.records)) return;
			const line = info.lines - countNewlines(record);
			if (columnIndex === -1) {
				const header = record.map((name) => name.trim());
				if (header.some((name) => name.includes("\0"))) {
					yield { kind: "fatal", at: { file, line, col: 1 }, message: "not a text file (NUL bytes)" };
					return;
				}
				columnIndex = header.indexOf(spec.column);
				headerLength = header.length;
				if (columnIndex === -1) {
					const suggestion = didYouMean(spec.column, header);
					const hint = suggestion ? `; did you mean ${JSON.stringify(suggestion)}?` : "";
					yield {
						kind: "fatal",
						at: { file, line, col: 1 },
						message: `column ${JSON.stringify(spec.column)} not found in the header (${describeHeader(header)})${hint}`,
					};
					return;
				}
				continue;
			}
			const cell = record[columnIndex];
			if (cell === undefined) {
				yield {
					kind: "bad",
					line,
					col: 1,
					message: `the row has ${record.length} ${record.length === 1 ? "field" : "fields"}, so no ${JSON.stringify(spec.column)} (field ${columnIndex + 1} of ${headerLength})`,
				};
				continue;
			}
			if (cell.includes("\0")) {
				yield { kind: "fatal", at: { file, line, col: 1 }, message: "not a text file (NUL bytes)" };
				return;
			}
			if (cell.includes("\uFFFD")) {
				yield { kind: "bad", line, col: 1, message: "the row is not valid UTF-8 text" };
				continue;
			}
			const url = cell.trim();
			const problem = checkTargetUrl(url);
			if (problem) {
				yield { kind: "bad", line, col: 1, message: `${spec.column}: ${problem}` };
				continue;
			}
			yield { kind: "row", url, line, col: 1 };
		}
		if (yield* flush(Number.POSITIVE_INFINITY)) return;
		if (columnIndex === -1) {
			yield { kind: "fatal", at: { file, line: 1, col: 1 }, message: "the CSV file is empty: no header row" };
		}
	} catch (error) {
		yield { kind: "fatal", at: { file, line: 1, col: 1 }, message: `cannot read: ${describeFsError(error)}` };
	} finally {
		parser.destroy();
		stream.destroy();
	}
}
