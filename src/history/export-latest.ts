import { fstatSync, lstatSync, writeSync } from "node:fs";
import type BetterSqlite3 from "better-sqlite3";
import { lazyModule, ScrapejobError, writeAll } from "../common/index.js";
import { csvLines, csvRow, OutputError, RECORD_COLUMNS, type ResultRecord } from "../output/index.js";
import { createTemporaryFile, type TemporaryFile } from "./export-target.js";
import type { JobHistory } from "./job-history.js";

export const EXPORT_FORMATS = ["csv", "jsonl", "parquet", "sqlite"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

const sqlite = lazyModule<typeof BetterSqlite3>("better-sqlite3");

/** Columns of the typed exports (Parquet, SQLite) before the job's extracted and carried ones. */
const BASE_COLUMNS = ["id", "url", "http_status", "finished_at", "content_hash", "credits_used"] as const;
/**
 * Memory of values (as `valueBytes` counts it) in one Parquet row group: what the export holds at once,
 * whatever a record's size (rows of 2 MB each make groups of two, rows of 300 bytes groups of ~28,000).
 */
export const ROW_GROUP_BYTES = 8 << 20;
/** Rows per SQLite transaction, at most. */
const SQLITE_BATCH_ROWS = 10_000;
/** Values per SQLite transaction, at most (as `valueBytes` counts them). */
const SQLITE_BATCH_BYTES = 8 << 20;
/** Text buffered before a write to the file (csv, jsonl). */
const FLUSH_CHARS = 1 << 20;

/** A typed column: numbers (a field whose every value is a number) or text (lists and objects as JSON). */
interface TypedColumn {
	/** Its name in the file: unique ignoring case (SQLite's names ignore case; so do many Parquet readers). */
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
 * Names unique ignoring case: an extracted field `URL` beside the record's `url` is written `data_URL`
 * (then `data_URL_2`, … should that be taken too).
 */
export function uniqueColumnNames(names: readonly string[]): string[] {
	const taken = new Set<string>();
	return names.map((name) => {
		let unique = name;
		if (taken.has(unique.toLowerCase())) unique = `data_${name}`;
		for (let n = 2; taken.has(unique.toLowerCase()); n += 1) unique = `data_${name}_${n}`;
		taken.add(unique.toLowerCase());
		return unique;
	});
}

/**
 * The typed columns: the base ones, then each extracted and carried column, typed from the values the
 * export holds (a first pass): a number column only when every value found is a number, so a reader
 * can sum prices without casting, and nothing is ever lost to a wrong guess.
 */
function typedColumns(history: Pick<JobHistory, "latestOkRecords">, extra: readonly string[]): TypedColumn[] {
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
	const names = uniqueColumnNames([...BASE_COLUMNS, ...extra]);
	return [
		...BASE_COLUMNS.map(baseColumn),
		...extra.map((field, index): TypedColumn => {
			const name = names[BASE_COLUMNS.length + index]!;
			const state = numeric.get(field)!;
			if (state.seen && state.numbers) {
				return { name, kind: "number", value: (record) => extraValue(record, field) as number | null };
			}
			return { name, kind: "text", value: (record) => text(extraValue(record, field)) };
		}),
	];
}

/** Text lines into a file, a megabyte at a time. */
function writeLines(fd: number, lines: Iterable<string>): void {
	let pending = "";
	for (const line of lines) {
		pending += line;
		if (pending.length >= FLUSH_CHARS) {
			writeAll(fd, pending);
			pending = "";
		}
	}
	if (pending) writeAll(fd, pending);
}

/** The records as exported: without inline content (it belongs in the run folders, not in a table). */
function* exportedRecords(
	history: Pick<JobHistory, "latestOkRecords">,
	count: { records: number },
): Generator<ResultRecord> {
	for (const record of history.latestOkRecords()) {
		const { content: _content, ...kept } = record;
		count.records += 1;
		yield kept;
	}
}

/**
 * About the memory a value takes while its row group is built and encoded (V8 keeps short strings as
 * objects of their own: a header beside two bytes a character at worst).
 */
function valueBytes(value: string | number | null): number {
	return typeof value === "string" ? 2 * value.length + 32 : 16;
}

async function writeParquet(
	file: TemporaryFile,
	history: Pick<JobHistory, "latestOkRecords">,
	columns: TypedColumn[],
	count: { records: number },
): Promise<void> {
	const type = (kind: TypedColumn["kind"]) => (kind === "integer" ? "INT32" : kind === "number" ? "DOUBLE" : "STRING");
	// Loaded when an export asks for it: every `run` loads the history module, and these weigh ~4 MB.
	const { ByteWriter, ParquetWriter, schemaFromColumnData } = await import("hyparquet-writer");
	const schema = schemaFromColumnData({
		columnData: columns.map((column) => ({ name: column.name, data: [], type: type(column.kind) })),
	});
	const writer = new ParquetWriter({ writer: fdWriter(ByteWriter, file.fd), schema });
	// Column values only, a row group at a time: the records themselves are dropped as they are read.
	let values = columns.map((): Array<string | number | null> => []);
	let bytes = 0;
	const flush = async () => {
		await writer.write({
			columnData: columns.map((column, index) => ({
				name: column.name,
				data: values[index]!,
				type: type(column.kind),
			})),
			rowGroupSize: values[0]!.length,
		});
		values = columns.map(() => []);
		bytes = 0;
	};
	for (const record of exportedRecords(history, count)) {
		for (let index = 0; index < columns.length; index += 1) {
			const value = columns[index]!.value(record);
			values[index]!.push(value);
			bytes += valueBytes(value);
		}
		if (bytes >= ROW_GROUP_BYTES) await flush();
	}
	if (values[0]!.length > 0) await flush();
	await writer.finish();
}

/**
 * hyparquet-writer's buffer, written to our descriptor a megabyte at a time (its own `fileWriter` opens
 * the path with "w", following links).
 */
function fdWriter(
	ByteWriter: typeof import("hyparquet-writer").ByteWriter,
	fd: number,
): InstanceType<typeof import("hyparquet-writer").ByteWriter> {
	const writer = new ByteWriter();
	const flush = () => {
		let at = 0;
		while (at < writer.index) at += writeSync(fd, new Uint8Array(writer.buffer, at, writer.index - at));
		writer.index = 0;
	};
	const ensure = writer.ensure.bind(writer);
	writer.ensure = (size: number) => {
		if (writer.index > 1 << 20) flush();
		ensure(size);
	};
	writer.finish = flush;
	return writer;
}

function writeSqlite(
	file: TemporaryFile,
	history: Pick<JobHistory, "latestOkRecords">,
	columns: TypedColumn[],
	count: { records: number },
): void {
	const Sqlite = sqlite();
	// SQLite opens the temporary file this process made (empty: a valid empty database) by its name; the
	// name still being that file is checked, so a link swapped in meanwhile is never written through.
	const db = new Sqlite(file.path, { fileMustExist: true });
	try {
		const made = fstatSync(file.fd);
		const named = lstatSync(file.path);
		if (named.isSymbolicLink() || named.ino !== made.ino || named.dev !== made.dev) {
			throw new Error(`${file.path} was replaced while the export wrote it`);
		}
		// A file renamed into place when complete needs no journal: no side file is made beside it.
		db.pragma("journal_mode = OFF");
		db.pragma("synchronous = OFF");
		const sqlType = (kind: TypedColumn["kind"]) =>
			kind === "integer" ? "INTEGER" : kind === "number" ? "REAL" : "TEXT";
		const quoted = columns.map((column) => `"${column.name.replace(/"/g, '""')}"`);
		db.exec(
			`CREATE TABLE latest (${columns.map((column, index) => `${quoted[index]} ${sqlType(column.kind)}`).join(", ")})`,
		);
		// SQLite's own page cache, bounded as the job store's is: rows of megabytes go to the file, not memory.
		db.pragma("cache_size = -2000");
		const insert = db.prepare(`INSERT INTO latest VALUES (${columns.map(() => "?").join(", ")})`);
		// One row in memory at a time, inside transactions of at most SQLITE_BATCH_ROWS rows or
		// SQLITE_BATCH_BYTES of values: 250 records of 2 MB each, gathered 10,000 rows a batch, peaked at 655 MB.
		let rows = 0;
		let bytes = 0;
		db.exec("BEGIN");
		for (const record of exportedRecords(history, count)) {
			const values = columns.map((column) => column.value(record));
			insert.run(values);
			rows += 1;
			for (const value of values) bytes += valueBytes(value);
			if (rows >= SQLITE_BATCH_ROWS || bytes >= SQLITE_BATCH_BYTES) {
				db.exec("COMMIT");
				db.exec("BEGIN");
				rows = 0;
				bytes = 0;
			}
		}
		db.exec("COMMIT");
	} finally {
		db.close();
	}
}

/**
 * `scrapejob export JOB --latest`: the newest ok record of every target across the job's runs, from the
 * job's store (each record read back from its run's results.jsonl, run by run), streamed in bounded
 * memory: csv in the runs' columns, jsonl as written, Parquet (row groups of about 8 MB of values) and
 * SQLite (a table `latest`, written by SQLite into the file) with a typed column per extracted and
 * carried field. Written to a new temporary file (created exclusively) renamed over `outFile` at the
 * end, so a failed export never leaves half a file. Check the destination first (`checkExportTarget`).
 * Returns the records written.
 */
export async function exportLatest(
	history: Pick<JobHistory, "latestOkRecords">,
	format: ExportFormat,
	outFile: string,
	csvColumns: readonly string[],
	/** The job's `output.csv_max_cell`: export cuts cells as the runs' CSVs do. */
	csvMaxCell?: number,
): Promise<number> {
	const count = { records: 0 };
	const extra = csvColumns.filter((column) => !FIXED.has(column));
	// A disk that is full or read-only is the output's failure (exit 5, naming the file), as in a run;
	// what reading the runs' records threw is said as it is.
	const notWritten = (error: unknown) =>
		new OutputError(outFile, error, "the export was not written (nothing is left there)");
	let file: TemporaryFile;
	try {
		file = createTemporaryFile(outFile);
	} catch (error) {
		throw notWritten(error);
	}
	const reads = readsTagged(history);
	const records = reads.history;
	try {
		switch (format) {
			case "jsonl":
				writeLines(
					file.fd,
					(function* () {
						for (const record of exportedRecords(records, count)) yield `${JSON.stringify(record)}\n`;
					})(),
				);
				break;
			case "csv":
				writeLines(
					file.fd,
					(function* () {
						yield csvLines([[...csvColumns]]);
						for (const record of exportedRecords(records, count))
							yield csvLines([csvRow(record, csvColumns, csvMaxCell)]);
					})(),
				);
				break;
			case "parquet":
				await writeParquet(file, records, typedColumns(records, extra), count);
				break;
			case "sqlite":
				writeSqlite(file, records, typedColumns(records, extra), count);
				break;
			default: {
				const unreachable: never = format;
				throw new Error(`unknown format ${String(unreachable)}`);
			}
		}
		file.commit();
	} catch (error) {
		file.discard();
		throw isWriteFailure(error) && !reads.failed(error) ? notWritten(error) : error;
	}
	return count.records;
}

/** A file system's or SQLite's refusal (ENOSPC, SQLITE_FULL, EROFS…), not a bug nor one of ours. */
function isWriteFailure(error: unknown): boolean {
	return !(error instanceof ScrapejobError) && typeof (error as { code?: unknown } | null)?.code === "string";
}

/** `history`, with what its records' reading threw remembered: that is no failure of the export's file. */
function readsTagged(history: Pick<JobHistory, "latestOkRecords">): {
	history: Pick<JobHistory, "latestOkRecords">;
	failed(error: unknown): boolean;
} {
	const thrown = new WeakSet<object>();
	return {
		history: {
			*latestOkRecords() {
				try {
					yield* history.latestOkRecords();
				} catch (error) {
					if (typeof error === "object" && error !== null) thrown.add(error);
					throw error;
				}
			},
		},
		failed: (error) => typeof error === "object" && error !== null && thrown.has(error),
	};
}
