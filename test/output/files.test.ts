import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { createCsvSink, createJsonlSink, neutraliseFormula, RECORD_COLUMNS } from "../../src/output/index.js";
import { csvCatchUp, readPriorProgress, truncateTornTail } from "../../src/run/resume-state.js";
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
		for (const lead of ["=", "+", "-", "@", "\t"]) expect(neutraliseFormula(`${lead}1`)).toBe(`'${lead}1`);
		expect(neutraliseFormula("https://x")).toBe("https://x");
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
		expect(prior.byStatus).toEqual({ ok: 1, failed: 1, skipped: 0 });
		expect(prior.creditsUsed).toBe(2);
		expect(prior.errorsByKind).toEqual({ dns_failed: 1 });

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
		expect(truncateTornTail(jsonl)).toBe(0);
	});
});
