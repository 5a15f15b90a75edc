import { closeSync, openSync, readSync, statSync } from "node:fs";
import { lazyModule } from "../common/index.js";
import { openAppendFile } from "./append-file.js";
import { cutCell, DEFAULT_CSV_MAX_CELL } from "./csv-cell.js";
import { columnValue } from "./csv-columns.js";
import { RECORD_COLUMNS, type ResultRecord } from "./record.js";
import type { RecordSink } from "./record-sink.js";

/** The CSV libraries, loaded by the first CSV line written or header read: a run without CSV output needs neither (see `lazyModule`). */
const csvParse = lazyModule<typeof import("csv-parse/sync")>("csv-parse/sync");
const csvStringify = lazyModule<typeof import("csv-stringify/sync")>("csv-stringify/sync");

/**
 * Cells a spreadsheet would run as a formula get a leading apostrophe (OWASP "CSV injection").
 * Scraped URLs and messages come from the web, so they are untrusted.
 */
export function neutraliseFormula(value: string): string {
	return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

function row(record: ResultRecord, columns: readonly string[], maxCell: number): Array<string | number> {
	return columns.map((column) => {
		const value = columnValue(record, column);
		if (value === null) return "";
		return typeof value === "string" ? cutCell(neutraliseFormula(value), maxCell) : value;
	});
}

/** The header row of an existing CSV file (its first record), or null when there is none to read. */
export function readCsvHeader(path: string): string[] | null {
	// Loaded first, outside the tries: a parser that cannot load is an error, not a file without a header.
	const { parse } = csvParse();
	let fd: number;
	try {
		fd = openSync(path, "r");
	} catch {
		return null;
	}
	try {
		const buffer = Buffer.alloc(64 * 1024);
		const length = readSync(fd, buffer, 0, buffer.length, 0);
		const text = buffer.subarray(0, length).toString("utf8");
		const end = text.indexOf("\n");
		if (end === -1) return null;
		const records = parse(text.slice(0, end + 1), { bom: true, relax_column_count: true }) as string[][];
		return records[0] ?? null;
	} catch {
		return null;
	} finally {
		closeSync(fd);
	}
}

/** Render records as RFC 4180 CSV lines (CRLF, quoted where needed). */
export function csvLines(rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
	return csvStringify().stringify(rows as Array<Array<string | number>>, {
		record_delimiter: "windows",
		quoted_match: /^\s|\s$/,
	});
}

/**
 * The header row, its cells neutralised as data cells are: `carry` names come from a source file's
 * header and labels from the job, and `validate` refuses names that are not plain identifiers, but the
 * header must be safe to open whoever wrote the names (the library takes plans without a job file).
 */
export function csvHeaderLine(columns: readonly string[]): string {
	return csvLines([columns.map(neutraliseFormula)]);
}

/** The UTF-8 byte order mark: Excel reads a CSV as UTF-8 only when it starts with one. */
export const UTF8_BOM = "\uFEFF";

export interface CsvSinkOptions {
	/** Start a new file with a UTF-8 BOM (`output.csv_bom`). @default false */
	readonly bom?: boolean;
	/** The header: `csvColumnsFor(job)` (the record's columns, the job's extract and carry columns). @default RECORD_COLUMNS */
	readonly columns?: readonly string[];
	/**
	 * Longest cell, in characters (`output.csv_max_cell`): a longer one is cut with a trailing
	 * `…[+N chars]`, the marker included; 0 = no limit. @default 32767
	 */
	readonly maxCell?: number;
}

/**
 * `results.csv`: the header once (only when the file is new or empty, so a resumed run appends
 * rows under the header it already has — and never a second BOM), then one row per record.
 * `options.columns` is the run's header (`csvColumnsFor(job)`); a resumed run whose file has another
 * header keeps writing in the file's columns, so every row stays under its header.
 */
export function createCsvSink(path: string, options: CsvSinkOptions = {}): RecordSink {
	const columns = options.columns ?? RECORD_COLUMNS;
	const maxCell = options.maxCell ?? DEFAULT_CSV_MAX_CELL;
	let size = 0;
	try {
		size = statSync(path).size;
	} catch {
		size = 0;
	}
	const header = size === 0 ? [...columns] : (readCsvHeader(path) ?? [...columns]);
	const file = openAppendFile(path);
	if (size === 0) file.append(`${options.bom ? UTF8_BOM : ""}${csvHeaderLine(header)}`);
	return {
		write(record) {
			file.append(csvLines([row(record, header, maxCell)]));
		},
		sync: () => file.sync(),
		retractLast: () => file.retractLast(),
		close: async () => file.close(),
	};
}

/** One record's CSV row as the sink writes it (`maxCell` as `CsvSinkOptions.maxCell`). */
export function csvRow(
	record: ResultRecord,
	columns: readonly string[] = RECORD_COLUMNS,
	maxCell: number = DEFAULT_CSV_MAX_CELL,
): Array<string | number> {
	return row(record, columns, maxCell);
}
