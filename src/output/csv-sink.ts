import { statSync } from "node:fs";
import { stringify } from "csv-stringify/sync";
import { openAppendFile } from "./append-file.js";
import { RECORD_COLUMNS, type ResultRecord } from "./record.js";
import type { RecordSink } from "./record-sink.js";

/**
 * Cells a spreadsheet would run as a formula get a leading apostrophe (OWASP "CSV injection").
 * Scraped URLs and messages come from the web, so they are untrusted.
 */
export function neutraliseFormula(value: string): string {
	return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

function row(record: ResultRecord): Array<string | number> {
	return RECORD_COLUMNS.map((column) => {
		const value = record[column];
		if (value === null || value === undefined) return "";
		return typeof value === "string" ? neutraliseFormula(value) : value;
	});
}

/** Render records as RFC 4180 CSV lines (CRLF, quoted where needed). */
export function csvLines(rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
	return stringify(rows as Array<Array<string | number>>, { record_delimiter: "windows", quoted_match: /^\s|\s$/ });
}

/** The UTF-8 byte order mark: Excel reads a CSV as UTF-8 only when it starts with one. */
export const UTF8_BOM = "\uFEFF";

export interface CsvSinkOptions {
	/** Start a new file with a UTF-8 BOM (`output.csv_bom`). @default false */
	readonly bom?: boolean;
}

/**
 * `results.csv`: the header once (only when the file is new or empty, so a resumed run appends
 * rows under the header it already has — and never a second BOM), then one row per record.
 */
export function createCsvSink(path: string, options: CsvSinkOptions = {}): RecordSink {
	let size = 0;
	try {
		size = statSync(path).size;
	} catch {
		size = 0;
	}
	const file = openAppendFile(path);
	if (size === 0) file.append(`${options.bom ? UTF8_BOM : ""}${csvLines([[...RECORD_COLUMNS]])}`);
	return {
		write(record) {
			file.append(csvLines([row(record)]));
		},
		sync: () => file.sync(),
		close: async () => file.close(),
	};
}

export function csvRow(record: ResultRecord): Array<string | number> {
	return row(record);
}
