import { writeFileSync } from "node:fs";
import { parquetWriteBuffer } from "hyparquet-writer";
import initSqlJs from "sql.js";
import { csvLines, csvRow, type ResultRecord } from "../output/index.js";
import type { JobHistory } from "./job-history.js";

export const EXPORT_FORMATS = ["csv", "jsonl", "parquet", "sqlite"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Columns of the typed exports: the record's, then each extracted field (in the CSV's order). */
const BASE_COLUMNS = ["id", "url", "http_status", "finished_at", "content_hash", "credits_used"] as const;

function cell(value: unknown): string | null {
	if (value === null || value === undefined) return null;
	return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * `scrapejob export JOB --latest`: the newest ok record of every target across the job's runs, from the
 * history (each record read back from its run's results.jsonl). CSV in the run's columns, JSONL as
 * written, Parquet (hyparquet-writer) and SQLite (sql.js, a table `latest`) with the extracted fields
 * as columns. Returns the number of records written.
 */
export async function exportLatest(
	history: JobHistory,
	format: ExportFormat,
	outFile: string,
	csvColumns: readonly string[],
): Promise<number> {
	const records: ResultRecord[] = [];
	for (const record of history.latestOkRecords()) {
		const { content: _content, ...kept } = record;
		records.push(kept);
	}
	const fields = csvColumns.filter(
		(column) => !(column in (records[0] ?? {})) && !["content_hash", "change", "depth", "parent"].includes(column),
	);
	const dataFields = fields.length ? fields : [...new Set(records.flatMap((record) => Object.keys(record.data ?? {})))];
	switch (format) {
		case "jsonl":
			writeFileSync(outFile, records.map((record) => `${JSON.stringify(record)}\n`).join(""));
			break;
		case "csv":
			writeFileSync(outFile, csvLines([[...csvColumns], ...records.map((record) => csvRow(record, csvColumns))]));
			break;
		case "parquet": {
			const columnData = [
				...BASE_COLUMNS.map((name) => ({
					name,
					data: records.map((record) =>
						name === "http_status" || name === "credits_used" ? (record[name] ?? null) : cell(record[name]),
					),
					type: (name === "http_status" || name === "credits_used" ? "DOUBLE" : "STRING") as "DOUBLE" | "STRING",
				})),
				...dataFields.map((name) => ({
					name,
					data: records.map((record) => cell(record.data?.[name])),
					type: "STRING" as const,
				})),
			];
			writeFileSync(outFile, Buffer.from(parquetWriteBuffer({ columnData })));
			break;
		}
		case "sqlite": {
			const SQL = await initSqlJs();
			const db = new SQL.Database();
			const columns = [...BASE_COLUMNS, ...dataFields];
			const quoted = columns.map((name) => `"${name.replace(/"/g, '""')}"`);
			db.run(
				`CREATE TABLE latest (${quoted.map((name, index) => `${name} ${index === 2 || index === 5 ? "REAL" : "TEXT"}`).join(", ")})`,
			);
			const insert = db.prepare(`INSERT INTO latest VALUES (${columns.map(() => "?").join(", ")})`);
			db.run("BEGIN");
			for (const record of records) {
				insert.run([
					record.id,
					record.url,
					record.http_status,
					record.finished_at,
					record.content_hash,
					record.credits_used,
					...dataFields.map((name) => {
						const value = record.data?.[name];
						return typeof value === "number" ? value : cell(value);
					}),
				]);
			}
			db.run("COMMIT");
			insert.free();
			writeFileSync(outFile, Buffer.from(db.export()));
			db.close();
			break;
		}
		default: {
			const unreachable: never = format;
			throw new Error(`unknown format ${String(unreachable)}`);
		}
	}
	return records.length;
}
