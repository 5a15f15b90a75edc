import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import {
	appendFileSync,
	chmodSync,
	existsSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	rmSync,
	statSync,
	truncateSync,
	writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HISTORY_FILE, OLD_HISTORY_FILE, openJobHistory } from "../../src/history/index.js";
import { STORE_SCHEMA } from "../../src/history/store-schema.js";
import { OutputError, type ResultRecord } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";
import { readDoc } from "../helpers/manual.js";
import { record } from "../helpers/records.js";

const A = "00000000000000a1";
const B = "00000000000000b2";
const C = "00000000000000c3";

/** A run folder holding these records in its results.jsonl, as the runner writes them. */
function writeRun(jobDir: string, runId: string, records: ResultRecord[]): string {
	mkdirSync(join(jobDir, runId), { recursive: true });
	const path = join(jobDir, runId, "results.jsonl");
	writeFileSync(path, records.map((line) => `${JSON.stringify(line)}\n`).join(""));
	return path;
}

const at = (iso: string) => ({ started_at: iso, finished_at: iso });
const hex = (n: number) => n.toString(16).padStart(16, "0");

/** Run python3's own sqlite3 module on the store: what any SQLite client sees. */
function python(dbPath: string, sql: string): unknown[][] {
	const script = [
		"import json, sqlite3, sys",
		"db = sqlite3.connect(sys.argv[1])",
		"print(json.dumps(db.execute(sys.argv[2]).fetchall()))",
	].join("\n");
	return JSON.parse(execFileSync("python3", ["-c", script, dbPath, sql], { encoding: "utf8" })) as unknown[][];
}

/** A job folder of two runs, its store made and closed: A ok then failed, B failed then ok, C ok twice. */
function twoRuns(): string {
	const jobDir = tempDir();
	writeRun(jobDir, "20261121T000000Z-aaaaaa", [
		record(A, { ...at("2026-11-21T00:00:01.000Z"), content_hash: hex(1), data: { price: 1 } }),
		record(B, { ...at("2026-11-21T00:00:01.000Z"), status: "failed", credits_used: 1 }),
		record(C, { ...at("2026-11-21T00:00:01.000Z"), content_hash: hex(3), data: { price: 3 } }),
	]);
	writeRun(jobDir, "20261122T000000Z-bbbbbb", [
		record(A, { ...at("2026-11-22T00:00:01.000Z"), status: "failed", credits_used: 1 }),
		record(B, { ...at("2026-11-22T00:00:01.000Z"), content_hash: hex(2), data: { price: 2 } }),
		record(C, { ...at("2026-11-22T00:00:01.000Z"), content_hash: hex(3), data: { price: 3 } }),
	]);
	openJobHistory(jobDir).close();
	return jobDir;
}

/** What the store says of the two runs (any open of them must say exactly this). */
function expectTwoRuns(jobDir: string): void {
	const history = openJobHistory(jobDir);
	try {
		expect(history.get(A)).toMatchObject({
			latest: "failed",
			okAt: Date.parse("2026-11-21T00:00:01.000Z"),
			okHash: hex(1),
		});
		expect(history.get(B)).toMatchObject({ latest: "ok", okHash: hex(2), okRun: "20261122T000000Z-bbbbbb" });
		expect(history.get(C)).toMatchObject({ latest: "ok", okHash: hex(3) });
		expect(history.size).toBe(3);
	} finally {
		history.close();
	}
}

