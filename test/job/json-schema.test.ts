import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SCRAPE_PARAM_NAMES } from "../../src/common/index.js";
import { JOB_SCHEMA_FILE, jobJsonSchema, jobJsonSchemaText, loadJob } from "../../src/job/index.js";
import { SCRAPE_OPTION_NAMES } from "../../src/job/schema.js";

const root = join(import.meta.dirname, "..", "..");

describe("job JSON Schema", () => {
	it(`the committed ${JOB_SCHEMA_FILE} is the generated one`, async () => {
		const path = join(root, JOB_SCHEMA_FILE);
		// Regenerate with: SCRAPEJOB_UPDATE_SCHEMA=1 npx vitest run test/job/json-schema.test.ts
		if (process.env.SCRAPEJOB_UPDATE_SCHEMA === "1") await writeFile(path, jobJsonSchemaText());
		const committed = await readFile(path, "utf8");
		expect(committed, "run: SCRAPEJOB_UPDATE_SCHEMA=1 npx vitest run test/job/json-schema.test.ts").toBe(
			jobJsonSchemaText(),
		);
	});

	it("is draft-07, closed to unknown keys, and documents defaults", () => {
		const schema = jobJsonSchema() as {
			$schema: string;
			additionalProperties: boolean;
			properties: Record<string, { default?: unknown; properties?: Record<string, { default?: unknown }> }>;
		};
		expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#");
		expect(schema.additionalProperties).toBe(false);
		expect(schema.properties.concurrency?.default).toBe("auto");
		expect(schema.properties.on_bad_row?.default).toBe("fail");
		expect(schema.properties.task_timeout_ms?.default).toBe(600_000);
		expect(schema.properties.retry?.properties?.attempts?.default).toBe(5);
		expect(schema.properties.retry?.properties?.backoff_ms?.default).toBe(1000);
		expect(schema.properties.retry?.properties?.max_backoff_ms?.default).toBe(60_000);
	});

	it("offers every documented scrape parameter but url, in defaults and on targets", () => {
		expect([...SCRAPE_OPTION_NAMES].sort()).toEqual(SCRAPE_PARAM_NAMES.filter((name) => name !== "url").sort());
		const schema = jobJsonSchema() as {
			properties: {
				defaults: { properties: Record<string, unknown> };
				targets: { items: { anyOf: Array<{ properties?: Record<string, unknown> }> } };
			};
		};
		// Beside the service's parameters, defaults and targets may carry a browser_session and extract.
		expect(Object.keys(schema.properties.defaults.properties).sort()).toEqual(
			["browser_session", "extract", ...SCRAPE_OPTION_NAMES].sort(),
		);
		const targetObject = schema.properties.targets.items.anyOf.find((option) => option.properties);
		expect(Object.keys(targetObject?.properties ?? {}).sort()).toEqual(
			["browser_session", "extract", "id", "url", ...SCRAPE_OPTION_NAMES].sort(),
		);
	});
});

describe("example jobs in jobs/", () => {
	it("each carries the schema line and validates", async () => {
		const dir = join(root, "jobs");
		const files = (await readdir(dir)).filter((name) => name.endsWith(".yaml"));
		expect(files).toEqual(expect.arrayContaining(["demo.yaml", "example-shop.yaml"]));
		for (const name of files) {
			const text = await readFile(join(dir, name), "utf8");
			expect(text.split("\n")[0], name).toBe("# yaml-language-server: $schema=./job.schema.json");
			const { job } = await loadJob(join(dir, name), {
				cwd: root,
				env: { SCRAPEJOB_DEMO_SITE: "http://127.0.0.1:8080" },
			});
			expect(job.targets.length, name).toBeGreaterThan(0);
		}
	});

	it("the demo has ~40 targets on the demo site, mixing modes, with one screenshot and a script page", async () => {
		const { job, counts } = await loadJob(join(root, "jobs", "demo.yaml"), {
			cwd: root,
			env: { SCRAPEJOB_DEMO_SITE: "http://127.0.0.1:8080" },
		});
		expect(job.name).toBe("demo");
		expect(counts?.targets).toBeGreaterThanOrEqual(35);
		expect(counts?.targets).toBeLessThanOrEqual(45);
		expect(job.targets.every((t) => t.url.startsWith("http://127.0.0.1:8080/"))).toBe(true);
		expect(counts?.byMode.request).toBeGreaterThan(0);
		expect(counts?.byMode.browser).toBeGreaterThan(0);
		expect(counts?.byMode.auto).toBeGreaterThan(0);
		expect(job.targets.filter((t) => t.params.screenshot === true).map((t) => t.params.mode)).toEqual(["browser"]);
		expect(job.targets.map((t) => t.url)).toEqual(
			expect.arrayContaining(["http://127.0.0.1:8080/app", "http://127.0.0.1:8080/slow?ms=1500"]),
		);
	});

	it("the shop example uses CSV and text sources, and counts its skipped row and duplicate", async () => {
		const { job, counts, warnings } = await loadJob(join(root, "jobs", "example-shop.yaml"), {
			cwd: root,
			env: {},
		});
		expect(job.sources.map((s) => [s.kind, s.displayPath])).toEqual([
			["csv", "jobs/examples/shop-products.csv"],
			["text", "jobs/examples/shop-categories.txt"],
			["text", "jobs/examples/shop-brands.txt"],
		]);
		expect(counts).toMatchObject({ targets: 13, duplicates: 1, skippedRows: 1 });
		expect(warnings.map((w) => `${w.file}:${w.line}`)).toEqual([
			"jobs/examples/shop-products.csv:4",
			"jobs/examples/shop-products.csv:6",
		]);
	});
});
