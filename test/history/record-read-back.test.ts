import * as fs from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createChangeTracker, openJobHistory } from "../../src/history/index.js";
import { readRecordAt } from "../../src/history/results-lines.js";
import type { ResultRecord } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";
import { record } from "../helpers/records.js";

// Every read the history makes of a results.jsonl goes through readSync: counted here, not timed.
vi.mock("node:fs", async (importOriginal) => {
	const real = await importOriginal<typeof import("node:fs")>();
	return { ...real, readSync: vi.fn(real.readSync) };
});
const readSync = vi.mocked(fs.readSync);

/** Bytes asked of readSync since the last reset (its fourth argument: the length). */
function bytesAsked(): number {
	// readSync(fd, buffer, offset, length, position): the form the history uses.
	return readSync.mock.calls.reduce((sum, call) => sum + Number((call as unknown[])[3] ?? 0), 0);
}

afterEach(() => {
	readSync.mockClear();
});

/** A run folder whose results.jsonl holds these records; the offset of each. */
function writeRun(jobDir: string, runId: string, records: readonly ResultRecord[]): number[] {
	fs.mkdirSync(join(jobDir, runId), { recursive: true });
	const lines = records.map((one) => `${JSON.stringify(one)}\n`);
	fs.writeFileSync(join(jobDir, runId, "results.jsonl"), lines.join(""));
	const offsets: number[] = [];
	let at = 0;
	for (const line of lines) {
		offsets.push(at);
		at += Buffer.byteLength(line);
	}
	return offsets;
}

describe("a previous record read back from results.jsonl", () => {
	it("reads a few KiB for a record of a few hundred bytes (it read 1 MiB, ~2 ms per changed target)", () => {
		const jobDir = tempDir();
		const records = Array.from({ length: 3000 }, (_, n) => record(`t${n}`, { data: { price: n } }));
		const offsets = writeRun(jobDir, "run-1", records);
		readSync.mockClear();
		const back = readRecordAt(join(jobDir, "run-1", "results.jsonl"), offsets[1500]!);
		expect(back).toMatchObject({ id: "t1500", data: { price: 1500 } });
		expect(bytesAsked()).toBeGreaterThan(0);
		expect(bytesAsked()).toBeLessThanOrEqual(16 << 10);
	});

	it("a record longer than one read is read on to its end", () => {
		const jobDir = tempDir();
		const long = "x".repeat(100_000);
		const offsets = writeRun(jobDir, "run-1", [
			record("a", { data: { description: long } }),
			record("b", { data: { description: `${long}y` } }),
		]);
		const path = join(jobDir, "run-1", "results.jsonl");
		expect(readRecordAt(path, offsets[1]!)?.data).toEqual({ description: `${long}y` });
		expect(readRecordAt(path, offsets[0]!)?.data).toEqual({ description: long });
	});

	it("without extraction, a changed target's old record is not read at all (its line gives the two hashes)", () => {
		const jobDir = tempDir();
		writeRun(jobDir, "20261121T000000Z-aaaaaa", [record("a", { content_hash: "0000000000000001" })]);
		const runDir = join(jobDir, "20261122T000000Z-bbbbbb");
		fs.mkdirSync(runDir, { recursive: true });
		const history = openJobHistory(jobDir);
		const tracker = createChangeTracker(history, runDir, false);
		try {
			readSync.mockClear();
			const next = record("a", { finished_at: "2026-11-22T00:00:01.000Z" });
			tracker.stamp(next, Buffer.from("another page"));
			expect(next.change).toBe("changed");
			expect(readSync).not.toHaveBeenCalled();
		} finally {
			tracker.close();
			history.close();
		}
		const line = JSON.parse(fs.readFileSync(join(runDir, "changes.jsonl"), "utf8")) as { fields: unknown };
		expect(line.fields).toEqual({
			content_hash: { old: "0000000000000001", new: expect.stringMatching(/^[0-9a-f]{16}$/) },
		});
	});
});