describe("the job's store (history.sqlite)", () => {
	it("the latest record is the one that finished last, whatever order the run folders sort in", () => {
		const jobDir = tempDir();
		// Same second, random suffixes: "…-ffffff" sorts after "…-000000" but ran first.
		writeRun(jobDir, "20261121T000000Z-ffffff", [
			record(A, { ...at("2026-11-21T00:00:01.000Z"), content_hash: hex(0x1111) }),
			record(B, { ...at("2026-11-21T00:00:01.000Z"), status: "failed", content_hash: null }),
		]);
		writeRun(jobDir, "20261121T000000Z-000000", [
			record(A, { ...at("2026-11-21T00:00:05.000Z"), status: "failed", content_hash: null }),
			record(B, { ...at("2026-11-21T00:00:05.000Z"), content_hash: hex(0x2222) }),
		]);
		const history = openJobHistory(jobDir);
		// A failed last, but its latest ok record (the earlier run's) is still known, for freshness and change.
		expect(history.get(A)).toMatchObject({
			latest: "failed",
			okAt: Date.parse("2026-11-21T00:00:01.000Z"),
			okHash: hex(0x1111),
		});
		expect(history.get(B)).toMatchObject({ latest: "ok", okHash: hex(0x2222) });
		expect(history.readOkRecord(history.get(B)!)?.finished_at).toBe("2026-11-21T00:00:05.000Z");
		expect(history.get("never-recorded")).toBeNull();
		// A first open of folders that had no store says so.
		expect(history.warnings).toEqual([
			expect.stringMatching(/history\.sqlite was missing; rebuilt from the run folders/),
		]);
		history.close();
		expect(openJobHistory(jobDir).warnings).toEqual([]);
	});

	it("records appended after the last batch (a killed run) are folded in when it is next opened; a torn line waits until it is whole", () => {
		const jobDir = tempDir();
		const results = writeRun(jobDir, "run-1", [record(A, { content_hash: hex(1) })]);
		openJobHistory(jobDir).close();
		const line = JSON.stringify(record(B, { content_hash: hex(2) }));
		appendFileSync(results, line.slice(0, 20));
		expect(openJobHistory(jobDir).get(B)).toBeNull();
		appendFileSync(results, `${line.slice(20)}\n`);
		const history = openJobHistory(jobDir);
		expect(history.get(B)?.okHash).toBe(hex(2));
		expect(history.readOkRecord(history.get(B)!)?.id).toBe(B);
		// Each record counted once, however many opens saw the file.
		expect(python(join(jobDir, HISTORY_FILE), "SELECT id, records, credits, results_bytes FROM runs")).toEqual([
			["run-1", 2, 4, statSync(results).size],
		]);
		history.close();
	});

	it("a run folder deleted, or a results.jsonl that shrank (--resume --repair), rebuilds the store from what is there", () => {
		const jobDir = tempDir();
		writeRun(jobDir, "run-1", [record(A, { content_hash: hex(1) })]);
		const second = writeRun(jobDir, "run-2", [
			record(B, { ...at("2026-11-21T00:00:02.000Z"), content_hash: hex(2) }),
			record(A, { ...at("2026-11-21T00:00:02.000Z"), content_hash: hex(3) }),
		]);
		openJobHistory(jobDir).close();
		// run-2 rewritten shorter: A's entry pointed past its end.
		writeFileSync(
			second,
			`${JSON.stringify(record(A, { ...at("2026-11-21T00:00:02.000Z"), content_hash: hex(4) }))}\n`,
		);
		let history = openJobHistory(jobDir);
		expect(history.get(B)).toBeNull();
		expect(history.readOkRecord(history.get(A)!)?.content_hash).toBe(hex(4));
		history.close();
		rmSync(join(jobDir, "run-2"), { recursive: true });
		history = openJobHistory(jobDir);
		expect(history.get(A)?.okHash).toBe(hex(1));
		expect(history.readOkRecord(history.get(A)!)?.id).toBe(A);
		history.close();
	});

	it("a truncated store is rebuilt from the run folders with a warning, nothing lost", () => {
		const jobDir = twoRuns();
		const path = join(jobDir, HISTORY_FILE);
		// Cut the last page off: SQLite's own check finds it (the old index took such a file as valid).
		truncateSync(path, statSync(path).size - pageSizeOf(readFileSync(path)));
		const history = openJobHistory(jobDir);
		expect(history.warnings).toEqual([
			expect.stringMatching(/history\.sqlite: it (is damaged|cannot be read).*rebuilt from the run folders/),
		]);
		history.close();
		expectTwoRuns(jobDir);
		expect(openJobHistory(jobDir).warnings).toEqual([]);
	});

	it("a page damaged inside the targets table (header and schema intact) is found by the check at open and rebuilt", () => {
		const jobDir = tempDir();
		const ids = Array.from({ length: 3000 }, (_, n) => `chosen-target-${n}`);
		writeRun(
			jobDir,
			"run-1",
			ids.map((id, n) => record(id, { content_hash: hex(n + 1) })),
		);
		openJobHistory(jobDir).close();
		const path = join(jobDir, HISTORY_FILE);
		// Page 1 holds the header and the schema; the last pages belong to the targets table and its index.
		const bytes = readFileSync(path);
		const pageSize = pageSizeOf(bytes);
		const pages = bytes.length / pageSize;
		expect(pages).toBeGreaterThan(20);
		bytes.fill(0xa5, (pages - 8) * pageSize + 16, (pages - 7) * pageSize);
		writeFileSync(path, bytes);
		const history = openJobHistory(jobDir);
		expect(history.warnings).toEqual([
			expect.stringMatching(/history\.sqlite: it (is damaged|cannot be read).*rebuilt from the run folders/),
		]);
		expect(ids.every((id, n) => history.get(id)?.okHash === hex(n + 1))).toBe(true);
		history.close();
	});

	it("a store of garbage, or of another layout, is rebuilt with a warning", () => {
		const jobDir = twoRuns();
		const path = join(jobDir, HISTORY_FILE);
		writeFileSync(path, Buffer.concat([Buffer.from("SQLite format 3\0"), Buffer.alloc(4000, 0x5a)]));
		let history = openJobHistory(jobDir);
		expect(history.warnings).toEqual([expect.stringMatching(/history\.sqlite: it (is damaged|cannot be read)/)]);
		history.close();
		expectTwoRuns(jobDir);
		// A layout of another version: rebuilt, never misread.
		execFileSync("python3", [
			"-c",
			"import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute('PRAGMA user_version = 0'); d.commit()",
			path,
		]);
		history = openJobHistory(jobDir);
		expect(history.warnings).toEqual([expect.stringMatching(/older layout \(0, now 4\)/)]);
		history.close();
		expectTwoRuns(jobDir);
		// Another program's SQLite file in its place.
		rmSync(path);
		execFileSync("python3", [
			"-c",
			"import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute('CREATE TABLE targets (x)'); d.commit()",
			path,
		]);
		history = openJobHistory(jobDir);
		expect(history.warnings).toEqual([expect.stringMatching(/not a scrapejob store/)]);
		history.close();
		expectTwoRuns(jobDir);
	});

	it("the .history of earlier versions is replaced: rebuilt from the run folders with a warning, then removed", () => {
		const jobDir = twoRuns();
		rmSync(join(jobDir, HISTORY_FILE));
		// The old layout's header and a row, as version 4 wrote them.
		writeFileSync(
			join(jobDir, OLD_HISTORY_FILE),
			Buffer.concat([Buffer.from("SJH4"), Buffer.alloc(4), Buffer.alloc(48, 1)]),
		);
		const history = openJobHistory(jobDir);
		expect(history.warnings).toEqual([
			expect.stringMatching(/\.history \(the history of an earlier scrapejob\) is replaced by history\.sqlite/),
		]);
		history.close();
		expect(existsSync(join(jobDir, OLD_HISTORY_FILE))).toBe(false);
		expectTwoRuns(jobDir);
	});

	it("python3's sqlite3 reads the tables, and the incremental-runs guide's example queries answer", () => {
		const jobDir = twoRuns();
		const path = join(jobDir, HISTORY_FILE);
		expect(
			python(
				path,
				"SELECT id, status, ok_run, content_hash, json_extract(data, '$.price'), credits FROM targets ORDER BY id",
			),
		).toEqual([
			[A, "failed", "20261121T000000Z-aaaaaa", hex(1), 1, 3],
			[B, "ok", "20261122T000000Z-bbbbbb", hex(2), 2, 3],
			[C, "ok", "20261122T000000Z-bbbbbb", hex(3), 3, 4],
		]);
		expect(python(path, "SELECT id, records, ok, failed, credits, last_finished_at FROM runs ORDER BY id")).toEqual([
			["20261121T000000Z-aaaaaa", 3, 2, 1, 5, "2026-11-21T00:00:01.000Z"],
			["20261122T000000Z-bbbbbb", 3, 2, 1, 5, "2026-11-22T00:00:01.000Z"],
		]);
		// The incremental-runs guide's two queries, as printed there.
		const readme = readDoc("docs/guides/incremental-runs.md");
		const queries = [...readme.matchAll(/sqlite3 output\/shop\/history\.sqlite "([^"]+)"/g)].map((match) => match[1]!);
		expect(queries).toHaveLength(2);
		// Latest prices: every target with an ok record.
		expect(python(path, queries[0]!)).toEqual([
			["https://example.test/00000000000000a1", 1, "2026-11-21T00:00:01.000Z"],
			["https://example.test/00000000000000b2", 2, "2026-11-22T00:00:01.000Z"],
			["https://example.test/00000000000000c3", 3, "2026-11-22T00:00:01.000Z"],
		]);
		// What changed on 2026-11-22: B's first ok (new). C's hash stayed: unchanged since its first ok.
		expect(python(path, queries[1]!.replace("date('now', '-1 day')", "'2026-11-22'"))).toEqual([
			["https://example.test/00000000000000b2", 2],
		]);
	});

	it("a run's records go in by batches: what a run committed is not folded twice, what it did not is folded at the next open", () => {
		const jobDir = tempDir();
		const ids = Array.from({ length: 5000 }, (_, n) => hex(n + 1));
		const records = ids.map((id, n) => record(id, { ...at("2026-11-23T00:00:00.000Z"), content_hash: hex(n + 7) }));
		const lines = records.map((line) => `${JSON.stringify(line)}\n`);
		mkdirSync(join(jobDir, "run-1"), { recursive: true });
		const results = join(jobDir, "run-1", "results.jsonl");
		writeFileSync(results, "");
		const history = openJobHistory(jobDir);
		const run = history.runIndex("run-1");
		let offset = 0;
		records.forEach((line, n) => {
			appendFileSync(results, lines[n]!);
			history.record(line, run, offset, offset + Buffer.byteLength(lines[n]!));
			offset += Buffer.byteLength(lines[n]!);
		});
		// 5,000 records: two batches of 2,000 committed on the way; the last 1,000 wait for save.
		const sql = "SELECT count(*), sum(credits) FROM targets";
		expect(python(join(jobDir, HISTORY_FILE), sql)).toEqual([[4000, 8000]]);
		// Another process opens meanwhile (a shard): it folds the uncommitted tail from results.jsonl.
		const other = openJobHistory(jobDir);
		expect(other.get(ids[4999]!)?.okHash).toBe(hex(5006));
		other.close();
		// Then this run's save writes its last batch: the records the other folded are not counted again.
		history.save();
		history.close();
		expect(python(join(jobDir, HISTORY_FILE), sql)).toEqual([[5000, 10000]]);
		expect(python(join(jobDir, HISTORY_FILE), "SELECT records, credits FROM runs")).toEqual([[5000, 10000]]);
		// Closed without save: dropped, and folded in from results.jsonl at the next open.
		const third = openJobHistory(jobDir);
		const next = third.runIndex("run-2");
		const late = writeRun(jobDir, "run-2", [record("late-one", { content_hash: hex(9) })]);
		third.record(record("late-one", { content_hash: hex(9) }), next, 0, statSync(late).size);
		third.close();
		expect(python(join(jobDir, HISTORY_FILE), "SELECT count(*) FROM runs")).toEqual([[1]]);
		const fourth = openJobHistory(jobDir);
		expect(fourth.get("late-one")?.okHash).toBe(hex(9));
		expect(fourth.size).toBe(5001);
		fourth.close();
	});

	it("a store that fails while a run records never stops the run: save says so, and the next open folds the run in", () => {
		const jobDir = tempDir();
		writeRun(jobDir, "run-1", [record(A, { content_hash: hex(1) })]);
		const history = openJobHistory(jobDir);
		const run = history.runIndex("run-2");
		const results = writeRun(jobDir, "run-2", [record(B, { content_hash: hex(2) })]);
		// The database gone from under the run (as a disk error would leave it).
		history.db.close();
		expect(() => history.record(record(B, { content_hash: hex(2) }), run, 0, statSync(results).size)).not.toThrow();
		expect(() => history.save()).toThrow(/could not be kept.*folds them in from results.jsonl/);
		history.close();
		const next = openJobHistory(jobDir);
		expect(next.get(B)?.okHash).toBe(hex(2));
		next.close();
	});

	it("a store that cannot be made is an output failure (the run would refetch what is fresh)", () => {
		const jobDir = tempDir();
		writeRun(jobDir, "run-1", [record(A, { content_hash: hex(1) }), record(B), record(C)]);
		// The store's name taken by a folder: no file can be made there.
		mkdirSync(join(jobDir, HISTORY_FILE));
		writeFileSync(join(jobDir, HISTORY_FILE, "x"), "");
		chmodSync(join(jobDir, HISTORY_FILE), 0o500);
		expect(() => openJobHistory(jobDir)).toThrow(OutputError);
	});

	it("WAL: the store is in write-ahead-log mode, and a closed store leaves no side file", () => {
		const jobDir = twoRuns();
		expect(python(join(jobDir, HISTORY_FILE), "PRAGMA journal_mode")).toEqual([["wal"]]);
		expect(
			readdirSync(jobDir)
				.filter((name) => !name.startsWith("2026"))
				.sort(),
		).toEqual([HISTORY_FILE]);
	});

	it("a store file another process has just made, its tables not yet, is used, not removed from under it (shards starting together)", () => {
		const jobDir = tempDir();
		mkdirSync(jobDir, { recursive: true });
		const path = join(jobDir, HISTORY_FILE);
		// The other shard: its connection made the file and set WAL, and has not taken the write lock yet.
		const require = createRequire(import.meta.url);
		const Sqlite = require("better-sqlite3") as typeof import("better-sqlite3");
		const other = new Sqlite(path);
		try {
			other.pragma("journal_mode = WAL");
			const history = openJobHistory(jobDir);
			expect(history.warnings).toEqual([]);
			history.close();
			// Still one file: the other shard finds the tables this open made (removed, its file was gone).
			const tables = other.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").pluck().all();
			expect(tables).toEqual(["domain_modes", "host_costs", "runs", "targets"]);
		} finally {
			other.close();
		}
	});

	it("a store another process holds the write lock of when it is opened is switched to WAL once the lock is free, not taken for damaged and removed", async () => {
		const jobDir = tempDir();
		mkdirSync(jobDir, { recursive: true });
		const path = join(jobDir, HISTORY_FILE);
		// The other process: it made the store without WAL yet (as a connection does before its switch)
		// and holds its write lock for 300 ms. The switch to WAL needs the exclusive lock, and SQLite
		// refuses it at once, not after the busy timeout.
		const script = [
			"import sqlite3, sys, time",
			"db = sqlite3.connect(sys.argv[1], isolation_level=None)",
			"db.executescript(sys.argv[2])",
			"db.execute('BEGIN IMMEDIATE')",
			"print('held', flush=True)",
			"time.sleep(0.3)",
			"db.execute('COMMIT')",
		].join("\n");
		const reader = spawn("python3", ["-c", script, path, STORE_SCHEMA], { stdio: ["ignore", "pipe", "inherit"] });
		const ended = once(reader, "close");
		await once(reader.stdout, "data");
		const inode = statSync(path).ino;
		const history = openJobHistory(jobDir);
		try {
			expect(history.warnings).toEqual([]);
			expect(history.db.pragma("journal_mode", { simple: true })).toBe("wal");
		} finally {
			history.close();
		}
		expect(statSync(path).ino).toBe(inode);
		expect((await ended)[0]).toBe(0);
	});

	it("a store another process holds the write lock of past the busy timeout at open: an output error naming who may hold it, the store kept", async () => {
		const jobDir = tempDir();
		const path = join(jobDir, HISTORY_FILE);
		// As above, but held until this test lets go (its stdin closed): the switch to WAL gives up.
		const script = [
			"import sqlite3, sys",
			"db = sqlite3.connect(sys.argv[1], isolation_level=None)",
			"db.executescript(sys.argv[2])",
			"db.execute('BEGIN IMMEDIATE')",
			"print('held', flush=True)",
			"sys.stdin.read()",
			"db.execute('COMMIT')",
		].join("\n");
		const holder = spawn("python3", ["-c", script, path, STORE_SCHEMA], { stdio: ["pipe", "pipe", "inherit"] });
		const ended = once(holder, "close");
		try {
			await once(holder.stdout, "data");
			const inode = statSync(path).ino;
			let thrown: unknown;
			try {
				openJobHistory(jobDir).close();
			} catch (error) {
				thrown = error;
			}
			expect(thrown).toBeInstanceOf(OutputError);
			expect((thrown as Error).message).toBe(
				`output failed: cannot write ${path}: database is locked: another process holds a write on history.sqlite — another run of the job, an export, or a sqlite3 shell left in a transaction; nothing more was sent`,
			);
			expect(statSync(path).ino).toBe(inode);
		} finally {
			holder.stdin.end();
		}
		expect((await ended)[0]).toBe(0);
	});

	it("a run's connection keeps a 2 MB page cache (better-sqlite3's 16 MB made peak RSS grow with the job)", () => {
		const history = openJobHistory(twoRuns());
		try {
			expect(history.db.pragma("cache_size", { simple: true })).toBe(-2000);
		} finally {
			history.close();
		}
	});

	it("a store is made with 16 KiB pages; one made with 4 KiB pages is used as it is; either checkpoints at 40 MB of WAL", () => {
		const made = openJobHistory(twoRuns());
		try {
			expect(made.db.pragma("page_size", { simple: true })).toBe(16_384);
			expect(made.db.pragma("wal_autocheckpoint", { simple: true })).toBe(2_500);
		} finally {
			made.close();
		}
		const jobDir = tempDir();
		writeRun(jobDir, "20261121T000000Z-aaaaaa", [
			record(A, { ...at("2026-11-21T00:00:01.000Z"), content_hash: hex(1) }),
		]);
		const require = createRequire(import.meta.url);
		const Sqlite = require("better-sqlite3") as typeof import("better-sqlite3");
		const older = new Sqlite(join(jobDir, HISTORY_FILE));
		older.pragma("page_size = 4096");
		older.pragma("journal_mode = WAL");
		older.exec(STORE_SCHEMA);
		older.close();
		const history = openJobHistory(jobDir);
		try {
			expect(history.warnings).toEqual([]);
			expect(history.db.pragma("page_size", { simple: true })).toBe(4096);
			expect(history.db.pragma("wal_autocheckpoint", { simple: true })).toBe(10_000);
			expect(history.get(A)).toMatchObject({ latest: "ok", okHash: hex(1) });
		} finally {
			history.close();
		}
	});
});

/** A SQLite file's page size, from its header (offset 16, big-endian; 1 stands for 65,536). */
function pageSizeOf(bytes: Buffer): number {
	const size = bytes.readUInt16BE(16);
	return size === 1 ? 65_536 : size;
}
