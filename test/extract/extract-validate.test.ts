import { describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { createTestContext, makeTempDir, writeFiles } from "../job/helpers.js";

const U = "https://shop.example";

async function cli(files: Record<string, string>, argv: string[]) {
	const dir = await makeTempDir();
	await writeFiles(dir, files);
	const { ctx, stdout, stderr } = createTestContext(dir, {});
	const code = await main(argv, ctx);
	return { code, stdout: stdout.text, stderr: stderr.text };
}

describe("validate: extract, extract_checks, carry, id_column", () => {
	it("compiles every selector and regex and reports a bad one at its file:line:col", async () => {
		const job = [
			`targets: [${U}/a]`,
			"extract:",
			"  ok: h1",
			"  broken: 'div[class='",
			"  price: {css: 'p:no-such-pseudo', type: number}",
			'  sku: {regex: "SKU-(\\\\d+"}',
			"  two: {css: h1, meta: description}",
			"  none: {type: number}",
			"  word: {css: p, type: words}",
			"  url: h1",
			"  bad name: h1",
			"  open: 'a['",
			"defaults:",
			"  extract:",
			"    nested: {jsonld: 'brand..name'}",
			"    tagged: {meta: description, all: true}",
		].join("\n");
		const result = await cli({ "job.yaml": job }, ["validate", "job.yaml"]);
		expect(result.code).toBe(2);
		const lines = result.stderr.trim().split("\n");
		expect(lines).toEqual([
			'job.yaml:4:11 extract.broken: CSS selector "div[class=" does not compile: Attribute selector didn\'t terminate',
			expect.stringMatching(/^job\.yaml:5:16 extract\.price\.css: CSS selector "p:no-such-pseudo" does not compile: /),
			'job.yaml:6:16 extract.sku.regex: regex "SKU-(\\\\d+" does not compile: missing closing ): `SKU-(\\d+`',
			"job.yaml:7:24 extract.two.meta: has css and meta: a field reads one locator (make two fields)",
			"job.yaml:8:9 extract.none: needs one of css, regex, jsonld, meta",
			'job.yaml:9:24 extract.word.type: must be one of "text", "number", "integer", "url", "html" (got "words")',
			'job.yaml:10:3 extract.url: "url" is a record field already: choose another name (it would be a second column of that name)',
			expect.stringMatching(/^job\.yaml:11:3 extract\.bad name: "bad name": names are 1–64 letters, digits or '_'/),
			'job.yaml:12:9 extract.open: CSS selector "a[" does not compile: Expected name, found end of selector',
			'job.yaml:15:22 defaults.extract.nested.jsonld: JSON-LD path "brand..name" has an empty segment (write it like brand.name)',
			"job.yaml:16:38 defaults.extract.tagged.all: `all` applies to css and regex fields (not meta)",
			"job.yaml: invalid, 11 problems",
		]);
	});

	it("carry and id_column: checked against the job and against each CSV source's header", async () => {
		const noCsv = await cli({ "job.yaml": `targets: [${U}/a]\ncarry: [sku, id]\n` }, ["validate", "job.yaml"]);
		expect(noCsv.code).toBe(2);
		expect(noCsv.stderr).toContain('job.yaml:2:14 carry[1]: "id" is a record field already');
		expect(noCsv.stderr).toContain("job.yaml:2:8 carry: `carry` copies columns of CSV sources, and this job has none");

		const files = {
			"job.yaml": [
				"sources:",
				"  - {file: a.csv, column: url, id_column: sku}",
				"  - {file: b.txt, id_column: sku}",
				"carry: [categry]",
			].join("\n"),
			"a.csv": `url,sku,category\n${U}/1,A-1,x\n${U}/2,bad id!,y\n${U}/3,a-1,z\n`,
			"b.txt": `${U}/4\n`,
		};
		const result = await cli(files, ["validate", "job.yaml"]);
		expect(result.code).toBe(2);
		expect(result.stderr).toContain("job.yaml:3:30 sources[1].id_column: `id_column` applies to CSV sources only");

		files["job.yaml"] = ["sources:", "  - {file: a.csv, column: url, id_column: sku}", "carry: [categry]"].join("\n");
		const missing = await cli(files, ["validate", "job.yaml"]);
		expect(missing.code).toBe(2);
		expect(missing.stderr).toContain('a.csv:1:1 carried column "categry" not found in the header');
		expect(missing.stderr).toContain('did you mean "category"?');

		files["job.yaml"] = ["sources:", "  - {file: a.csv, column: url, id_column: sku}", "carry: [category]"].join("\n");
		const rows = await cli(files, ["validate", "job.yaml"]);
		expect(rows.code).toBe(2);
		expect(rows.stderr).toContain('a.csv:3:1 sku: "bad id!" is not a usable id');
		expect(rows.stderr).toContain('a.csv:4:1 duplicate id "a-1"');
	});

	it("extract_checks.min_fill needs a required field to check", async () => {
		const job = `targets: [${U}/a]\nextract:\n  name: h1\nextract_checks:\n  min_fill: 0.9\n`;
		const result = await cli({ "job.yaml": job }, ["validate", "job.yaml"]);
		expect(result.code).toBe(2);
		expect(result.stderr).toContain(
			"job.yaml:5:13 extract_checks.min_fill: min_fill checks the fields marked `required: true`, and no extract field is",
		);
		const fixed = job.replace("name: h1", "name: {css: h1, required: true}");
		expect((await cli({ "job.yaml": fixed }, ["validate", "job.yaml"])).code).toBe(0);
	});

	it("run --dry-run shows the columns results.csv will have", async () => {
		const files = {
			"job.yaml": [
				"name: cols",
				"sources:",
				"  - {file: a.csv, column: url, id_column: sku}",
				"carry: [category]",
				"extract:",
				"  name: h1",
				"  price: {css: .price, type: number}",
				"defaults:",
				"  delivery: json",
				"  include_content: true",
				"  extract_scheme: [{label: title, type: content, selector: title}]",
			].join("\n"),
			"a.csv": `url,sku,category\n${U}/1,A-1,x\n`,
		};
		const result = await cli(files, ["run", "job.yaml", "--dry-run"]);
		expect(result.code).toBe(0);
		expect(result.stdout).toContain(
			"cols: results.csv columns: id, url, status, http_status, error, message, mode_requested, mode_used, credits_used, credits_remaining, attempts, task_id, started_at, finished_at, duration_ms, bytes, content_path, name, price, title, category, content_hash, change, depth, parent, useful, useless_reason",
		);
		expect(result.stdout).toMatch(/^A-1\t/m);
	});

	it("extract: with delivery: json needs include_content: true, said where delivery is set", async () => {
		const job = [
			`targets:`,
			`  - ${U}/a`,
			`  - {url: "${U}/b", delivery: raw}`,
			`  - {url: "${U}/c", include_content: true}`,
			`  - {url: "${U}/d", include_content: false}`,
			"defaults:",
			"  delivery: json",
			"extract:",
			"  title: h1",
		].join("\n");
		const result = await cli({ "job.yaml": job }, ["validate", "job.yaml"]);
		expect(result.code).toBe(2);
		const problem =
			"`extract:` reads the page, and with `delivery: json` the service sends it only with `include_content: true`: set it (or use delivery: raw)";
		expect(result.stderr.trim().split("\n")).toEqual([
			`job.yaml:5:54 targets[3].include_content: ${problem}`,
			`job.yaml:7:13 defaults.delivery: ${problem}`,
			"job.yaml: invalid, 2 problems",
		]);
		// A target's own extract under an inherited json delivery is said at its extract.
		const own = ["targets:", `  - url: ${U}/a`, "    extract: {title: h1}", "defaults:", "  delivery: json"].join("\n");
		const ownResult = await cli({ "job.yaml": own }, ["validate", "job.yaml"]);
		expect(ownResult.stderr).toContain(`job.yaml:3:5 targets[0].extract: ${problem}`);
		const fixed = job
			.replace("  delivery: json", "  delivery: json\n  include_content: true")
			.replace("include_content: false", "include_content: true");
		expect((await cli({ "job.yaml": fixed }, ["validate", "job.yaml"])).code).toBe(0);
	});

	it("field, extract_scheme label and carry names: identifiers, not __proto__, unique ignoring case with the record's columns", async () => {
		const job = [
			"sources:",
			"  - {file: a.csv, column: url}",
			'carry: [category, Title, \'=HYPERLINK("http://evil/","x")\', category]',
			"defaults:",
			"  delivery: json",
			"  include_content: true",
			"  extract_scheme:",
			"    - {label: url, type: content, selector: h1}",
			"    - {label: price, type: content, selector: .price}",
			"    - {label: sku, type: content, selector: .sku}",
			"    - {label: sku, type: content, selector: .sku2}",
			"extract:",
			"  __proto__: h1",
			"  constructor: h1",
			"  URL: h1",
			"  title: h1",
			"  Price: .price",
			"  with-dash: h1",
			"targets:",
			`  - url: ${U}/a`,
			"    extract: {TITLE: h2, title: h3}",
		].join("\n");
		const result = await cli({ "job.yaml": job, "a.csv": `url,category,Title\n${U}/1,x,y\n` }, [
			"validate",
			"job.yaml",
		]);
		expect(result.code).toBe(2);
		expect(result.stderr.trim().split("\n")).toEqual([
			'job.yaml:3:19 carry[1]: "Title" is also an extract field as "title": one column cannot hold both (names are unique ignoring case)',
			expect.stringMatching(
				/^job\.yaml:3:26 carry\[2\]: "=HYPERLINK\(\\"http:\/\/evil\/\\",\\"x\\"\)": names are 1–64 letters/,
			),
			'job.yaml:3:60 carry[3]: "category" is carried twice',
			'job.yaml:8:15 defaults.extract_scheme[0].label: "url" is a record field already: choose another name (it would be a second column of that name)',
			'job.yaml:9:15 defaults.extract_scheme[1].label: "price" is also an extract field as "Price": one column cannot hold both (names are unique ignoring case)',
			'job.yaml:11:15 defaults.extract_scheme[3].label: label "sku" is used twice in this extract_scheme',
			'job.yaml:13:3 extract.__proto__: "__proto__" is not allowed as a name (it has a meaning in JavaScript objects)',
			'job.yaml:14:3 extract.constructor: "constructor" is not allowed as a name (it has a meaning in JavaScript objects)',
			'job.yaml:15:3 extract.URL: "URL" is a record field already ("url": names are compared ignoring case): choose another name (it would be a second column of that name)',
			expect.stringMatching(/^job\.yaml:18:3 extract\.with-dash: "with-dash": names are /),
			'job.yaml:21:15 targets[0].extract.TITLE: "TITLE" is also an extract field as "title": one column cannot hold both (names are unique ignoring case)',
			"job.yaml: invalid, 11 problems",
		]);
	});

	it("added_fields, which change tracking writes beside carried columns, is no carried column's name", async () => {
		const job = ["sources:", "  - {file: a.csv, column: url}", "carry: [Added_Fields]"].join("\n");
		const result = await cli({ "job.yaml": job, "a.csv": `url,Added_Fields\n${U}/1,x\n` }, ["validate", "job.yaml"]);
		expect(result.code).toBe(2);
		expect(result.stderr.trim().split("\n")).toEqual([
			'job.yaml:3:9 carry[0]: "Added_Fields" is a record field already ("added_fields": names are compared ignoring case): choose another name (it would be a second column of that name)',
			"job.yaml: invalid, 1 problem",
		]);
	});

	it("ai_data, where ai_enhance writes the service's answer, is no field's or label's name", async () => {
		const job = [
			"defaults:",
			"  delivery: json",
			"  include_content: true",
			"extract:",
			"  ai_data: h1",
			"targets:",
			`  - url: ${U}/a`,
			"    ai_enhance: true",
			"    ai_source: markdown",
			"    extract_scheme: [{label: AI_DATA, type: content, selector: h1}]",
		].join("\n");
		const result = await cli({ "job.yaml": job }, ["validate", "job.yaml"]);
		expect(result.code).toBe(2);
		expect(result.stderr.trim().split("\n")).toEqual([
			`job.yaml:5:3 extract.ai_data: "ai_data" is also the column of ai_enhance's output: one column cannot hold both (names are unique ignoring case)`,
			`job.yaml:10:30 targets[0].extract_scheme[0].label: "AI_DATA" is also the column of ai_enhance's output as "ai_data": one column cannot hold both (names are unique ignoring case)`,
			"job.yaml: invalid, 2 problems",
		]);
	});
});
