import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { jsonlLines, openJsonlReader } from "../../src/common/jsonl-lines.js";
import { tempDir } from "../helpers/job-files.js";

describe("the one JSONL reader", () => {
	it("cuts lines on bytes: a character split by a chunk's edge is whole, offsets are byte offsets", () => {
		const path = join(tempDir(), "lines.jsonl");
		// "é" and "😀" are 2 and 4 bytes: with 7-byte chunks, some fall across a chunk's edge.
		const texts = ['{"v":"é"}', '{"v":"😀😀"}', "", '{"v":"plain"}', '{"v":"ééé"}'];
		writeFileSync(path, `${texts.join("\n")}\n`);
		const reader = openJsonlReader(path, { chunkBytes: 7 });
		const read = [];
		for (let line = reader.next(); line !== null; line = reader.next()) read.push(line);
		reader.close();
		expect(read.map((line) => line.text)).toEqual(texts.filter((text) => text !== ""));
		// Numbers count the empty line; offsets and ends are bytes, as a later reader needs them.
		expect(read.map((line) => line.number)).toEqual([1, 2, 4, 5]);
		let at = 0;
		const expected = texts.map((text) => {
			const offset = at;
			at += Buffer.byteLength(text) + 1;
			return { offset, end: at };
		});
		expect(read.map(({ offset, end }) => ({ offset, end }))).toEqual(
			expected.filter((_, index) => texts[index] !== ""),
		);
		// Read again from one line's end: the rest, and nothing before it.
		expect([...jsonlLines(path, { from: read[1]!.end })].map((line) => line.text)).toEqual([
			'{"v":"plain"}',
			'{"v":"ééé"}',
		]);
	});

	it("holds back a line without its newline until it is whole, and follows a file that grows", () => {
		const path = join(tempDir(), "growing.jsonl");
		writeFileSync(path, '{"a":1}\r\n{"b":');
		const reader = openJsonlReader(path, { chunkBytes: 4 });
		expect(reader.next()?.text).toBe('{"a":1}');
		expect(reader.next()).toBeNull();
		expect(reader.position).toBe(9);
		appendFileSync(path, '2}\n{"c":3}\n');
		expect(reader.next()?.text).toBe('{"b":2}');
		expect(reader.next()?.text).toBe('{"c":3}');
		expect(reader.next()).toBeNull();
		reader.close();
		expect([...jsonlLines(path)].map((line) => line.text)).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
	});

	it("returns an unterminated last line only when asked (a finished file judged whole)", () => {
		const path = join(tempDir(), "torn.jsonl");
		writeFileSync(path, '{"a":1}\n{"torn');
		expect([...jsonlLines(path)].map((line) => line.text)).toEqual(['{"a":1}']);
		const all = [...jsonlLines(path, { unterminated: true, chunkBytes: 3 })];
		expect(all.map((line) => [line.text, line.number, line.offset, line.end])).toEqual([
			['{"a":1}', 1, 0, 8],
			['{"torn', 2, 8, 14],
		]);
	});

	it("reads a range [from, until) of whole lines, whatever follows it", () => {
		const path = join(tempDir(), "range.jsonl");
		writeFileSync(path, '{"a":1}\n{"b":2}\n{"c":3}\n');
		// Bytes 8..16 are the line {"b":2}; the file goes on past it (a frontier still being appended to).
		for (const chunkBytes of [3, 1 << 20]) {
			expect([...jsonlLines(path, { from: 8, until: 16, chunkBytes })].map((line) => line.text)).toEqual(['{"b":2}']);
		}
		expect([...jsonlLines(path, { from: 8, until: 8 })]).toEqual([]);
	});

	it("reads a missing file as empty", () => {
		expect([...jsonlLines(join(tempDir(), "absent.jsonl"))]).toEqual([]);
	});
});
