import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { cutTornTail } from "../../src/common/jsonl-lines.js";
import {
	createCsvSink,
	createJsonlSink,
	csvColumnsFor,
	neutraliseFormula,
	RECORD_COLUMNS,
} from "../../src/output/index.js";
import { csvCatchUp, readPriorProgress } from "../../src/run/records/resume-state.js";
import { record } from "../helpers/records.js";

const tempDir = () => mkdtempSync(join(tmpdir(), "scrapejob-output-"));

describe("CSV sink", () => {
	it("writes the declared columns once and RFC 4180 rows, neutralising formula cells", async () => {
		const path = join(tempDir(), "results.csv");
		const sink = createCsvSink(path);
		sink.write(
			record("a", { message: '=HYPERLINK("x")', status: "failed", error: "http_500", url: "https://e.test/a,b" }),
		);
		sink.write(record("b", { message: 'say "hi"' }));
		await sink.close();
		const again = createCsvSink(path); // a resumed run: no second header
		again.write(record("c"));
		await again.close();
		const rows = parse(readFileSync(path, "utf8"), { columns: true }) as Record<string, string>[];
		expect(Object.keys(rows[0]!)).toEqual([...RECORD_COLUMNS]);
		expect(rows.map((row) => row.id)).toEqual(["a", "b", "c"]);
		expect(rows[0]!.message).toBe('\'=HYPERLINK("x")');
		expect(rows[0]!.url).toBe("https://e.test/a,b");
		expect(rows[1]!.message).toBe('say "hi"');
		expect(rows[1]!.error).toBe("");
	});

	it("neutralises every formula lead character", () => {
		for (const lead of ["=", "+", "-", "@", "\t", "\r"]) expect(neutraliseFormula(`${lead}1`)).toBe(`'${lead}1`);
		expect(neutraliseFormula("https://x")).toBe("https://x");
	});

	it("neutralises a cell led by a carriage return in the file too (a spreadsheet drops it and runs the rest)", async () => {
		const path = join(tempDir(), "results.csv");
		const sink = createCsvSink(path);
		sink.write(record("a", { message: "\r=1+1" }));
		await sink.close();
		const rows = parse(readFileSync(path, "utf8"), { columns: true }) as Record<string, string>[];
		expect(rows[0]!.message).toBe("'\r=1+1");
	});
});

describe("resume state", () => {
	it("cuts a torn last line, counts what was done, and brings the CSV level with JSONL", async () => {
		const dir = tempDir();
		const jsonl = join(dir, "results.jsonl");
		const csv = join(dir, "results.csv");
		const jsonSink = createJsonlSink(jsonl);
		const csvSink = createCsvSink(csv);
		jsonSink.write(record("a"));
		csvSink.write(record("a"));
		jsonSink.write(record("b", { status: "failed", error: "dns_failed", credits_used: 0, attempts: 1 }));
		// crash: b's CSV row was never written, and a third JSONL line was torn
		await jsonSink.close();
		await csvSink.close();
		appendFileSync(jsonl, '{"id":"c","url":"https://exa');
		appendFileSync(csv, "c,https://exa");

		const prior = await readPriorProgress(jsonl);
		expect(prior.tornBytes).toBeGreaterThan(0);
		expect(prior.done.has("a")).toBe(true);
		expect(prior.done.has("b")).toBe(true);
		expect(prior.done.has("c")).toBe(false);
		expect(prior.statistics.byStatus).toEqual({ ok: 1, failed: 1, skipped: 0 });
		expect(prior.statistics.creditsUsed).toBe(2);
		expect(prior.statistics.errorsByKind).toEqual({ dns_failed: 1 });

		const missing = csvCatchUp(csv, prior.lastRecord);
		appendFileSync(csv, missing);
		const rows = parse(readFileSync(csv, "utf8"), { columns: true }) as Record<string, string>[];
		expect(rows.map((row) => row.id)).toEqual(["a", "b"]);
		expect(csvCatchUp(csv, prior.lastRecord)).toBe("");
	});

	it("reads records with inline content without parsing the content", async () => {
		const dir = tempDir();
		const jsonl = join(dir, "results.jsonl");
		writeFileSync(jsonl, `${JSON.stringify({ ...record("x"), content: "<html>".repeat(1000) })}\n`);
		const prior = await readPriorProgress(jsonl);
		expect(prior.done.has("x")).toBe(true);
		expect(prior.lastRecord?.content).toBeUndefined();
		expect(cutTornTail(jsonl)).toBe(0);
	});
});

describe("results.csv with the job's columns", () => {
	it("extract fields and carried columns sit between content_path and content_hash; a resumed run keeps the file's header", async () => {
		const path = join(tempDir(), "results.csv");
		const record = {
			id: "a",
			url: "https://x.example/",
			status: "ok",
			http_status: 200,
			error: null,
			message: null,
			mode_requested: "request",
			mode_used: "request",
			credits_used: 2,
			credits_remaining: null,
			attempts: 1,
			task_id: null,
			started_at: "t0",
			finished_at: "t1",
			duration_ms: 1,
			bytes: 10,
			content_path: null,
			content_hash: null,
			change: null,
			depth: null,
			parent: null,
			data: { price: 12.5, tags: ["a", "b"], name: null, nested: { k: 1 } },
			sku: "=SKU-1",
		} as const;
		const first = createCsvSink(path, {
			columns: csvColumnsFor({ data: ["price", "tags", "name", "nested"], carry: ["sku"] }),
		});
		first.write(record as never);
		await first.close();
		// The resumed run declares other columns (the job changed): rows still follow the file's header.
		const again = createCsvSink(path, { columns: csvColumnsFor({ data: ["tags"] }) });
		again.write({ ...record, id: "b" } as never);
		await again.close();
		const lines = readFileSync(path, "utf8").split("\r\n");
		expect(lines[0]).toContain("bytes,content_path,price,tags,name,nested,sku,content_hash,change,depth,parent");
		expect(lines[1]).toContain(`10,,12.5,a | b,,"{""k"":1}",'=SKU-1,,,,`);
		expect(lines[2]).toMatch(/^b,/);
		expect(lines[2]).toContain(`10,,12.5,a | b,,"{""k"":1}",'=SKU-1,,,,`);
		expect(lines).toHaveLength(4);
	});
});
