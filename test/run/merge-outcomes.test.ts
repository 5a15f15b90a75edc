import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunSummary } from "../../src/output/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

/**
 * What a merge's summary carries beside the totals (docs/guides/scaling-out.md): the changes its records
 * found, the extracted fields' fill, and the breakers its shards ended with open — one per domain, as one
 * run's summary has them.
 */
describe("merge: changes and breakers of the shards", () => {
	it("the merged summary counts each record's change and field fill, and sums the shards' open breakers of a domain into one", async () => {
		// Every fetch of localhost on a datacenter address answers a block page: each shard's breaker opens.
		const service = await useTestService({ block_datacenter: ["//localhost:"] });
		const port = new URL(service.site.url).port;
		const blocked = Array.from({ length: 30 }, (_, index) => `  - http://localhost:${port}/product/${index + 1}`);
		const served = Array.from({ length: 6 }, (_, index) => `  - ${service.site.url}/product/${index + 1}`);
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"mix",
			[
				"name: mix",
				"concurrency: 1",
				"shard_by: url",
				"breaker: {window: 4, trip: 4}",
				"defaults: {mode: request, proxy_type: datacenter}",
				"extract:",
				"  name: {css: h1, required: true}",
				"  price: {css: .price, type: number}",
				"extract_checks: {min_fill: 0.5}",
				"targets:",
				...blocked,
				...served,
				"",
			].join("\n"),
		);
		for (const shard of ["1/2", "2/2"]) {
			const result = await runCli(["run", job, "--out", out, "--quiet", "--shard", shard], { env: service.env });
			expect(result.code, result.stderr).toBe(6);
		}
		const folders = readdirSync(join(out, "mix"))
			.filter(isRunFolderName)
			.map((name) => join(out, "mix", name));
		const shards = folders.map((folder) => readSummary(folder) as RunSummary);
		expect(shards.map((shard) => shard.breakers?.length)).toEqual([1, 1]);

		const merged = join(dir, "merged");
		const result = await runCli(["merge", ...folders, "--out", merged, "--json"]);
		// Parked targets have no record: the merge is incomplete, as each shard is.
		expect(result.code, result.stderr).toBe(1);
		const summary = JSON.parse(result.stdout) as RunSummary;
		const records = readRecords(merged);
		const count = (change: string) => records.filter((record) => record.change === change).length;
		expect(summary.changes).toEqual({ new: count("new"), changed: count("changed"), unchanged: count("unchanged") });
		expect(summary.changes!.new).toBe(records.length);
		// Fill rates over every shard's ok records, as one run's summary gives them.
		const ok = records.filter((record) => record.status === "ok");
		const filled = (field: string) => ok.filter((record) => (record.data?.[field] ?? null) !== null).length;
		expect(summary.extract).toMatchObject({
			records: ok.length,
			min_fill: 0.5,
			fields: {
				name: { filled: filled("name"), required: true },
				price: { filled: filled("price"), required: false },
			},
		});
		expect(summary.extract!.fields.price!.fill_rate).toBeCloseTo(filled("price") / ok.length, 4);
		expect(filled("price")).toBeGreaterThan(0);
		const [first, second] = shards.map((shard) => shard.breakers![0]!);
		expect(summary.breakers).toEqual([
			{
				domain: first!.domain,
				reason: Date.parse(first!.opened_at) <= Date.parse(second!.opened_at) ? first!.reason : second!.reason,
				opened_at: Date.parse(first!.opened_at) <= Date.parse(second!.opened_at) ? first!.opened_at : second!.opened_at,
				parked: first!.parked + second!.parked,
				credits_saved: first!.credits_saved + second!.credits_saved,
			},
		]);
		expect(summary.breakers![0]!.parked).toBe(36 - records.length);
		// The terminal summary of the merge says the same.
		const text = await runCli(["merge", ...folders, "--out", merged]);
		expect(text.stdout).toMatch(/\nchanges +\d+ new, 0 changed, 0 unchanged\n/);
		expect(text.stdout).toContain(first!.domain);
	});

	it("a merge whose required field is filled below min_fill over every shard exits 1, as each shard's run does", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		// 24 targets split by URL: neither shard is left empty (of 8, one was for 1 site port in 128).
		const targets = Array.from({ length: 24 }, (_, index) => `  - ${service.site.url}/product/${index + 1}`);
		const job = writeJob(
			dir,
			"fill",
			[
				"name: fill",
				"shard_by: url",
				// Every record lacks its required field: a breaker would park the rest.
				"breaker: false",
				"defaults: {mode: request}",
				"extract:",
				"  sku: {css: .no-such-class, required: true}",
				"extract_checks: {min_fill: 0.5}",
				"targets:",
				...targets,
				"",
			].join("\n"),
		);
		for (const shard of ["1/2", "2/2"]) {
			const result = await runCli(["run", job, "--out", out, "--quiet", "--shard", shard], { env: service.env });
			expect(result.code, result.stderr).toBe(1);
		}
		const folders = readdirSync(join(out, "fill"))
			.filter(isRunFolderName)
			.map((name) => join(out, "fill", name));
		const result = await runCli(["merge", ...folders, "--out", join(dir, "merged"), "--json"]);
		expect(result.code, result.stderr).toBe(1);
		const summary = JSON.parse(result.stdout) as RunSummary;
		expect(summary).toMatchObject({ complete: true, targets: { done: 24, by_status: { ok: 24, failed: 0 } } });
		expect(summary.extract).toMatchObject({ records: 24, below_min_fill: ["sku"] });
	});
});
