import { describe, expect, it } from "vitest";
import { type ResultRecord, recordJson } from "../../src/output/index.js";

/** A small deterministic generator, so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** Strings with what JSON escapes or may trip on: quotes, backslashes, controls, non-ASCII, lone surrogates. */
const PIECES = [
	"a",
	"Z",
	"0",
	" ",
	'"',
	"\\",
	"\n",
	"\t",
	"\u0000",
	"\u001f",
	"\u007f",
	"é",
	"€",
	"😀",
	"\ud800",
	"\udfff",
	"\u2028",
	"/",
	"<",
];

function text(next: () => number): string {
	let out = "";
	const length = Math.floor(next() * 12);
	for (let i = 0; i < length; i++) out += PIECES[Math.floor(next() * PIECES.length)];
	return out;
}

const NUMBERS = [
	0,
	-0,
	1,
	2,
	409,
	999_360_000,
	-5,
	0.5,
	1e21,
	1e-7,
	Number.NaN,
	Number.POSITIVE_INFINITY,
	Number.NEGATIVE_INFINITY,
];

function pick<T>(next: () => number, values: readonly T[]): T {
	return values[Math.floor(next() * values.length)] as T;
}

/** A record built field by field in column order, as `fetchedRecord` builds one, with odd values throughout. */
function oddRecord(seed: number): ResultRecord {
	const next = random(seed);
	const maybe = <T>(value: T): T | null => (next() < 0.3 ? null : value);
	const record: ResultRecord = {
		id: next() < 0.8 ? "5987e4cfc9a856dd" : text(next),
		url: `https://example.com/${text(next)}`,
		status: pick(next, ["ok", "failed", "skipped"] as const),
		http_status: maybe(pick(next, NUMBERS)),
		error: maybe(text(next)),
		message: maybe(text(next)),
		mode_requested: pick(next, ["auto", "request", "browser"] as const),
		mode_used: maybe(next() < 0.5 ? "auto (browser)" : text(next)),
		credits_used: pick(next, NUMBERS),
		credits_remaining: maybe(pick(next, NUMBERS)),
		attempts: pick(next, NUMBERS),
		task_id: maybe(text(next)),
		started_at: next() < 0.8 ? "2026-11-24T21:55:07.719Z" : text(next),
		finished_at: "2026-11-24T21:55:07.729Z",
		duration_ms: pick(next, NUMBERS),
		bytes: pick(next, NUMBERS),
		content_path: maybe(`pages/${text(next)}.html`),
		content_hash: maybe(next() < 0.8 ? "9b33dd47817a6c33" : text(next)),
		change: maybe(pick(next, ["new", "changed", "unchanged"] as const)),
		depth: maybe(pick(next, NUMBERS)),
		parent: maybe(text(next)),
	};
	if (next() < 0.4) record.data = { title: text(next), price: pick(next, NUMBERS), tags: [text(next), null] };
	if (next() < 0.3) record.content = text(next);
	return record;
}

describe("recordJson", () => {
	it("writes exactly what JSON.stringify writes, over 20,000 records with odd values", () => {
		for (let seed = 1; seed <= 20_000; seed++) {
			const record = oddRecord(seed);
			const expected = JSON.stringify(record);
			if (recordJson(record) !== expected) expect({ seed, text: recordJson(record) }).toEqual({ seed, text: expected });
		}
	});

	it("writes data and content after the fixed fields, and leaves absent ones out", () => {
		const record = oddRecord(7);
		record.data = { a: 1 };
		record.content = "<p>hi</p>";
		const text = recordJson(record);
		expect(text.endsWith(',"data":{"a":1},"content":"<p>hi</p>"}')).toBe(true);
		delete record.data;
		delete record.content;
		expect(recordJson(record).endsWith(`,"parent":${JSON.stringify(record.parent)}}`)).toBe(true);
		expect(JSON.parse(recordJson(record))).toEqual(JSON.parse(JSON.stringify(record)));
	});
});
