import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { demoProductBrand, demoProductPrice, demoProductTags } from "../../src/emulator/index.js";
import { onlyRunDir, readCsv, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

const FAST_RETRY = "retry:\n  attempts: 2\n  backoff_ms: 5\n  max_backoff_ms: 10\n";

async function run(job: string, out: string, extra: string[] = []) {
	return runCli(["run", job, "--out", out, "--quiet", ...extra], { env: service!.env });
}

describe("extract: fields from the demo shop, end to end through the emulator", () => {
	it("reads every locator and type, lists and nulls; data in JSONL, one CSV column per field in declared order", async () => {
		service = await startTestService();
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"fields",
			`name: fields
${FAST_RETRY}defaults:
  mode: request
targets:
  - ${site}/product/3
  - ${site}/page/1
extract:
  title: h1
  price: {css: .price, type: number}
  price_whole: {css: .price, type: integer}
  image: {css: img.main, attr: src, type: url}
  tags: {css: .tag, all: true}
  sku: {regex: "SKU: DEMO-(\\\\d+)"}
  sku_number: {regex: "SKU: DEMO-(\\\\d+)", type: integer}
  brand: {jsonld: brand.name}
  offer_price: {jsonld: offers.price, type: number}
  description: {meta: description}
  heading_html: {css: article h1, type: html}
  links: {css: "header a", attr: href, all: true, type: url}
  missing: {css: .no-such-thing}
output:
  formats: [jsonl, csv]
  content: none
`,
		);
		const result = await run(job, out);
		expect(result.stderr).toBe("");
		expect(result.code).toBe(0);
		const runDir = onlyRunDir(out, "fields");
		const records = readRecords(runDir);
		const product = records.find((record) => record.url.endsWith("/product/3"))!;
		const price = Number(demoProductPrice(3));
		expect(product.content).toBeUndefined();
		expect(product.content_path).toBeNull();
		expect(product.data).toEqual({
			title: "Product 3",
			price,
			price_whole: Math.trunc(price),
			image: `${site}/images/product-3.jpg`,
			tags: demoProductTags(3),
			sku: "00003",
			sku_number: 3,
			brand: demoProductBrand(3),
			offer_price: price,
			description: `Product 3 from the demo shop, by ${demoProductBrand(3)}.`,
			heading_html: "<h1>Product 3</h1>",
			links: [`${site}/`],
			missing: null,
		});
		expect(demoProductTags(3).length).toBeGreaterThan(1);
		const generic = records.find((record) => record.url.endsWith("/page/1"))!;
		expect(generic.data).toMatchObject({ title: "Page 1", price: null, tags: null, brand: null, description: null });

		const header = readFileSync(join(runDir, "results.csv"), "utf8").split("\r\n")[0]!.split(",");
		const afterContentPath = header.slice(header.indexOf("content_path") + 1);
		expect(afterContentPath).toEqual([
			"title",
			"price",
			"price_whole",
			"image",
			"tags",
			"sku",
			"sku_number",
			"brand",
			"offer_price",
			"description",
			"heading_html",
			"links",
			"missing",
			"content_hash",
			"change",
			"depth",
			"parent",
			"useful",
			"useless_reason",
		]);
		const rows = readCsv(runDir);
		const row = rows.find((r) => r.url?.endsWith("/product/3"))!;
		expect(row.tags).toBe(demoProductTags(3).join(" | "));
		expect(Number(row.price)).toBe(price);
		expect(row.missing).toBe("");
		expect(rows.find((r) => r.url?.endsWith("/page/1"))!.price).toBe("");

		const summary = readSummary(runDir);
		expect(summary.extract?.fields.price).toEqual({ filled: 1, fill_rate: 0.5, required: false });
		expect(summary.extract?.fields.title?.fill_rate).toBe(1);
		expect(summary.extract?.below_min_fill).toEqual([]);
	});

	it("a target's or a source's own extract overrides the job's field of that name and adds columns", async () => {
		service = await startTestService();
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		writeFileSync(join(dir, "urls.txt"), `${site}/product/5\n`);
		const job = writeJob(
			dir,
			"over",
			`name: over
${FAST_RETRY}defaults:
  mode: request
  extract:
    brand: {jsonld: brand.name}
extract:
  name: h1
targets:
  - url: ${site}/product/4
    extract:
      name: {css: .price, type: number}
sources:
  - file: urls.txt
    extract:
      stock: {regex: "Stock: (\\\\d+)", type: integer}
`,
		);
		const result = await run(job, out);
		expect(result.code).toBe(0);
		const runDir = onlyRunDir(out, "over");
		const records = readRecords(runDir);
		expect(records.find((r) => r.url.endsWith("/product/4"))!.data).toEqual({
			name: Number(demoProductPrice(4)),
			brand: demoProductBrand(4),
		});
		expect(records.find((r) => r.url.endsWith("/product/5"))!.data).toEqual({
			name: "Product 5",
			brand: demoProductBrand(5),
			stock: (5 * 13) % 50,
		});
		const header = readFileSync(join(runDir, "results.csv"), "utf8").split("\r\n")[0]!;
		expect(header).toContain("content_path,name,brand,stock,content_hash");
	});

	it("carry copies CSV source columns into each record and the CSV; id_column makes the user's SKU the id", async () => {
		service = await startTestService();
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		writeFileSync(
			join(dir, "products.csv"),
			`sku,url,category,note\nA-1,${site}/product/1,tools,"first, with comma"\nB-2,${site}/product/2,garden,\n`,
		);
		const job = writeJob(
			dir,
			"carry",
			`name: carry
${FAST_RETRY}defaults:
  mode: request
sources:
  - file: products.csv
    column: url
    id_column: sku
carry: [category, note]
extract:
  price: {css: .price, type: number}
output:
  content: files
`,
		);
		const result = await run(job, out);
		expect(result.stderr).toBe("");
		expect(result.code).toBe(0);
		const runDir = onlyRunDir(out, "carry");
		const records = readRecords(runDir) as unknown as Array<Record<string, unknown>>;
		const first = records.find((r) => r.id === "A-1")!;
		expect(first).toMatchObject({ category: "tools", note: "first, with comma", content_path: "pages/A-1.html" });
		expect(first.data).toEqual({ price: Number(demoProductPrice(1)) });
		expect(records.find((r) => r.id === "B-2")).toMatchObject({ category: "garden", note: "" });
		const header = readFileSync(join(runDir, "results.csv"), "utf8").split("\r\n")[0]!;
		expect(header).toContain("content_path,price,category,note,content_hash");
		expect(readCsv(runDir).find((r) => r.id === "A-1")).toMatchObject({ category: "tools", note: "first, with comma" });
	});

	it("a required field below extract_checks.min_fill exits 1 and is named in the summary and on the terminal", async () => {
		service = await startTestService();
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const yaml = (minFill: number) => `name: fill
${FAST_RETRY}defaults:
  mode: request
targets:
  - ${site}/product/1
  - ${site}/product/2
  - ${site}/product/3
  - ${site}/page/1
extract:
  name: {css: h1, required: true}
  price: {css: .price, type: number, required: true}
  brand: {jsonld: brand.name}
extract_checks:
  min_fill: ${minFill}
`;
		const failing = await runCli(["run", writeJob(dir, "fill", yaml(0.8)), "--out", out], { env: service.env });
		expect(failing.code).toBe(1);
		expect(failing.stdout).toMatch(/checks\s+FAILED: price filled below min_fill 80%/);
		const runDir = onlyRunDir(out, "fill");
		const summary = readSummary(runDir);
		expect(summary.targets.by_status.ok).toBe(4);
		expect(summary.extract).toEqual({
			records: 4,
			fields: {
				name: { filled: 4, fill_rate: 1, required: true },
				price: { filled: 3, fill_rate: 0.75, required: true },
				brand: { filled: 3, fill_rate: 0.75, required: false },
			},
			min_fill: 0.8,
			below_min_fill: ["price"],
		});

		const out2 = join(dir, "out2");
		const passing = await runCli(["run", writeJob(dir, "fill", yaml(0.75)), "--out", out2, "--quiet"], {
			env: service.env,
		});
		expect(passing.code).toBe(0);
		expect(readSummary(onlyRunDir(out2, "fill")).extract?.below_min_fill).toEqual([]);
	});

	it("service-side extract_scheme and ai_enhance with delivery: json land in data and get CSV columns", async () => {
		service = await startTestService();
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"service",
			`name: service
${FAST_RETRY}defaults:
  mode: request
  delivery: json
  include_content: true
  ai_enhance: true
  ai_source: markdown
  ai_prompt: Extract the product name and price
  extract_scheme:
    - {label: title, type: content, selector: h1}
    - {label: image, type: attribute, selector: img.main, attribute: src}
    - {label: on_sale, type: exists, selector: ".tag"}
    - {label: tag_count, type: count, selector: ".tag"}
    - {label: sku, type: content, regex: "SKU: (DEMO-\\\\d+)"}
    - label: specs
      type: nest
      selector: ul.specs li
      fields:
        - {label: text, type: content}
extract:
  price: {css: .price, type: number}
targets:
  - ${site}/product/3
`,
		);
		const result = await run(job, out);
		expect(result.stderr).toBe("");
		expect(result.code).toBe(0);
		const runDir = onlyRunDir(out, "service");
		const [record] = readRecords(runDir);
		expect(record!.data).toMatchObject({
			price: Number(demoProductPrice(3)),
			title: "Product 3",
			image: "/images/product-3.jpg",
			on_sale: true,
			tag_count: demoProductTags(3).length,
			sku: "DEMO-00003",
			ai_data: { placeholder: true, prompt: "Extract the product name and price", source: "markdown" },
		});
		expect(record!.data!.specs).toEqual([{ text: "SKU: DEMO-00003" }, { text: `Stock: ${(3 * 13) % 50}` }]);
		const header = readFileSync(join(runDir, "results.csv"), "utf8").split("\r\n")[0]!;
		expect(header).toContain("content_path,price,title,image,on_sale,tag_count,sku,specs,ai_data,content_hash");
		const row = readCsv(runDir)[0]!;
		expect(row.on_sale).toBe("true");
		expect(JSON.parse(row.ai_data!)).toMatchObject({ placeholder: true });
		// What was sent: the rules as written, never the local `extract:` fields.
		const sent = service.emulator.ledger.entries.find((entry) => entry.params?.url !== undefined);
		expect(sent?.params).toMatchObject({ delivery: "json" });
		expect(sent?.params).not.toHaveProperty("extract");
	});

	it("service-side results of an async (task) fetch land in data too", async () => {
		service = await startTestService();
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"task",
			`name: task
${FAST_RETRY}task_timeout_ms: 60000
defaults:
  mode: request
  async: true
  delivery: json
  include_content: true
  extract_scheme: [{label: heading, type: content, selector: h1}]
extract:
  price: {css: .price, type: number}
targets:
  - ${site}/product/7
`,
		);
		const result = await runCli(["run", job, "--out", out, "--quiet", "--task-poll-ms", "5"], { env: service.env });
		expect(result.stderr).toBe("");
		expect(result.code).toBe(0);
		const [record] = readRecords(onlyRunDir(out, "task"));
		expect(record!.task_id).not.toBeNull();
		expect(record!.data).toMatchObject({ heading: "Product 7", price: Number(demoProductPrice(7)) });
	});

	it("--resume appends under the same CSV header, and fill rates count the records of both sessions", async () => {
		service = await startTestService({ concurrency: 1, credits: 5 });
		const site = service.site.url;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"resume",
			`name: resume
${FAST_RETRY}defaults:
  mode: request
targets:
  - ${site}/product/1
  - ${site}/product/2
  - ${site}/page/1
  - ${site}/product/3
extract:
  price: {css: .price, type: number, required: true}
extract_checks:
  min_fill: 0.7
`,
		);
		// 5 credits pay for two fetches (2 each): the third is refused with 402 and the run stops.
		expect((await run(job, out)).code).toBe(3);
		const runDir = onlyRunDir(out, "resume");
		expect(readRecords(runDir)).toHaveLength(2);
		service.emulator.setCredits(100);
		const resumed = await run(job, out, ["--resume"]);
		expect(resumed.stderr).toBe("");
		// 3 of 4 filled: 0.75 passes 0.7 only if the first session's two filled records are counted.
		expect(resumed.code).toBe(0);
		const lines = readFileSync(join(runDir, "results.csv"), "utf8").trimEnd().split("\r\n");
		expect(lines.filter((line) => line.startsWith("id,"))).toHaveLength(1);
		expect(lines[0]).toContain("content_path,price,content_hash");
		expect(lines).toHaveLength(5);
		expect(readCsv(runDir).map((row) => row.price)).toEqual(
			expect.arrayContaining([String(Number(demoProductPrice(1))), String(Number(demoProductPrice(3))), ""]),
		);
		expect(readSummary(runDir).extract).toMatchObject({
			records: 4,
			fields: { price: { filled: 3 } },
			below_min_fill: [],
		});
	});
});
