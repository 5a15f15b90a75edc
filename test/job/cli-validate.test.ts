// biome-ignore-all lint/suspicious/noTemplateCurlyInString: job files spell variables as ${NAME}
import { describe, expect, it } from "vitest";
import { createProgram, main } from "../../src/cli/main.js";
import { jobJsonSchemaText } from "../../src/job/index.js";
import { createTestContext, makeTempDir, writeFiles } from "./helpers.js";

const U = "https://shop.example";

async function validate(files: Record<string, string>, argv: string[], env: NodeJS.ProcessEnv = {}) {
	const dir = await makeTempDir();
	await writeFiles(dir, files);
	const { ctx, stdout, stderr } = createTestContext(dir, env);
	const code = await main(["validate", ...argv], ctx);
	return { code, stdout: stdout.text, stderr: stderr.text };
}

const good = [
	"name: shop",
	"defaults: {mode: request}",
	"targets:",
	`  - ${U}/a`,
	`  - url: ${U}/b`,
	"    mode: browser",
	"    screenshot: true",
	`  - ${U}/a`,
	"sources:",
	"  - urls.txt",
].join("\n");

describe("scrapejob validate", () => {
	it("valid jobs: exit 0, one summary line each, warnings on stderr", async () => {
		const result = await validate(
			{ "good.yaml": good, "urls.txt": `${U}/c\n${U}/d\n`, "tiny.yaml": `targets: [${U}/x]\n` },
			["good.yaml", "tiny.yaml"],
		);
		expect(result.code).toBe(0);
		expect(result.stdout).toBe(
			[
				'good.yaml: valid, job "shop", 4 targets (request 3, browser 1), 1 duplicate, 0 skipped rows, est. 11 credits (request 6, browser 5), 1 warning',
				'tiny.yaml: valid, job "tiny", 1 target (auto 1), 0 duplicates, 0 skipped rows, est. 2–6 credits (auto 2–6)',
				"",
			].join("\n"),
		);
		expect(result.stderr).toMatch(/^good\.yaml:8:5 warning: duplicate target https:\/\/shop\.example\/a: /);
	});

	it("a duplicate written with a password (user:pass@) is warned about with the row numbers, never the password", async () => {
		const files = {
			"creds.yaml": [
				"targets:",
				"  - HTTPS://bob:pw-one@Shop.Example:443/a/./b/../c%7e?x#f",
				"sources:",
				"  - urls.txt",
			].join("\n"),
			"urls.txt": "https://carol:pw-two@shop.example/a/c~?x\n",
		};
		for (const argv of [["creds.yaml"], ["creds.yaml", "--json"]]) {
			const result = await validate(files, argv);
			expect(result.code).toBe(0);
			expect(result.stdout + result.stderr).not.toMatch(/pw-one|pw-two/);
		}
		const result = await validate(files, ["creds.yaml"]);
		expect(result.stderr).toMatch(
			/^urls\.txt:1:1 warning: duplicate target https:\/\/\*\*\*@shop\.example\/a\/c~\?x: .* at creds\.yaml:2 \(HTTPS:\/\/\*\*\*@Shop/m,
		);
	});

	it("a regex too long to compile is one short line at its file:line:col, not the whole pattern quoted back, refused before RE2 compiles it", async () => {
		const huge = "(?:ab|cd)".repeat(300_000);
		const files = {
			"huge.yaml": [
				"targets: [https://shop.example/a]",
				"extract:",
				`  t: {regex: '${huge}'}`,
				`  u: {css: h1, pattern: '${huge}'}`,
				"crawl:",
				`  include: ['${huge}']`,
			].join("\n"),
		};
		const result = await validate(files, ["huge.yaml"]);
		expect(result.code).toBe(2);
		const lines = result.stderr.trimEnd().split("\n");
		expect(lines.map((line) => line.split(" ", 2).join(" "))).toEqual([
			"huge.yaml:3:14 extract.t.regex:",
			"huge.yaml:4:25 extract.u.pattern:",
			"huge.yaml:6:13 crawl.include[0]:",
			"huge.yaml: invalid,",
		]);
		for (const line of lines) {
			expect(line.length).toBeLessThan(500);
		}
		expect(lines[0]).toMatch(
			/does not compile: too long \(2,700,000 characters, more than the 262,144 a job file's regex may have\)$/,
		);
	});

	it("a target URL longer than 64 KiB in the job file is refused at its file:line:col, quoted short", async () => {
		const long = `${U}/p?q=${"x".repeat(70_000)}`;
		const result = await validate({ "long.yaml": `name: long\ntargets:\n  - ${U}/a\n  - ${long}\n` }, ["long.yaml"]);
		expect(result.code).toBe(2);
		const [first] = result.stderr.split("\n");
		expect(first).toMatch(
			/^long\.yaml:4:5 .*invalid URL format \(70,025 characters, more than the 65,536 a target URL may have; got "https/,
		);
		expect(first!.length).toBeLessThan(300);
	});

	it("a job whose only problems are in its source is named by its job file, not the source's (line and --json)", async () => {
		const files = {
			"shop.yaml": "sources:\n  - file: products.csv\n    column: url\n    id_column: sku\n",
			"products.csv": `sku,url\nbad id!,${U}/a\n`,
		};
		const result = await validate(files, ["shop.yaml"]);
		expect(result.code).toBe(2);
		expect(result.stderr).toMatch(/^products\.csv:2:1 sku: "bad id!" is not a usable id/);
		expect(result.stderr.trimEnd().split("\n").at(-1)).toBe("shop.yaml: invalid, 1 problem");
		const json = JSON.parse((await validate(files, ["shop.yaml", "--json"])).stdout) as {
			jobs: Array<{ file: string; valid: boolean; errors: Array<{ file: string }> }>;
		};
		expect(json.jobs.map((job) => [job.file, job.valid, job.errors[0]?.file])).toEqual([
			["shop.yaml", false, "products.csv"],
		]);
	});

	it("invalid jobs: exit 2, every problem as file:line:col on stderr, valid ones still summarised", async () => {
		const result = await validate(
			{
				"bad.yaml": `concurency: 2\ntargets:\n  - shop.example/a\nsources:\n  - urls.txt\n`,
				"urls.txt": `${U}/ok\nnope\n`,
				"good.yaml": `targets: [${U}/x]\n`,
			},
			["bad.yaml", "good.yaml", "missing.yaml"],
		);
		expect(result.code).toBe(2);
		expect(result.stderr).toBe(
			[
				'bad.yaml:1:1 concurency: unknown key; did you mean "concurrency"?',
				'bad.yaml:3:5 targets[0]: invalid URL format (it needs the http:// or https:// prefix; got "shop.example/a")',
				'urls.txt:2:1 invalid URL format (it needs the http:// or https:// prefix; got "nope")',
				"bad.yaml: invalid, 3 problems",
				"missing.yaml:1:1 cannot read the job file: no such file",
				"missing.yaml: invalid, 1 problem",
				"",
			].join("\n"),
		);
		expect(result.stdout).toBe(
			'good.yaml: valid, job "good", 1 target (auto 1), 0 duplicates, 0 skipped rows, est. 2–6 credits (auto 2–6)\n',
		);
	});

	it("expands ${VAR} from the command's environment", async () => {
		const files = { "env.yaml": "targets: ['${SITE}/a']\n" };
		expect((await validate(files, ["env.yaml"], { SITE: U })).code).toBe(0);
		const unset = await validate(files, ["env.yaml"]);
		expect(unset.code).toBe(2);
		expect(unset.stderr).toContain("env.yaml:1:12 targets[0]: environment variable SITE is not set\n");
	});

	it("--json prints machine-readable results, problems included", async () => {
		const result = await validate({ "good.yaml": good, "urls.txt": `${U}/c\n`, "bad.yaml": "targets: [nope]\n" }, [
			"good.yaml",
			"bad.yaml",
			"--json",
		]);
		expect(result.code).toBe(2);
		expect(result.stderr).toBe("");
		const output = JSON.parse(result.stdout);
		expect(output.valid).toBe(false);
		expect(output.jobs[0]).toMatchObject({
			file: "good.yaml",
			valid: true,
			name: "shop",
			targets: 3,
			inline_targets: 3,
			duplicates: 1,
			skipped_rows: 0,
			by_mode: { request: 2, browser: 1, auto: 0 },
			credits: { min: 9, max: 9 },
			credits_by_mode: { request: { min: 4, max: 4 }, browser: { min: 5, max: 5 }, auto: { min: 0, max: 0 } },
			errors: [],
		});
		expect(output.jobs[0].warnings).toHaveLength(1);
		expect(output.jobs[1]).toMatchObject({ file: "bad.yaml", valid: false, name: null, targets: null });
		expect(output.jobs[1].errors).toEqual([
			{
				file: "bad.yaml",
				line: 1,
				col: 11,
				severity: "error",
				path: "targets[0]",
				message: 'targets[0]: invalid URL format (it needs the http:// or https:// prefix; got "nope")',
			},
		]);
	});

	it("--no-sources checks the job file only", async () => {
		const result = await validate({ "job.yaml": `targets: [${U}/a]\nsources: [urls.txt]\n` }, [
			"job.yaml",
			"--no-sources",
		]);
		expect(result.code).toBe(0);
		expect(result.stdout).toBe('job.yaml: valid, job "job", 1 inline target (sources not read)\n');
	});

	it("needs at least one job (usage error, exit 2) and explains itself in --help", async () => {
		expect((await validate({}, [])).code).toBe(2);
		const help = await validate({}, ["--help"]);
		expect(help.code).toBe(0);
		expect(help.stdout).toContain("Usage: scrapejob validate [options] <jobs...>");
		expect(help.stdout).toContain("sends no request at all");
		expect(help.stdout).toContain("Exit codes: 0 every job is valid · 2 some job has problems");
	});
});

describe("scrapejob schema", () => {
	it("prints the JSON Schema", async () => {
		const dir = await makeTempDir();
		const { ctx, stdout } = createTestContext(dir);
		expect(await main(["schema"], ctx)).toBe(0);
		expect(stdout.text).toBe(jobJsonSchemaText());
		expect(JSON.parse(stdout.text).title).toBe("scrapejob job file");
	});

	it("has help that says where the schema ships and how to use it", async () => {
		const dir = await makeTempDir();
		const { ctx, stdout } = createTestContext(dir);
		expect(await main(["schema", "--help"], ctx)).toBe(0);
		expect(stdout.text).toContain("jobs/job.schema.json");
		expect(stdout.text).toContain("# yaml-language-server: $schema=./job.schema.json");
	});

	it("both commands are registered", async () => {
		const { ctx } = createTestContext("/");
		const names = (await createProgram(ctx)).commands.map((command) => command.name());
		expect(names).toEqual(expect.arrayContaining(["validate", "schema"]));
	});
});
