import { closeSync, openSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HistoryIndex } from "../../src/history/history-index.js";
import { tempDir } from "../helpers/job-files.js";

/** An index of `count` ok entries written to a file by `writeTo`, at `position` (after other bytes). */
function writtenIndex(count: number, position = 5): string {
	const index = new HistoryIndex();
	for (let n = 0; n < count; n += 1) {
		const id = n.toString(16).padStart(16, "0");
		index.record(id, "ok", 1_000 + n, (n + 1).toString(16).padStart(16, "0"), 0, n * 100);
	}
	const path = join(tempDir(), "index");
	writeFileSync(path, Buffer.alloc(position, 0x2a));
	const fd = openSync(path, "a");
	index.writeTo(fd);
	closeSync(fd);
	return path;
}

function readBack(path: string, position = 5): HistoryIndex {
	const fd = openSync(path, "r");
	try {
		return HistoryIndex.readFrom(fd, position, statSync(path).size - position);
	} finally {
		closeSync(fd);
	}
}

describe("HistoryIndex on disk", () => {
	it("reads back what it wrote, from where it was written", () => {
		const index = readBack(writtenIndex(100));
		expect(index.size).toBe(100);
		expect(index.get("0000000000000063")).toMatchObject({ latest: "ok", okAt: 1_099, okHash: "0000000000000064" });
		expect(index.get("00000000000000ff")).toBeNull();
	});

	it("refuses a file whose slot table names an entry past its columns (it is not one of ours)", () => {
		const path = writtenIndex(100);
		const bytes = readFileSync(path);
		const slots = bytes.readUInt32LE(5);
		// The first used slot now names entry 10,000 of a 100-entry index.
		let at = 5 + 8;
		while (bytes.readUInt32LE(at) === 0) at += 4;
		expect(at).toBeLessThan(5 + 8 + slots * 4);
		bytes.writeUInt32LE(10_001, at);
		writeFileSync(path, bytes);
		expect(() => readBack(path)).toThrow("not a history index");
	});

	it("refuses a header that does not match the file: a slot count not a power of two, a size past half the slots, a wrong length", () => {
		for (const corrupt of [
			(bytes: Buffer) => bytes.writeUInt32LE(bytes.readUInt32LE(5) - 1, 5),
			(bytes: Buffer) => bytes.writeUInt32LE(bytes.readUInt32LE(5) / 2 + 1, 9),
			(bytes: Buffer) => bytes.writeUInt32LE(bytes.readUInt32LE(9) + 1, 9),
		]) {
			const path = writtenIndex(100);
			const bytes = readFileSync(path);
			corrupt(bytes);
			writeFileSync(path, bytes);
			expect(() => readBack(path)).toThrow("not a history index");
		}
		// Consistent in every other way: 6 slots (all empty), 2 entries, the length to match.
		const made = join(tempDir(), "made");
		const head = Buffer.alloc(8);
		head.writeUInt32LE(6, 0);
		head.writeUInt32LE(2, 4);
		writeFileSync(made, Buffer.concat([Buffer.alloc(5), head, Buffer.alloc(6 * 4 + 2 * 45)]));
		expect(() => readBack(made)).toThrow("not a history index");
		const short = writtenIndex(100);
		writeFileSync(short, readFileSync(short).subarray(0, statSync(short).size - 1));
		expect(() => readBack(short)).toThrow("not a history index");
	});
});
