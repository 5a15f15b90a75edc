import { mkdir, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { JobValidationError, loadJob, MAX_JOB_FILE_BYTES } from "../../src/job/index.js";
import { loadIn, loadYaml, makeTempDir } from "./helpers.js";

// loadJob's words: a library caller has the schema file, not the CLI (schema-hint.test.ts has the CLI's).
const EXPECTED =
	"expected a mapping of keys such as name, defaults, targets and sources (see node_modules/scrapejob/jobs/job.schema.json)";

/** Files that are not job files at all: one clear problem each, never a stack trace. */
const cases: Array<{ name: string; content: string | Buffer; errors: string[] }> = [
	{ name: "empty file", content: "", errors: [`job.yaml:1:1 the job file is empty; ${EXPECTED}`] },
	{ name: "only comments", content: "# nothing yet\n\n", errors: [`job.yaml:1:1 the job file is empty; ${EXPECTED}`] },
	{ name: "a list", content: "- a\n- b\n", errors: [`job.yaml:1:1 the job file is a list; ${EXPECTED}`] },
	{
		name: "a scalar (plain text)",
		content: "hello world\n",
		errors: [`job.yaml:1:1 the job file is a single value, not YAML keys; ${EXPECTED}`],
	},
	{
		name: "not YAML",
		content: "name: t\ntargets: [https://a.example/\n",
		errors: [
			"job.yaml:3:1 YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]",
		],
	},
	{
		name: "tabs as indentation",
		content: "name: t\ntargets:\n\t- https://a.example/\n",
		errors: ["job.yaml:3:1 YAML syntax error: Tabs are not allowed as indentation"],
	},
	{
		name: "a duplicated key",
		content: "name: a\nname: b\n",
		errors: ["job.yaml:2:1 YAML syntax error: Map keys must be unique"],
	},
	{
		name: "two documents",
		content: "name: t\ntargets: [https://a.example/]\n---\nname: u\n",
		errors: ["job.yaml:3:1 YAML: a job file holds one document; remove the `---` line or put each job in its own file"],
	},
	{
		name: "an alias to nothing",
		content: "name: t\ntargets: *list\n",
		errors: ["job.yaml:1:1 YAML error: Unresolved alias (the anchor must be set before the alias): list"],
	},
	{
		name: "binary bytes (NUL)",
		content: Buffer.from([0x6e, 0x61, 0x6d, 0x65, 0x3a, 0x0a, 0x00, 0x01, 0x02]),
		errors: ["job.yaml:2:1 the file is binary (it contains NUL bytes), not a YAML job file"],
	},
	{
		name: "invalid UTF-8",
		content: Buffer.concat([Buffer.from("name: t\ntargets:\n  - https://a.example/"), Buffer.from([0xff, 0x0a])]),
		errors: ["job.yaml:3:23 the file is not valid UTF-8 text"],
	},
	{
		name: "UTF-16",
		content: Buffer.from("\ufeffname: t\n", "utf16le"),
		errors: ["job.yaml:1:1 the file is UTF-16 text; save it as UTF-8"],
	},
];

describe("files that are not job files", () => {
	it.each(cases)("$name", async ({ content, errors }) => {
		const outcome = await loadYaml(content);
		expect(outcome.errors).toEqual(errors);
	});

	it("a UTF-8 BOM and CRLF line ends are fine", async () => {
		const outcome = await loadYaml("\ufeffname: bom\r\ntargets:\r\n  - https://a.example/\r\n");
		expect(outcome.errors).toEqual([]);
		expect(outcome.loaded?.job.name).toBe("bom");
	});

	it("the error is a JobValidationError with code SCRAPEJOB_JOB_INVALID and a readable message", async () => {
		const dir = await makeTempDir();
		await writeFile(join(dir, "job.yaml"), "- a\n");
		const error = await loadJob("job.yaml", { cwd: dir, env: {} }).catch((e: unknown) => e);
		expect(error).toBeInstanceOf(JobValidationError);
		expect((error as JobValidationError).code).toBe("SCRAPEJOB_JOB_INVALID");
		expect((error as JobValidationError).message).toBe(
			`invalid job (1 problem):\n  job.yaml:1:1 the job file is a list; ${EXPECTED}`,
		);
	});
});

describe("job file paths that cannot be read", () => {
	it("refuses a 50 MB file by its size, before reading it", async () => {
		const dir = await makeTempDir();
		// A sparse file: 50 MB long, nothing on disk; reading it whole would show in the timing and memory.
		await writeFile(join(dir, "big.yaml"), "");
		await truncate(join(dir, "big.yaml"), 50 * 1024 * 1024);
		const outcome = await loadIn(dir, "big.yaml");
		expect(outcome.errors).toEqual([
			`big.yaml:1:1 the job file is 52428800 bytes; the limit is ${MAX_JOB_FILE_BYTES} bytes (10 MiB) — put long URL lists in a source file (sources:)`,
		]);
	});

	it("a missing file, a directory, a device", async () => {
		const dir = await makeTempDir();
		await mkdir(join(dir, "folder.yaml"));
		expect((await loadIn(dir, "missing.yaml")).errors).toEqual([
			"missing.yaml:1:1 cannot read the job file: no such file",
		]);
		expect((await loadIn(dir, "folder.yaml")).errors).toEqual(["folder.yaml:1:1 is a directory, not a job file"]);
		expect((await loadIn(dir, "/dev/null")).errors).toEqual([
			"/dev/null:1:1 is not a regular file (a pipe, socket or device)",
		]);
	});

	it("shows the path relative to the working directory when below it, absolute otherwise", async () => {
		const dir = await makeTempDir();
		await mkdir(join(dir, "jobs"));
		await writeFile(join(dir, "jobs", "a.yaml"), "- x\n");
		expect((await loadIn(dir, join(dir, "jobs", "a.yaml"))).errors[0]).toMatch(/^jobs\/a\.yaml:1:1 /);
		const elsewhere = await makeTempDir();
		expect((await loadIn(elsewhere, join(dir, "jobs", "a.yaml"))).errors[0]).toMatch(
			new RegExp(`^${join(dir, "jobs", "a.yaml")}:1:1 `),
		);
	});
});

describe("alias bombs", () => {
	it("a 2.7 MB file of 900,000 aliases is refused before it is parsed (seconds, not minutes and a gigabyte)", async () => {
		const layers = ["name: bomb", "a: &a [x, y, z, w]"];
		for (let index = 1; index <= 8; index += 1)
			layers.push(
				`l${index}: &l${index} [${Array(9)
					.fill(index === 1 ? "*a" : `*l${index - 1}`)
					.join(",")}]`,
			);
		layers.push(`big: [${Array(900_000).fill("*a").join(",")}]`);
		const outcome = await loadYaml(`${layers.join("\n")}\n`);
		expect(outcome.loaded).toBeNull();
		expect(outcome.errors).toEqual([
			expect.stringMatching(/^job\.yaml:11:\d+ the job file uses more than 10000 aliases \(\*name\)/),
		]);
	}, 20_000);
});
