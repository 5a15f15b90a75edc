import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

function job(site: string, bom: boolean | null): string {
	return [
		"name: shop",
		"concurrency: 1",
		"defaults:",
		"  mode: request",
		"output:",
		"  formats: [jsonl, csv]",
		bom === null ? "" : `  csv_bom: ${bom}`,
		"targets:",
		...[1, 2, 3, 4].map((id) => `  - url: ${site}/product/${id}\n    id: p${id}`),
		"",
	].join("\n");
}

function occurrences(haystack: Buffer, needle: Buffer): number {
	let count = 0;
	for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + 1)) count += 1;
	return count;
}

describe("output.csv_bom", () => {
	it("starts results.csv with one UTF-8 BOM, and a resumed run does not write a second", async () => {
		service = await startTestService({ credits: 4, concurrency: 1 });
		const dir = tempDir();
		const out = join(dir, "out");
		const path = writeJob(dir, "shop", job(service.site.url, true));
		const first = await runCli(["run", path, "--out", out, "--quiet", "--json"], { env: service.env });
		expect(first.code).toBe(3); // 402 after two fetches: the run stops, incomplete
		const runDir = (JSON.parse(first.stdout) as { run_dir: string }).run_dir;
		const before = readFileSync(join(runDir, "results.csv"));
		expect(before.subarray(0, 3)).toEqual(BOM);

		service.emulator.setCredits(100);
		const resumed = await runCli(["run", path, "--out", out, "--quiet", "--resume"], { env: service.env });
		expect(resumed.code).toBe(0);
		const csv = readFileSync(join(runDir, "results.csv"));
		expect(csv.subarray(0, 3)).toEqual(BOM);
		expect(occurrences(csv, BOM)).toBe(1);
		const rows = parse(csv, { columns: true, bom: true }) as Array<Record<string, string>>;
		expect(rows.map((row) => row.id).sort()).toEqual(["p1", "p2", "p3", "p4"]);
	});

	it("is off by default: no BOM", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const path = writeJob(dir, "shop", job(service.site.url, null));
		const run = await runCli(["run", path, "--out", out, "--quiet", "--json"], { env: service.env });
		expect(run.code).toBe(0);
		const csv = readFileSync(join((JSON.parse(run.stdout) as { run_dir: string }).run_dir, "results.csv"));
		expect(csv.subarray(0, 2).toString()).toBe("id");
	});
});
