import { closeSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { csvLines, csvRow, RECORD_COLUMNS, type ResultRecord } from "../output/index.js";
import type { JobHistory } from "./job-history.js";

export const EXPORT_FORMATS = ["csv", "jsonl", "parquet", "sqlite"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Columns of the typed exports (Parquet, SQLite) before the job's extracted and carried ones. */
const BASE_COLUMNS = ["id", "url", "http_status", "finished_at", "content_hash", "credits_used"] as const;
/** Rows per Parquet row group and per write: what the export holds in memory at once. */
const BATCH_ROWS = 20_000;
/** Text buffered before a write to the file (csv, jsonl). */
const FLUSH_CHARS = 1 << 20;

/** A typed column: numbers (a field whose every value is a number) or text (lists and objects as JSON). */
interface TypedColumn {
	readonly name: string;
	readonly kind: "integer" | "number" | "text";
	value(record: ResultRecord): string | number | null;
}

const FIXED = new Set<string>(RECORD_COLUMNS);

/** An extracted field (`data`) or a carried source column (a top-level key of the record). */
function extraValue(record: ResultRecord, name: string): unknown {
	if (record.data && Object.hasOwn(record.data, name)) return record.data[name];
	return (record as unknown as Record<string, unknown>)[name];
}

function text(value: unknown): string | null {
	if (value === null || value === undefined) return null;
	return typeof value === "string" ? value : JSON.stringify(value);
}

function baseColumn(name: (typeof BASE_COLUMNS)[number]): TypedColumn {
	if (name === "http_status") return { name, kind: "integer", value: (record) => record.http_status ?? null };
	if (name === "credits_used") return { name, kind: "number", value: (record) => record.credits_used ?? null };
	return { name, kind: "text", value: (record) => text(record[name]) };
}

/**
 * The typed columns: the base ones, then each extracted and carried column, typed from the values the
 * export holds (a first pass): a number column only when every value found is a number, so a reader
 * can sum prices without casting, and nothing is ever lost to a wrong guess.
 */
function typedColumns(history: JobHistory, extra: readonly string[]): TypedColumn[] {
	const numeric = new Map(extra.map((name) => [name, { seen: false, numbers: true }]));
	for (const record of history.latestOkRecords()) {
		for (const [name, state] of numeric) {
			if (!state.numbers) continue;
			const value = extraValue(record, name);
			if (value === null || value === undefined) continue;
			state.seen = true;
			if (typeof value !== "number" || !Number.isFinite(value)) state.numbers = false;
		}
	}
	return [
		...BASE_COLUMNS.map(baseColumn),
		...extra.map((name): TypedColumn => {
			const state = numeric.get(name)!;
			if (state.seen && state.numbers) {
				return { name, kind: "number", value: (record) => extraValue(record, name) as number | null };
			}
			return { name, kind: "text", value: (record) => text(extraValue(record, name)) };
		}),
	];
}

/** Text lines into a file, a megabyte at a time. */
function writeLines(path: string, lines: Iterable<string>): void {
	const fd = openSync(path, "w");
	try {
		let pending = "";
		for (const line of lines) {
			pending += line;
			if (pending.length >= FLUSH_CHARS) {
				writeSync(fd, pending);
				pending = "";
			}
		}
		if (pending) writeSync(fd, pending);
	} finally {
		closeSync(fd);
	}
}

/** The records as exported: without inline content (it belongs in the run folders, not in a table). */
function* exportedRecords(history: JobHistory, count: { records: number }): Generator<ResultRecord> {
	for (const record of history.latestOkRecords()) {
		const { content: _content, ...kept } = record;
		count.records += 1;
		yield kept;
	}
}

async function writeParquet(
	path: string,
	history: JobHistory,
	columns: TypedColumn[],
	count: { records: number },
): Promise<void> {
	const type = (kind: TypedColumn["kind"]) => (kind === "integer" ? "INT32" : kind === "number" ? "DOUBLE" : "STRING");
	// Loaded when an export asks for it: every `run` loads the history module, and these two weigh ~4 MB.
	const { fileWriter, ParquetWriter, schemaFromColumnData } = await import("hyparquet-writer");
	const schema = schemaFromColumnData({
		columnData: columns.map((column) => ({ name: column.name, data: [], type: type(column.kind) })),
	});
	const writer = new ParquetWriter({ writer: fileWriter(path), schema });
	// Column values only, a row group at a time: the records themselves are dropped as they are read.
	let values = columns.map((): Array<string | number | null> => []);
	const flush = async () => {
		await writer.write({
			columnData: columns.map((column, index) => ({
				name: column.name,
				data: values[index]!,
				type: type(column.kind),
			})),
			rowGroupSize: BATCH_ROWS,
		});
		values = columns.map(() => []);
	};
	for (const record of exportedRecords(history, count)) {
		for (let index = 0; index < columns.length; index += 1) values[index]!.push(columns[index]!.value(record));
		// A file writer flushes synchronously; awaited in case a writer's flush is a promise.
		if (values[0]!.length >= BATCH_ROWS) await flush();
	}
	if (values[0]!.length > 0) await flush();
	await writer.finish();
}

async function writeSqlite(
	path: string,
	history: JobHistory,
	columns: TypedColumn[],
	count: { records: number },
): Promise<void> {
	const { default: initSqlJs } = await import("sql.js");
	const SQL = await initSqlJs();
	const db = new SQL.Database();
	try {
		const sqlType = (kind: TypedColumn["kind"]) =>
			kind === "integer" ? "INTEGER" : kind === "number" ? "REAL" : "TEXT";
		const quoted = columns.map((column) => `"${column.name.replace(/"/g, '""')}"`);
		db.run(
			`CREATE TABLE latest (${columns.map((column, index) => `${quoted[index]} ${sqlType(column.kind)}`).join(", ")})`,
		);
		const insert = db.prepare(`INSERT INTO latest VALUES (${columns.map(() => "?").join(", ")})`);
		db.run("BEGIN");
		for (const record of exportedRecords(history, count)) insert.run(columns.map((column) => column.value(record)));
		db.run("COMMIT");
		insert.free();
		const fd = openSync(path, "w");
		try {
			writeSync(fd, db.export());
		} finally {
			closeSync(fd);
		}
	} finally {
		db.close();
	}
}

/**
 * `scrapejob export JOB --latest`: the newest ok record of every target across the job's runs, from the
 * history (each record read back from its run's results.jsonl), streamed: csv in the runs' columns,
 * jsonl as written, Parquet (hyparquet-writer, a row group per 20,000 rows) and SQLite (sql.js, a table
 * `latest`) with a typed column per extracted and carried field. Written to a temporary file renamed
 * over `outFile` at the end, so a failed export never leaves half a file. Returns the records written.
 */
export async function exportLatest(
	history: JobHistory,
	format: ExportFormat,
	outFile: string,
	csvColumns: readonly string[],
): Promise<number> {
	const count = { records: 0 };
	const temporary = `${outFile}.${process.pid}.tmp`;
	const extra = csvColumns.filter((column) => !FIXED.has(column));
	try {
		switch (format) {
			case "jsonl":
				writeLines(
					temporary,
					(function* () {
						for (const record of exportedRecords(history, count)) yield `${JSON.stringify(record)}\n`;
					})(),
				);
				break;
			case "csv":
				writeLines(
					temporary,
					(function* () {
						yield csvLines([[...csvColumns]]);
						for (const record of exportedRecords(history, count)) yield csvLines([csvRow(record, csvColumns)]);
					})(),
				);
				break;
			case "parquet":
				await writeParquet(temporary, history, typedColumns(history, extra), count);
				break;
			case "sqlite":
				await writeSqlite(temporary, history, typedColumns(history, extra), count);
				break;
			default: {
				const unreachable: never = format;
				throw new Error(`unknown format ${String(unreachable)}`);
			}
		}
		renameSync(temporary, outFile);
	} catch (error) {
		rmSync(temporary, { force: true });
		throw error;
	}
	return count.records;
}
