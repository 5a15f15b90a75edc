import {
	appendFileSync,
	existsSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	rmSync,
	utimesSync,
	writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HISTORY_FILE, openJobHistory } from "../../src/history/index.js";
import { OutputError, type ResultRecord } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";
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

describe("the job's history (.history)", () => {
	it("the latest record is the one that finished last, whatever order the run folders sort in", () => {
		const jobDir = tempDir();
		// Same second, random suffixes: "…-ffffff" sorts after "…-000000" but ran first.
		writeRun(jobDir, "20261121T000000Z-ffffff", [
			record(A, { ...at("2026-11-21T00:00:01.000Z"), content_hash: "1111111111111111" }),
			record(B, { ...at("2026-11-21T00:00:01.000Z"), status: "failed", content_hash: null }),
		]);
		writeRun(jobDir, "20261121T000000Z-000000", [
			record(A, { ...at("2026-11-21T00:00:05.000Z"), status: "failed", content_hash: null }),
			record(B, { ...at("2026-11-21T00:00:05.000Z"), content_hash: "2222222222222222" }),
		]);
		const history = openJobHistory(jobDir);
		const a = history.get(A)!;
		// A failed last, but its latest ok record (the earlier run's) is still known, for freshness and change.
		expect(a).toMatchObject({ latest: "failed", okAt: Date.parse("2026-11-21T00:00:01.000Z") });
		expect(a.okHash).toBe("1111111111111111");
		expect(history.get(B)).toMatchObject({ latest: "ok", okHash: "2222222222222222" });
		expect(history.readOkRecord(history.get(B)!)?.finished_at).toBe("2026-11-21T00:00:05.000Z");
	});

	it("records appended after the last save (a killed run) are folded in when it is next opened; a torn line waits until it is whole", () => {
		const jobDir = tempDir();
		const results = writeRun(jobDir, "run-1", [record(A, { content_hash: "1111111111111111" })]);
		openJobHistory(jobDir).save();
		const line = JSON.stringify(record(B, { content_hash: "2222222222222222" }));
		appendFileSync(results, line.slice(0, 20));
		expect(openJobHistory(jobDir).get(B)).toBeNull();
		appendFileSync(results, `${line.slice(20)}\n`);
		const history = openJobHistory(jobDir);
		expect(history.get(B)?.okHash).toBe("2222222222222222");
		expect(history.readOkRecord(history.get(B)!)?.id).toBe(B);
	});

	it("a run folder deleted, or a results.jsonl that shrank (--resume --repair), rebuilds the history from what is there", () => {
		const jobDir = tempDir();
		writeRun(jobDir, "run-1", [record(A, { content_hash: "1111111111111111" })]);
		const second = writeRun(jobDir, "run-2", [
			record(B, { ...at("2026-11-21T00:00:02.000Z"), content_hash: "2222222222222222" }),
			record(A, { ...at("2026-11-21T00:00:02.000Z"), content_hash: "3333333333333333" }),
		]);
		openJobHistory(jobDir).save();
		// run-2 rewritten shorter: A's entry pointed past its end.
		writeFileSync(
			second,
			`${JSON.stringify(record(A, { ...at("2026-11-21T00:00:02.000Z"), content_hash: "4444444444444444" }))}\n`,
		);
		let history = openJobHistory(jobDir);
		expect(history.get(B)).toBeNull();
		expect(history.readOkRecord(history.get(A)!)?.content_hash).toBe("4444444444444444");
		history.save();
		rmSync(join(jobDir, "run-2"), { recursive: true });
		history = openJobHistory(jobDir);
		expect(history.get(A)?.okHash).toBe("1111111111111111");
		expect(history.readOkRecord(history.get(A)!)?.id).toBe(A);
	});

	it("saves atomically: no temporary file is left, and a file of an older layout is rebuilt, not misread", () => {
		const jobDir = tempDir();
		writeRun(jobDir, "run-1", [record(A, { content_hash: "1111111111111111" })]);
		openJobHistory(jobDir).save();
		expect(readdirSync(jobDir).sort()).toEqual([HISTORY_FILE, "run-1"]);
		writeFileSync(join(jobDir, HISTORY_FILE), Buffer.concat([Buffer.from("SJH1"), Buffer.alloc(64)]));
		expect(openJobHistory(jobDir).get(A)?.okHash).toBe("1111111111111111");
		expect(existsSync(join(jobDir, HISTORY_FILE))).toBe(true);
	});

	it("is read back from its file (not rebuilt), and a dead save's temporary file goes", () => {
		const jobDir = tempDir();
		const ids = Array.from({ length: 3000 }, (_, n) => n.toString(16).padStart(16, "0"));
		writeRun(
			jobDir,
			"run-1",
			ids.map((id, n) => record(id, { content_hash: (n + 1).toString(16).padStart(16, "0") })),
		);
		const history = openJobHistory(jobDir, { chunkRows: 256 });
		history.save();
		history.close();
		// The run folder goes: a history rebuilt from the folders would know nothing; one read from the file knows all.
		rmSync(join(jobDir, "run-1", "results.jsonl"));
		mkdirSync(join(jobDir, "run-1"), { recursive: true });
		writeFileSync(join(jobDir, "run-1", "results.jsonl"), "x".repeat(10_000_000));
		const reopened = openJobHistory(jobDir);
		expect(reopened.size).toBe(3000);
		expect(ids.every((id, n) => reopened.get(id)?.okHash === (n + 1).toString(16).padStart(16, "0"))).toBe(true);

		const stale = join(jobDir, `${HISTORY_FILE}.4242-deadbeef.tmp`);
		const fresh = join(jobDir, `${HISTORY_FILE}.4343-cafebabe.tmp`);
		writeFileSync(stale, "left by a killed save");
		writeFileSync(fresh, "another host saving right now");
		const old = new Date(Date.now() - 2 * 3_600_000);
		utimesSync(stale, old, old);
		openJobHistory(jobDir);
		expect(existsSync(stale)).toBe(false);
		expect(existsSync(fresh)).toBe(true);
	});

	it("a run's records wait in bounded chunks and are merged in by save: the later finish wins, a tie goes to the later record", () => {
		const jobDir = tempDir();
		// 600 targets with chosen ids (hashed keys) and derived ones, in a saved history.
		const ids = Array.from({ length: 600 }, (_, n) => (n % 2 ? `chosen-${n}` : n.toString(16).padStart(16, "0")));
		const first = at("2026-11-21T00:00:01.000Z");
		writeRun(
			jobDir,
			"run-1",
			ids.map((id, n) => record(id, { ...first, content_hash: (n + 1).toString(16).padStart(16, "0") })),
		);
		openJobHistory(jobDir).save();
		// A second run records each target two to three times, out of time order, in chunks of 7 rows: the
		// rows of one target land in different chunks and must still fold by finish time.
		const history = openJobHistory(jobDir, { chunkRows: 7 });
		const run = history.runIndex("run-2");
		const expected = new Map<string, { latest: string; okHash: string }>();
		let offset = 0;
		const note = (id: string, iso: string, status: "ok" | "failed", hash: string | null) => {
			history.record(record(id, { ...at(iso), status, content_hash: hash }), run, offset, offset + 100);
			offset += 100;
		};
		ids.forEach((id, n) => {
			const hash = (n + 0x1000).toString(16).padStart(16, "0");
			if (n % 3 === 0) {
				// The newer ok first, then an older failure: the ok stays latest.
				note(id, "2026-11-21T00:00:09.000Z", "ok", hash);
				note(id, "2026-11-21T00:00:05.000Z", "failed", null);
				expected.set(id, { latest: "ok", okHash: hash });
			} else if (n % 3 === 1) {
				// An ok, then a failure at the very same time: the later record wins the tie.
				note(id, "2026-11-21T00:00:07.000Z", "ok", hash);
				note(id, "2026-11-21T00:00:07.000Z", "failed", null);
				expected.set(id, { latest: "failed", okHash: hash });
			} else {
				// Only a failure: the ok of run-1 is kept.
				note(id, "2026-11-21T00:00:03.000Z", "failed", null);
				expected.set(id, { latest: "failed", okHash: (n + 1).toString(16).padStart(16, "0") });
			}
		});
		// Lookups see the history as opened until the save.
		expect(history.get(ids[0]!)).toMatchObject({ latest: "ok", okHash: "0000000000000001" });
		history.save();
		// The run folder holds as many bytes as were noted (a shorter one would mean a rewritten run: rebuilt).
		writeRun(jobDir, "run-2", []);
		writeFileSync(join(jobDir, "run-2", "results.jsonl"), "x".repeat(offset));
		for (const state of [history, openJobHistory(jobDir)]) {
			expect(state.size).toBe(600);
			for (const id of ids) expect(state.get(id)).toMatchObject(expected.get(id)!);
			expect(state.get("never-recorded")).toBeNull();
		}
		history.close();
		// The chunks went to scratch files removed as they were made: only the history and the run are left.
		expect(readdirSync(jobDir).sort()).toEqual([HISTORY_FILE, "run-1", "run-2"]);
	});

	it("rebuilds a history file whose rows are not in key order (not ours, or from a machine of the other byte order)", () => {
		const jobDir = tempDir();
		const ids = Array.from({ length: 200 }, (_, n) => n.toString(16).padStart(16, "0"));
		writeRun(
			jobDir,
			"run-1",
			ids.map((id) => record(id, { content_hash: "1111111111111111" })),
		);
		openJobHistory(jobDir).save();
		const path = join(jobDir, HISTORY_FILE);
		const bytes = readFileSync(path);
		// Swap the first two rows (48 bytes each) after the header.
		const start = 8 + bytes.readUInt32LE(4);
		const firstRow = Buffer.from(bytes.subarray(start, start + 48));
		bytes.copy(bytes, start, start + 48, start + 96);
		firstRow.copy(bytes, start + 48);
		// And a run folder gone from disk, so a rebuild can be told from a misread: it knows run-1 only.
		writeFileSync(path, bytes);
		writeRun(jobDir, "run-1", [record(ids[5]!, { content_hash: "2222222222222222" })]);
		const history = openJobHistory(jobDir);
		expect(history.size).toBe(1);
		expect(history.get(ids[5]!)?.okHash).toBe("2222222222222222");
		history.close();
	});

	it("a run's records that cannot be spilled leave the saved history as it was, and the next open folds them in from results.jsonl", () => {
		const jobDir = tempDir();
		writeRun(jobDir, "run-1", [record(A, { content_hash: "1111111111111111" })]);
		openJobHistory(jobDir).save();
		const nowhere = [join(jobDir, "no-such-folder")];
		const history = openJobHistory(jobDir, { chunkRows: 2, scratchDirs: nowhere });
		const run = history.runIndex("run-2");
		const records = [
			record(A, { ...at("2026-11-22T00:00:00.000Z"), content_hash: "2222222222222222" }),
			record(B, { ...at("2026-11-22T00:00:00.000Z"), content_hash: "3333333333333333" }),
			record(C, { ...at("2026-11-22T00:00:00.000Z"), content_hash: "4444444444444444" }),
		];
		const results = writeRun(jobDir, "run-2", records);
		let offset = 0;
		// The third record fills the chunk of two: its spill has nowhere to go. The run is not stopped.
		for (const line of records) {
			const end = offset + Buffer.byteLength(`${JSON.stringify(line)}\n`);
			expect(() => history.record(line, run, offset, end)).not.toThrow();
			offset = end;
		}
		expect(() => history.save()).toThrow(/could not be kept.*folds them in from results.jsonl/);
		history.close();
		expect(readFileSync(results, "utf8").split("\n")).toHaveLength(4);
		const next = openJobHistory(jobDir);
		expect(next.get(A)?.okHash).toBe("2222222222222222");
		expect(next.get(C)?.okHash).toBe("4444444444444444");
		next.close();
	});

	it("a history that cannot be opened for want of a scratch file is an output failure (the run would refetch what is fresh)", () => {
		const jobDir = tempDir();
		writeRun(
			jobDir,
			"run-1",
			[A, B, C].map((id) => record(id, { content_hash: "1111111111111111" })),
		);
		expect(() => openJobHistory(jobDir, { scratchDirs: [join(jobDir, "no-such-folder")] })).toThrow(OutputError);
	});
});
