import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { demoProductBrand, demoProductPrice, demoProductTags } from "../../src/emulator/index.js";
import { isRunFolderName, readCsv, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { readDoc } from "../helpers/manual.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

/** An example of the extraction guide as printed there: the yaml block after its marker comment. */
function readmeExample(name = "extract-example"): string {
	const readme = readDoc("docs/guides/extraction.md");
	const marker = readme.indexOf(`<!-- ${name}`);
	expect(marker).toBeGreaterThan(-1);
	const start = readme.indexOf("```yaml\n", marker) + "```yaml\n".length;
	return readme.slice(start, readme.indexOf("```", start));
}

it("the extraction guide's example runs as printed: ids from sku, carried category, typed fields, the fill check", async () => {
	service = await startTestService();
	const site = service.site.url;
	const dir = tempDir();
	const out = join(dir, "out");
	writeFileSync(
		join(dir, "products.csv"),
		[
			"sku,url,category",
			...[1, 2, 3].map((n) => `P-${n},${site}/product/${n},cat-${n}`),
			`P-4,${site}/page/1,misc`,
		].join("\n"),
	);
	const job = writeJob(dir, "shop-data", readmeExample());
	const result = await runCli(["run", job, "--out", out], { env: service.env });
	const runs = readdirSync(join(out, "shop-data")).filter(isRunFolderName);
	const runDir = join(out, "shop-data", runs[0]!);
	const records = readRecords(runDir) as unknown as Array<Record<string, unknown>>;
	expect(records.map((record) => record.id).sort()).toEqual(["P-1", "P-2", "P-3", "P-4"]);
	expect(records.find((record) => record.id === "P-2")).toMatchObject({
		category: "cat-2",
		content_path: null,
		data: {
			name: "Product 2",
			price: Number(demoProductPrice(2)),
			image: `${site}/images/product-2.jpg`,
			tags: demoProductTags(2).length > 0 ? demoProductTags(2) : null,
			sku_number: 2,
			brand: demoProductBrand(2),
			description: `Product 2 from the demo shop, by ${demoProductBrand(2)}.`,
		},
	});
	expect(readCsv(runDir).find((row) => row.id === "P-1")?.category).toBe("cat-1");
	// /page/1 has no price: 3 of 4 is below 0.95, so the run exits 1 and says which field.
	expect(readSummary(runDir).extract?.below_min_fill).toEqual(["price"]);
	expect(result.stdout).toContain("checks     FAILED: price filled below min_fill 95%");
	expect(result.code).toBe(1);
});

it("the extraction guide's service-side example runs as printed (its URL pointed at the demo site)", async () => {
	service = await startTestService();
	const dir = tempDir();
	const out = join(dir, "out");
	const yaml = readmeExample("extract-service-example").replaceAll("https://shop.example", service.site.url);
	const result = await runCli(["run", writeJob(dir, "service-side", yaml), "--out", out, "--quiet"], {
		env: service.env,
	});
	expect(result.stderr).toBe("");
	expect(result.code).toBe(0);
	const runs = readdirSync(join(out, "service-side")).filter(isRunFolderName);
	const [record] = readRecords(join(out, "service-side", runs[0]!));
	expect(record!.data).toMatchObject({
		title: "Product 1",
		image: "/images/product-1.jpg",
		in_stock: false,
		specs: [{ text: expect.stringMatching(/^SKU: DEMO-00001$/) }, { text: expect.stringMatching(/^Stock: /) }],
		ai_data: { placeholder: true, source: "markdown" },
	});
});
