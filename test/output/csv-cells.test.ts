import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { afterEach, describe, expect, it } from "vitest";
import { createCsvSink, cutCell, type ResultRecord } from "../../src/output/index.js";
import { csvCatchUp } from "../../src/run/records/resume-state.js";
import { isRunFolderName, readCsv, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

/** A page with 4,000 links: as a list, about 150,000 characters (the pages made 631,716). */
const LINKS = 4000;
const LINK_PAGE = `<html><body><nav>${Array.from(
	{ length: LINKS },
	(_, index) => `<a href="/catalogue/section/item-${index}.html">item ${index}</a>`,
).join("")}</nav><h1>=1+1</h1></body></html>`;

let service: TestService | undefined;
let site: Server | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
	await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
	site = undefined;
});

async function startSite(): Promise<string> {
	site = createServer((_req, res) => {
		res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(LINK_PAGE);
	});
	await new Promise<void>((resolve) => site!.listen(0, "127.0.0.1", resolve));
	return `http://127.0.0.1:${(site!.address() as AddressInfo).port}`;
}

function onlyRun(jobDir: string): string {
	const runs = readdirSync(jobDir).filter((name) => existsSync(join(jobDir, name, "run.json")));
	expect(runs).toHaveLength(1);
	return join(jobDir, runs[0]!);
}

/** The cell's kept start and the N of its `…[+N chars]`, or null when it was not cut. */
function cut(cell: string): { kept: string; omitted: number } | null {
	const match = /…\[\+(\d+) chars\]$/.exec(cell);
	return match ? { kept: cell.slice(0, match.index), omitted: Number(match[1]) } : null;
}

async function runLinks(origin: string, name: string, output: string) {
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(
		dir,
		name,
		`name: ${name}\ndefaults:\n  mode: request\ntargets:\n  - ${origin}/links\nextract:\n  links: {css: "nav a", attr: href, all: true}\n  title: h1\noutput:\n  content: none\n${output}`,
	);
	const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service!.env });
	expect(result.stderr).toBe("");
	expect(result.code).toBe(0);
	return onlyRun(join(out, name));
}

describe("output.csv_max_cell", () => {
	it("cuts a long CSV cell at 32767 characters by default, marker included; JSONL keeps the whole list", async () => {
		service = await startTestService();
		const origin = await startSite();
		const runDir = await runLinks(origin, "links", "");
		const [record] = readRecords(runDir);
		const links = record!.data!.links as string[];
		expect(links).toHaveLength(LINKS);
		const whole = links.join(" | ");
		expect(whole.length).toBeGreaterThan(131_072);

		const [row] = readCsv(runDir);
		const cell = row!.links!;
		expect(cell.length).toBeLessThanOrEqual(32_767);
		expect(cell.length).toBeGreaterThan(32_767 - 20);
		const parts = cut(cell)!;
		expect(parts.kept).toBe(whole.slice(0, parts.kept.length));
		expect(parts.kept.length + parts.omitted).toBe(whole.length);
		// A short cell is untouched (and still neutralised against formulas).
		expect(row!.title).toBe("'=1+1");
	});

	it("a set limit cuts there; 0 keeps every character; a limit below the marker's room is refused", async () => {
		service = await startTestService();
		const origin = await startSite();
		const small = readCsv(await runLinks(origin, "small", "  csv_max_cell: 100\n"))[0]!.links!;
		expect(small.length).toBe(100);
		expect(cut(small)!.kept.length + cut(small)!.omitted).toBeGreaterThan(131_072);

		const whole = readCsv(await runLinks(origin, "whole", "  csv_max_cell: 0\n"))[0]!.links!;
		expect(cut(whole)).toBeNull();
		expect(whole.split(" | ")).toHaveLength(LINKS);

		const dir = tempDir();
		const job = writeJob(dir, "bad", `targets: [${origin}/a]\noutput:\n  csv_max_cell: 5\n`);
		const result = await runCli(["validate", job]);
		expect(result.code).toBe(2);
		expect(result.stderr).toContain(
			"bad.yaml:3:17 output.csv_max_cell: must be 0 (no limit) or at least 32, room for the cut's marker (got 5)",
		);
	});

	it("merge and export --latest cut cells as the job's runs do (its csv_max_cell, not the default)", async () => {
		service = await startTestService();
		const origin = await startSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"cut",
			`name: cut\ndefaults:\n  mode: request\ntargets:\n  - ${origin}/links\nextract:\n  links: {css: "nav a", attr: href, all: true}\noutput:\n  content: none\n  csv_max_cell: 100\n`,
		);
		for (const shard of ["1/2", "2/2"]) {
			const result = await runCli(["run", job, "--out", out, "--quiet", "--shard", shard], { env: service.env });
			expect(result.code, result.stderr).toBe(0);
		}
		const folders = readdirSync(join(out, "cut"))
			.filter(isRunFolderName)
			.map((name) => join(out, "cut", name));
		expect(folders).toHaveLength(2);
		const merged = join(dir, "merged");
		const merging = await runCli(["merge", ...folders, "--out", merged]);
		expect(merging.code, merging.stderr).toBe(0);
		expect(readCsv(merged)[0]!.links).toHaveLength(100);

		const latest = join(dir, "latest.csv");
		const exporting = await runCli(["export", job, "--latest", "--from", out, "--out", latest]);
		expect(exporting.code, exporting.stderr).toBe(0);
		const [row] = parse(readFileSync(latest), { columns: true, bom: true }) as Array<Record<string, string>>;
		expect(row!.links).toHaveLength(100);
		expect(cut(row!.links!)!.omitted).toBeGreaterThan(131_000);
	});

	it("a resumed run's catch-up compares the row cut as the file's was (no second row for the last record)", async () => {
		const path = join(tempDir(), "results.csv");
		const record = {
			id: "a",
			url: "https://shop.example/a",
			status: "ok",
			message: "x".repeat(500),
		} as unknown as ResultRecord;
		const sink = createCsvSink(path, { columns: ["id", "url", "status", "message"], maxCell: 100 });
		sink.write(record);
		await sink.close();
		expect(csvCatchUp(path, record, 100)).toBe("");
	});

	it("cutCell never splits a surrogate pair and settles the marker's own length", () => {
		const emoji = "😀".repeat(100);
		const cell = cutCell(emoji, 50);
		expect(cell.length).toBeLessThanOrEqual(50);
		expect(cell).toMatch(/^(😀)+…\[\+\d+ chars\]$/);
		const parts = cut(cell)!;
		expect(parts.kept.length + parts.omitted).toBe(200);
		// 10 kept + "…[+9990 chars]" (14) is 24; at 24 exactly N has 4 digits and fits.
		const digits = cutCell("y".repeat(10_000), 24);
		expect(digits).toBe(`${"y".repeat(10)}…[+9990 chars]`);
		expect(cutCell("short", 32)).toBe("short");
	});
});

describe("CSV header cells", () => {
	it("are neutralised against formulas as data cells are", async () => {
		const path = join(tempDir(), "results.csv");
		const sink = createCsvSink(path, { columns: ["id", '=HYPERLINK("http://evil/","x")', "@cmd", "plain"] });
		await sink.close();
		const [header] = parse(readFileSync(path, "utf8")) as string[][];
		expect(header).toEqual(["id", `'=HYPERLINK("http://evil/","x")`, "'@cmd", "plain"]);
	});
});
