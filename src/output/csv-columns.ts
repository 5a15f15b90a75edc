import { RECORD_COLUMNS, type ResultRecord } from "./record.js";

/**
 * The CSV header of a run: the record's columns through `content_path`, then the job's `data`
 * columns (extracted fields in declared order, then service-side labels), then its carried source
 * columns, then the rest (`content_hash, change, depth, parent, useful, useless_reason`). Declared once per run from the job.
 */
export function csvColumnsFor(extra: { data?: readonly string[]; carry?: readonly string[] } = {}): string[] {
	const split = RECORD_COLUMNS.indexOf("content_path") + 1;
	return [
		...RECORD_COLUMNS.slice(0, split),
		...(extra.data ?? []),
		...(extra.carry ?? []),
		...RECORD_COLUMNS.slice(split),
	];
}

const FIXED = new Set<string>(RECORD_COLUMNS);

/** Lists are joined with " | "; objects (nested service-side data) are JSON. */
function cellOf(value: unknown): string | number | null {
	if (value === null || value === undefined) return null;
	if (typeof value === "string" || typeof value === "number") return value;
	if (typeof value === "boolean") return String(value);
	if (Array.isArray(value)) {
		return value
			.map((item) => (item !== null && typeof item === "object" ? JSON.stringify(item) : String(item)))
			.join(" | ");
	}
	return JSON.stringify(value);
}

/**
 * The value of one column: a record field, a `data` key, or a carried column (a top-level key of
 * the record in JSONL). `data` wins over a carried column of the same name (validation forbids that).
 */
export function columnValue(record: ResultRecord, column: string): string | number | null {
	if (FIXED.has(column)) return cellOf(record[column as keyof ResultRecord]);
	if (record.data && Object.hasOwn(record.data, column)) return cellOf(record.data[column]);
	return cellOf((record as unknown as Record<string, unknown>)[column]);
}
