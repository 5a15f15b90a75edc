import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROWS_PER_BATCH, readSourceRows } from "../../src/job/sources.js";
import type { SourceSpec } from "../../src/job/types.js";
import { tempDir } from "../helpers/job-files.js";

async function batchesOf(spec: SourceSpec): Promise<number[][]> {
	const batches: number[][] = [];
	for await (const rows of readSourceRows(spec))
		batches.push(rows.map((row) => (row.kind === "fatal" ? -1 : row.line)));
	return batches;
}

describe("sources are handed over in small batches", () => {
	it("a text source whose read chunk holds ~2,000 URLs comes in batches of at most ROWS_PER_BATCH rows, every line once, in order", async () => {
		const path = join(tempDir(), "urls.txt");
		// ~30 bytes a line: one 64 KiB read holds about 2,200 of them.
		const lines = Array.from({ length: 5000 }, (_, index) => `https://example.com/p/${index + 1}`);
		writeFileSync(path, `${lines.join("\n")}\n`);
		const origin = { file: "job.yaml", line: 1, col: 1 };
		const batches = await batchesOf({ kind: "text", path, displayPath: "urls.txt", options: {}, origin });
		expect(Math.max(...batches.map((batch) => batch.length))).toBe(ROWS_PER_BATCH);
		expect(batches.flat()).toEqual(lines.map((_, index) => index + 1));
	});

	it("a CSV source too", async () => {
		const path = join(tempDir(), "urls.csv");
		const lines = Array.from({ length: 1000 }, (_, index) => `https://example.com/p/${index + 1}`);
		writeFileSync(path, `url\n${lines.join("\n")}\n`);
		const origin = { file: "job.yaml", line: 1, col: 1 };
		const spec: SourceSpec = {
			kind: "csv",
			path,
			displayPath: "urls.csv",
			options: {},
			origin,
			column: "url",
			delimiter: ",",
		};
		const batches = await batchesOf(spec);
		expect(Math.max(...batches.map((batch) => batch.length))).toBe(ROWS_PER_BATCH);
		expect(batches.flat()).toEqual(lines.map((_, index) => index + 2));
	});
});
