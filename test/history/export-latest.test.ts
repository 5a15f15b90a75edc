import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exportLatest, openJobHistory } from "../../src/history/index.js";
import { csvColumnsFor, type ResultRecord } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";
import { record } from "../helpers/records.js";

const hex = (n: number) => n.toString(16).padStart(16, "0");

function writeRun(jobDir: string, runId: string, records: ResultRecord[]): void {
	mkdirSync(join(jobDir, runId), { recursive: true });
	writeFileSync(join(jobDir, runId, "results.jsonl"), records.map((line) => `${JSON.stringify(line)}\n`).join(""));
}

/** Three targets over two runs: 1's price moved, 2 failed in the second run (its first-run record is its newest ok). */
function shop(): string {
	const jobDir = join(tempDir(), "shop");
	const first = "2026-11-21T00:00:00.000Z";
	const second = "2026-11-22T00:00:00.000Z";
	const ok = (n: number, at: string, price: number) =>
		record(hex(n), {
			url: `https://shop.test/p/${n}`,
			finished_at: at,
			content_hash: hex(price * 100),
			// `URL` beside the record's `url`: SQLite's names ignore case.
			data: { price, URL: `https://cdn.test/${n}.jpg`, tags: ["a", "b"] },
			content: "<html>not exported</html>",
		});
	writeRun(jobDir, "run-1", [ok(1, first, 10), ok(2, first, 20), ok(3, first, 30)]);
	writeRun(jobDir, "run-2", [
		ok(1, second, 12.5),
		record(hex(2), { url: "https://shop.test/p/2", finished_at: second, status: "failed" }),
		ok(3, second, 30),
	]);
	return jobDir;
}

const COLUMNS = csvColumnsFor({ data: ["price", "URL", "tags"] });
const PRICES = { "https://shop.test/p/1": 12.5, "https://shop.test/p/2": 20, "https://shop.test/p/3": 30 };

async function exported(jobDir: string, format: "csv" | "jsonl" | "parquet" | "sqlite"): Promise<string> {
	const out = join(jobDir, "..", `latest.${format}`);
	const history = openJobHistory(jobDir);
	try {
		expect(await exportLatest(history, format, out, COLUMNS)).toBe(3);
	} finally {
		history.close();
	}
	return out;
}

function python(dbPath: string, sql: string): unknown[][] {
	const script =
		"import json, sqlite3, sys\nprint(json.dumps(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall()))";
	return JSON.parse(execFileSync("python3", ["-c", script, dbPath, sql], { encoding: "utf8" })) as unknown[][];
}

async function readParquet(path: string) {
	const { parquetMetadata, parquetReadObjects } = await import("hyparquet");
	const bytes = readFileSync(path);
	const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
	return { rows: await parquetReadObjects({ file }), metadata: parquetMetadata(file) };
}

describe("export --latest from the store", () => {
	it("sqlite: a standalone file python3's sqlite3 reads, typed columns, a field named URL beside url", async () => {
		const jobDir = shop();
		const path = await exported(jobDir, "sqlite");
		const rows = python(
			path,
			"SELECT url, price, typeof(price), typeof(http_status), data_URL, tags FROM latest ORDER BY url",
		);
		expect(rows).toEqual([
			["https://shop.test/p/1", 12.5, "real", "integer", "https://cdn.test/1.jpg", '["a","b"]'],
			["https://shop.test/p/2", 20, "real", "integer", "https://cdn.test/2.jpg", '["a","b"]'],
			["https://shop.test/p/3", 30, "real", "integer", "https://cdn.test/3.jpg", '["a","b"]'],
		]);
		// A plain database file: no journal mode of ours left in it, nothing beside it.
		expect(python(path, "PRAGMA journal_mode")).toEqual([["delete"]]);
		expect(readdirSync(join(jobDir, "..")).filter((name) => name.includes("latest.sqlite"))).toEqual(["latest.sqlite"]);
	});

	it("parquet: read back by hyparquet, typed, the URL field kept apart from url", async () => {
		const jobDir = shop();
		const { rows } = await readParquet(await exported(jobDir, "parquet"));
		expect(Object.fromEntries(rows.map((row) => [row.url, row.price]))).toEqual(PRICES);
		// Run by run, each results.jsonl front to back: p/2 (run-1) comes first.
		expect(rows.map((row) => row.url)).toEqual([
			"https://shop.test/p/2",
			"https://shop.test/p/1",
			"https://shop.test/p/3",
		]);
		expect(rows.map((row) => [typeof row.price, typeof row.http_status, row.data_URL])).toEqual([
			["number", "number", "https://cdn.test/2.jpg"],
			["number", "number", "https://cdn.test/1.jpg"],
			["number", "number", "https://cdn.test/3.jpg"],
		]);
	});

	it("csv and jsonl: the newest ok record of each target, without inline content", async () => {
		const jobDir = shop();
		const jsonl = readFileSync(await exported(jobDir, "jsonl"), "utf8")
			.trim()
			.split("\n")
			.map((line) => JSON.parse(line) as ResultRecord);
		expect(Object.fromEntries(jsonl.map((line) => [line.url, line.data?.price]))).toEqual(PRICES);
		expect(jsonl.every((line) => line.content === undefined)).toBe(true);
		const { parse } = await import("csv-parse/sync");
		const csv = parse(readFileSync(await exported(jobDir, "csv")), { columns: true }) as Array<Record<string, string>>;
		expect(Object.fromEntries(csv.map((row) => [row.url, Number(row.price)]))).toEqual(PRICES);
		expect(csv[0]!.URL).toMatch(/^https:\/\/cdn\.test\//);
	});

	it("parquet row groups are sized by bytes, not rows: large records make many small groups, small ones few large groups", async () => {
		const large = join(tempDir(), "large");
		const big = "x".repeat(2 << 20);
		writeRun(
			large,
			"run-1",
			Array.from({ length: 20 }, (_, n) => record(hex(n + 1), { data: { price: n, URL: big, tags: null } })),
		);
		const history = openJobHistory(large);
		const out = join(large, "..", "large.parquet");
		await exportLatest(history, "parquet", out, COLUMNS);
		history.close();
		const { rows, metadata } = await readParquet(out);
		expect(rows).toHaveLength(20);
		// 2 MB a record (4 MB as JS strings) and 8 MB a group: two records a group, not all twenty in one.
		expect(metadata.row_groups.map((group) => Number(group.num_rows))).toEqual(Array(10).fill(2));

		const small = join(tempDir(), "small");
		writeRun(
			small,
			"run-1",
			Array.from({ length: 25_000 }, (_, n) =>
				record(hex(n + 1), { url: "u", data: { price: n, URL: "u", tags: null } }),
			),
		);
		const smallHistory = openJobHistory(small);
		const smallOut = join(small, "..", "small.parquet");
		await exportLatest(smallHistory, "parquet", smallOut, COLUMNS);
		smallHistory.close();
		// Small rows: one group of all 25,000 (the old fixed 20,000 rows would have made two).
		expect((await readParquet(smallOut)).metadata.row_groups.map((group) => Number(group.num_rows))).toEqual([25_000]);
	});
});
