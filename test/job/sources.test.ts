import { spawnSync } from "node:child_process";
import { chmod, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";
import { loadIn, loadYaml, makeTempDir, writeFiles } from "./helpers.js";

const U = "https://shop.example";

/** A job whose only targets come from one source. */
function sourceJob(source: string, extra = ""): string {
	return `name: t\n${extra}sources:\n  - ${source}\n`;
}

interface Case {
	name: string;
	source: string;
	files: Record<string, string | Buffer>;
	extra?: string;
	errors?: string[];
	warnings?: string[];
	urls?: string[];
}

const csvCases: Case[] = [
	{
		name: "BOM, CRLF, extra columns and a quoted field with a comma",
		source: "{file: urls.csv, column: url}",
		files: { "urls.csv": `\ufeffid,url,note\r\n1,${U}/a,"x, y"\r\n2,${U}/b,\r\n` },
		urls: [`${U}/a`, `${U}/b`],
	},
	{
		name: "the header decides the column, trimmed; blank lines are skipped",
		source: "{file: urls.csv, column: link}",
		files: { "urls.csv": ` link , name\n\n${U}/a,A\n\n,\n${U}/b,B\n` },
		urls: [`${U}/a`, `${U}/b`],
	},
	{
		name: "a CSV without the named column",
		source: "{file: urls.csv, column: url}",
		files: { "urls.csv": `id,URL\n1,${U}/a\n` },
		errors: ['urls.csv:1:1 column "url" not found in the header ("id", "URL"); did you mean "URL"?'],
	},
	{
		name: "bad rows carry the source file's own line",
		source: "{file: urls.csv, column: url}",
		files: {
			"urls.csv": [
				"id,url",
				`1,${U}/ok`,
				"2,shop.example/a",
				"3",
				"4,",
				"5,file:///etc/passwd",
				`6,${U}/a b`,
				'7,"javascript:alert(1)"',
				"",
			].join("\r\n"),
		},
		errors: [
			'urls.csv:3:1 url: invalid URL format (it needs the http:// or https:// prefix; got "shop.example/a")',
			'urls.csv:4:1 the row has 1 field, so no "url" (field 2 of 2)',
			"urls.csv:5:1 url: url is required",
			'urls.csv:6:1 url: invalid URL format (only http:// and https:// URLs can be scraped, not file:; got "file:///etc/passwd")',
			`urls.csv:7:1 url: invalid URL format (it contains whitespace; encode a space as %20; got "${U}/a b")`,
			'urls.csv:8:1 url: invalid URL format (only http:// and https:// URLs can be scraped, not javascript:; got "javascript:alert(1)")',
		],
	},
	{
		name: "a row spanning lines is reported at its first line",
		source: "{file: urls.csv, column: url}",
		files: { "urls.csv": `note,url\n"two\nlines",nope\n"ok",${U}/a\n` },
		errors: ['urls.csv:2:1 url: invalid URL format (it needs the http:// or https:// prefix; got "nope")'],
	},
	{
		name: "a CSV syntax error ends the source, after the rows before it",
		source: "{file: urls.csv, column: url}",
		files: { "urls.csv": `id,url\n1,bad\n2,"${U}/a"x\n3,${U}/b\n` },
		errors: [
			'urls.csv:2:1 url: invalid URL format (it needs the http:// or https:// prefix; got "bad")',
			"urls.csv:3:1 CSV syntax error: characters after a closing quote (a quote inside a field must be doubled)",
		],
	},
	{
		name: "an unclosed quote",
		source: "{file: urls.csv, column: url}",
		files: { "urls.csv": `id,url\n1,"${U}/a\n2,${U}/b\n` },
		errors: ["urls.csv:2:1 CSV syntax error: a quoted field is never closed"],
	},
	{
		name: "a .tsv file is tab-separated; delimiter can be set",
		source: "{file: urls.tsv, column: url}\n  - {file: semi.csv, column: url, delimiter: ';'}",
		files: { "urls.tsv": `id\turl\n1\t${U}/a\n`, "semi.csv": `id;url\n1;${U}/b\n` },
		urls: [`${U}/a`, `${U}/b`],
	},
	{
		name: "an empty CSV has no header",
		source: "{file: urls.csv, column: url}",
		files: { "urls.csv": "" },
		errors: ["urls.csv:1:1 the CSV file is empty: no header row"],
	},
	{
		name: "a header and nothing else lists no URLs (a warning)",
		source: "{file: urls.csv, column: url}",
		extra: `targets: [${U}/x]\n`,
		files: { "urls.csv": "id,url\n" },
		warnings: ['job.yaml:4:12 warning: source "urls.csv" lists no URLs'],
		urls: [`${U}/x`],
	},
	{
		name: "a binary file given as CSV",
		source: "{file: urls.csv, column: url}",
		files: { "urls.csv": Buffer.from([0x75, 0x72, 0x6c, 0x0a, 0x00, 0x01, 0x0a]) },
		errors: ["urls.csv:2:1 not a text file (NUL bytes)"],
	},
];

const textCases: Case[] = [
	{
		name: "BOM, CRLF, blank lines, comments, indentation, no final newline",
		source: "urls.txt",
		files: { "urls.txt": `\ufeff# my list\r\n${U}/a\r\n\r\n   \r\n  # indented comment\r\n\t${U}/b\r\n${U}/c` },
		urls: [`${U}/a`, `${U}/b`, `${U}/c`],
	},
	{
		name: "bad lines point at the URL's first character",
		source: "{file: urls.txt}",
		files: {
			"urls.txt": `${U}/ok\n  shop.example/a\nfile:///etc/passwd\n${U}/a b\njavascript:void(0)\n`,
		},
		errors: [
			'urls.txt:2:3 invalid URL format (it needs the http:// or https:// prefix; got "shop.example/a")',
			'urls.txt:3:1 invalid URL format (only http:// and https:// URLs can be scraped, not file:; got "file:///etc/passwd")',
			`urls.txt:4:1 invalid URL format (it contains whitespace; encode a space as %20; got "${U}/a b")`,
			'urls.txt:5:1 invalid URL format (only http:// and https:// URLs can be scraped, not javascript:; got "javascript:void(0)")',
		],
	},
	{
		name: "a line longer than 64 KiB is a bad row, and reading goes on",
		source: "urls.txt",
		files: { "urls.txt": `${U}/a\n${U}/${"x".repeat(70_000)}\nnope\n` },
		errors: [
			"urls.txt:2:1 the line is longer than 65536 characters",
			'urls.txt:3:1 invalid URL format (it needs the http:// or https:// prefix; got "nope")',
		],
	},
	{
		name: "binary bytes end the source",
		source: "urls.txt",
		files: { "urls.txt": Buffer.concat([Buffer.from(`${U}/a\nab`), Buffer.from([0, 1, 2, 0x0a])]) },
		errors: ["urls.txt:2:3 not a text file (NUL bytes)"],
	},
	{
		name: "invalid UTF-8 is a bad row",
		source: "urls.txt",
		files: { "urls.txt": Buffer.concat([Buffer.from(`${U}/`), Buffer.from([0xff, 0x0a])]) },
		errors: ["urls.txt:1:1 the line is not valid UTF-8 text"],
	},
	{
		name: "a text file of only comments lists no URLs",
		source: "urls.txt",
		extra: `targets: [${U}/x]\n`,
		files: { "urls.txt": "# nothing yet\n\n" },
		warnings: ['job.yaml:4:5 warning: source "urls.txt" lists no URLs'],
	},
];

async function run(c: Case) {
	const outcome = await loadYaml(sourceJob(c.source, c.extra), { files: c.files });
	return outcome;
}

describe("CSV sources", () => {
	it.each(csvCases)("$name", async (c) => {
		const outcome = await run(c);
		expect(outcome.errors).toEqual(c.errors ?? []);
		expect(outcome.warnings).toEqual(c.warnings ?? []);
		if (c.urls) expect(outcome.loaded?.counts?.targets).toBe(c.urls.length);
	});
});

describe("text sources", () => {
	it.each(textCases)("$name", async (c) => {
		const outcome = await run(c);
		expect(outcome.errors).toEqual(c.errors ?? []);
		expect(outcome.warnings).toEqual(c.warnings ?? []);
		if (c.urls) expect(outcome.loaded?.counts?.targets).toBe(c.urls.length);
	});
});

describe("source files that cannot be read", () => {
	it("missing, a directory: pointed at in the job file, with the path looked at", async () => {
		const dir = await makeTempDir();
		await mkdir(join(dir, "lists"));
		await writeFiles(dir, { "job.yaml": "name: t\nsources:\n  - nope.txt\n  - file: lists\n" });
		const outcome = await loadIn(dir, "job.yaml");
		expect(outcome.errors).toEqual([
			`job.yaml:3:5 cannot read source "nope.txt" (${join(dir, "nope.txt")}): no such file`,
			`job.yaml:4:11 cannot read source "lists" (${join(dir, "lists")}): is a directory, not a file`,
		]);
	});

	it("paths are relative to the job file, not the working directory", async () => {
		const dir = await makeTempDir();
		await writeFiles(dir, {
			"jobs/job.yaml": "name: t\nsources:\n  - lists/urls.txt\n",
			"jobs/lists/urls.txt": "nope\n",
		});
		const outcome = await loadIn(dir, "jobs/job.yaml");
		expect(outcome.errors).toEqual([
			'jobs/lists/urls.txt:1:1 invalid URL format (it needs the http:// or https:// prefix; got "nope")',
		]);
	});

	it("an unreadable file", async () => {
		const dir = await makeTempDir();
		await writeFiles(dir, { "job.yaml": "name: t\nsources:\n  - urls.txt\n", "urls.txt": `${U}/a\n` });
		await chmod(join(dir, "urls.txt"), 0o000);
		const expected = `job.yaml:3:5 cannot read source "urls.txt" (${join(dir, "urls.txt")}): permission denied`;
		if (process.getuid?.() !== 0) {
			expect((await loadIn(dir, "job.yaml")).errors).toEqual([expected]);
			return;
		}
		// Root reads a mode-000 file; in a user namespace of its own with no uid mapped it is the file's
		// owner without root's override, so `validate` meets the refusal a user's cron job would.
		assertBuilt();
		const { status, stderr } = spawnSync("unshare", ["-U", process.execPath, BIN, "validate", "job.yaml"], {
			cwd: dir,
			encoding: "utf8",
			env: { PATH: process.env.PATH },
		});
		expect(stderr).toContain(expected);
		expect(status).toBe(2);
	});
});

describe("on_bad_row", () => {
	const files = { "urls.txt": `${U}/a\nnope\n${U}/b\nfile:///x\n` };

	it("fail (the default): bad rows are errors", async () => {
		const outcome = await loadYaml(sourceJob("urls.txt"), { files });
		expect(outcome.errors).toHaveLength(2);
		expect(outcome.loaded).toBeNull();
	});

	it("skip: bad rows are warnings, skipped and counted", async () => {
		const outcome = await loadYaml(sourceJob("urls.txt", "on_bad_row: skip\n"), { files });
		expect(outcome.errors).toEqual([]);
		expect(outcome.warnings).toEqual([
			'urls.txt:2:1 warning: skipped: invalid URL format (it needs the http:// or https:// prefix; got "nope")',
			'urls.txt:4:1 warning: skipped: invalid URL format (only http:// and https:// URLs can be scraped, not file:; got "file:///x")',
		]);
		expect(outcome.loaded?.counts).toMatchObject({ targets: 2, skippedRows: 2 });
	});

	it("skip does not cover a source that cannot be read", async () => {
		const outcome = await loadYaml(sourceJob("missing.txt", "on_bad_row: skip\n"));
		expect(outcome.errors).toHaveLength(1);
		expect(outcome.errors[0]).toMatch(/^job\.yaml:4:5 cannot read source "missing.txt" .*: no such file$/);
	});

	it("a million bad rows do not become a million lines: 100 per file, then a summary", async () => {
		const lines = Array.from({ length: 250 }, (_, i) => `bad-${i + 1}`).join("\n");
		const outcome = await loadYaml(sourceJob("urls.txt"), { files: { "urls.txt": `${lines}\n` } });
		expect(outcome.errors).toHaveLength(101);
		expect(outcome.errors[99]).toMatch(/^urls\.txt:100:1 /);
		expect(outcome.errors[100]).toBe(
			'urls.txt:101:1 150 more problems in this file not shown (the first is here: invalid URL format (it needs the http:// or https:// prefix; got "bad-101"))',
		);
	});
});
