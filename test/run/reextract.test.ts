import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { basename, join } from "node:path";
import { parse } from "csv-parse/sync";
import { afterEach, describe, expect, it } from "vitest";
import {
	type Emulator,
	extractJobFile,
	LockHeldError,
	lockJobOutput,
	startEmulator,
	UsageError,
} from "../../src/index.js";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { startTargetSite, type TargetSite } from "../helpers/target-site.js";

/**
 * Re-extraction and data contracts (issue 34; docs/guides/extraction.md, "Re-extraction and data contracts"):
 * a new run from stored pages with the job's current `extract:` that sends nothing, and a contract that
 * keeps a run with broken data out of "latest" until it is accepted.
 */

let emulator: Emulator | undefined;
afterEach(async () => {
	await emulator?.close();
	emulator = undefined;
});

/** A shop whose pages the test shapes: each product's price (null: no price shown), and the layout's class. */
interface Shop {
	prices: Map<number, number | null>;
	/** Products on the new layout: their price under another class. */
	moved: Set<number>;
}

async function startShop(shop: Shop): Promise<TargetSite> {
	return startTargetSite((req, res: ServerResponse) => {
		const id = Number(/\/product\/(\d+)$/.exec(req.url ?? "")?.[1]);
		if (!shop.prices.has(id)) {
			res.writeHead(404, { "content-type": "text/html" }).end("<html><body>gone</body></html>");
			return;
		}
		const price = shop.prices.get(id);
		const priceHtml =
			price === null ? "" : `<span class="${shop.moved.has(id) ? "amount" : "price"}">$${price?.toFixed(2)}</span>`;
		res
			.writeHead(200, { "content-type": "text/html; charset=utf-8" })
			.end(`<html><body><h1>Product ${id}</h1><div class="box">${priceHtml}</div></body></html>`);
	});
}

function shopJob(origin: string, count: number, fields: string[], extra: string[] = []): string {
	const lines = [
		"name: shop",
		"defaults:",
		"  mode: request",
		"output:",
		"  content: files",
		"extract:",
		...fields.map((field) => `  ${field}`),
		...extra,
		"targets:",
	];
	for (let id = 1; id <= count; id += 1) lines.push(`  - {url: "${origin}/product/${id}", id: p${id}}`);
	return `${lines.join("\n")}\n`;
}

/** Run folders of the job, oldest first (run ids sort by time). */
function runFolders(out: string): string[] {
	const jobDir = join(out, "shop");
	return readdirSync(jobDir, { withFileTypes: true })
		.filter((entry) => entry.isDirectory())
		.map((entry) => entry.name)
		.sort()
		.map((name) => join(jobDir, name));
}

const paid = () => emulator?.ledger.entries.filter((entry) => entry.endpoint === "realtime").length ?? 0;

function envOf(): NodeJS.ProcessEnv {
	if (!emulator) throw new Error("no emulator");
	return { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
}

function exported(dir: string, file: string): Record<string, string>[] {
	return parse(readFileSync(join(dir, file), "utf8"), { columns: true }) as Record<string, string>[];
}

/** An exported file's prices in id order. */
function exportedPrices(dir: string, file: string): string[] {
	return exported(dir, file)
		.sort((a, b) => (a.id! < b.id! ? -1 : 1))
		.map((row) => row.price!);
}

describe("a weekend with a wrong selector, fixed on Monday without paying again", () => {
	it("extract --run latest (the built CLI, its page workers): right values, 0 credits, changed only where a value changed, missing pages listed", async () => {
		assertBuilt();
		const shop: Shop = {
			prices: new Map<number, number | null>([
				[1, 10],
				[2, 20],
				[3, 30],
				[4, 40],
				[5, null],
			]),
			moved: new Set<number>(),
		};
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 3 } });
		const dir = tempDir();
		const env = envOf();
		// Product 6 is gone (404): it never has an ok record, so it has no page to read.
		const wrong = ["name: {css: h1}", "price: {css: .cost, type: number}"];
		writeJob(dir, "shop", shopJob(site.origin, 6, wrong));
		for (const day of ["saturday", "sunday"]) {
			if (day === "sunday") shop.prices.set(2, 25);
			const run = await spawnCli(["run", "shop.yaml", "--out", "out", "--quiet"], env, dir).done;
			expect(run.code, run.stderr).toBe(1);
		}
		const [, sunday] = runFolders(join(dir, "out"));
		expect(readRecords(sunday!).filter((record) => record.status === "ok")).toHaveLength(5);
		expect(readRecords(sunday!).every((record) => record.data === undefined || record.data.price === null)).toBe(true);
		const paidBefore = paid();
		const requestsBefore = site.requests.length;

		// Monday: the selector fixed in the job file; the stored pages are read again.
		writeJob(dir, "shop", shopJob(site.origin, 6, ["name: {css: h1}", "price: {css: .price, type: number}"]));
		const extract = await spawnCli(["extract", "shop.yaml", "--run", "latest", "--out", "out", "--json"], env, dir)
			.done;
		expect(extract.code, extract.stderr).toBe(0);
		expect(paid()).toBe(paidBefore);
		expect(site.requests.length).toBe(requestsBefore);
		const summary = JSON.parse(extract.stdout) as ReturnType<typeof readSummary> & { run_dir: string };
		expect(summary).toMatchObject({
			// The newest run whose latest ok records were read: Sunday's (the run id, not the word "latest").
			reextracted_from: basename(sunday!),
			reextracted_latest: true,
			missing_pages: 1,
			complete: true,
			stopped_reason: null,
			credits: { used: 0 },
			targets: { by_status: { ok: 5, failed: 0 } },
			changes: { new: 0, changed: 4, unchanged: 1 },
		});
		// Nothing was fetched: no latency, though the source run's records (and their durations) had one.
		expect(readSummary(sunday!).latency_ms.p50).toEqual(expect.any(Number));
		expect(summary.latency_ms).toEqual({ p50: null, p95: null });
		expect(readSummary(summary.run_dir).latency_ms).toEqual({ p50: null, p95: null });
		const records = readRecords(summary.run_dir);
		expect(records.every((record) => record.credits_used === 0 && record.attempts === 0)).toBe(true);
		expect(Object.fromEntries(records.map((record) => [record.id, record.data?.price]))).toEqual({
			p1: 10,
			p2: 25,
			p3: 30,
			p4: 40,
			p5: null,
		});
		// changes.jsonl names the price only: the name read the same from the same pages.
		const changes = readFileSync(join(summary.run_dir, "changes.jsonl"), "utf8")
			.trim()
			.split("\n")
			.map((line) => JSON.parse(line) as { id: string; fields: Record<string, { old: unknown; new: unknown }> });
		expect(changes.map((change) => change.id).sort()).toEqual(["p1", "p2", "p3", "p4"]);
		for (const change of changes) expect(Object.keys(change.fields)).toEqual(["price"]);
		expect(changes.find((change) => change.id === "p2")?.fields.price).toEqual({ old: null, new: 25 });
		// The page files are the run's own (content_path resolves inside the new folder).
		for (const record of records) expect(existsSync(join(summary.run_dir, record.content_path!))).toBe(true);
		// Records keep their page's fetch time: freshness counts from the fetch, not the re-extraction.
		const sundayTimes = new Map(readRecords(sunday!).map((record) => [record.id, record.finished_at]));
		for (const record of records) expect(record.finished_at).toBe(sundayTimes.get(record.id));
		expect(readFileSync(join(summary.run_dir, "missing-pages.txt"), "utf8")).toMatch(
			/^p6\t.*\/product\/6\tnever fetched ok\n$/,
		);
		expect(readFileSync(join(summary.run_dir, "report.html"), "utf8")).toContain(
			"re-extracted from the latest ok records: 0 credits, 1 without a stored page",
		);

		// export --latest gives the re-extracted values: promoted.
		const exportRun = await spawnCli(
			["export", "shop.yaml", "--latest", "--out", "latest.csv", "--from", "out"],
			env,
			dir,
		).done;
		expect(exportRun.code, exportRun.stderr).toBe(0);
		const latest = Object.fromEntries(exported(dir, "latest.csv").map((row) => [row.id, row.price]));
		expect(latest).toEqual({ p1: "10", p2: "25", p3: "30", p4: "40", p5: "" });
	}, 90_000);

	it("extract --run RUN_ID reads that run's pages; bad input is exit 2, a held lock exit 4, nothing made", async () => {
		const shop: Shop = { prices: new Map([[1, 10]]), moved: new Set<number>() };
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const dir = tempDir();
		const env = envOf();
		writeJob(dir, "shop", shopJob(site.origin, 1, ["price: {css: .cost, type: number}"]));
		expect((await runCli(["run", "shop.yaml", "--out", "out", "--quiet"], { env, cwd: dir })).code).toBe(0);
		const [saturday] = runFolders(join(dir, "out"));
		writeJob(dir, "shop", shopJob(site.origin, 1, ["price: {css: .price, type: number}"]));
		const runId = saturday!.split("/").pop()!;

		const unknown = await runCli(["extract", "shop.yaml", "--run", "20200101T000000Z-000000", "--out", "out"], {
			env,
			cwd: dir,
		});
		expect(unknown.code).toBe(2);
		expect(unknown.stderr).toContain("no run 20200101T000000Z-000000 of job shop");
		const outside = await runCli(["extract", "shop.yaml", "--run", "../x", "--out", "out"], { env, cwd: dir });
		expect(outside.code).toBe(2);
		const lock = lockJobOutput(join(dir, "out"), "shop", "holder");
		try {
			const held = await runCli(["extract", "shop.yaml", "--run", runId, "--out", "out"], { env, cwd: dir });
			expect(held.code).toBe(4);
		} finally {
			lock.release();
		}
		expect(runFolders(join(dir, "out"))).toHaveLength(1);

		const ok = await runCli(["extract", "shop.yaml", "--run", runId, "--out", "out"], { env, cwd: dir });
		expect(ok.code, ok.stderr).toBe(0);
		expect(ok.stdout).toContain(`re-extracted from run ${runId}: 0 credits, nothing sent`);
		const [, reextracted] = runFolders(join(dir, "out"));
		expect(readSummary(reextracted!)).toMatchObject({ reextracted_from: runId, missing_pages: 0 });
		expect(readRecords(reextracted!)[0]?.data).toEqual({ price: 10 });
		// Keys never appear in any output.
		for (const name of readdirSync(reextracted!)) {
			const path = join(reextracted!, name);
			if (name !== "pages") expect(readFileSync(path, "utf8")).not.toContain(emulator.accountKey);
		}
		expect(ok.stdout + ok.stderr).not.toContain(emulator.accountKey);
	}, 60_000);
});

describe("a job that keeps no pages (output.content: none)", () => {
	it("extract is refused with exit 2, saying why and what keeps pages; nothing is made; with content: files it then works", async () => {
		const shop: Shop = { prices: new Map([[1, 10]]), moved: new Set<number>() };
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const dir = tempDir();
		const env = envOf();
		const job = (content: string) =>
			shopJob(site.origin, 1, ["price: {css: .price, type: number}"]).replace("content: files", `content: ${content}`);
		writeJob(dir, "shop", job("none"));
		expect((await runCli(["run", "shop.yaml", "--out", "out", "--quiet"], { env, cwd: dir })).code).toBe(0);
		const [fetched] = runFolders(join(dir, "out"));
		for (const run of ["latest", basename(fetched!)]) {
			const refused = await runCli(["extract", "shop.yaml", "--run", run, "--out", "out"], { env, cwd: dir });
			expect(refused.code, refused.stdout).toBe(2);
			expect(refused.stdout).toBe("");
			expect(refused.stderr).toContain("nothing to re-extract");
			expect(refused.stderr).toContain("output.content: none");
			expect(refused.stderr).toContain("Set `output: {content: files}` in shop.yaml");
		}
		const json = await runCli(["extract", "shop.yaml", "--run", "latest", "--out", "out", "--json"], { env, cwd: dir });
		expect(json.code).toBe(2);
		expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: "SCRAPEJOB_USAGE" } });
		expect(runFolders(join(dir, "out"))).toEqual([fetched]);
		// As the message says: keep the pages, run again; extract then reads them.
		writeJob(dir, "shop", job("files"));
		expect((await runCli(["run", "shop.yaml", "--out", "out", "--quiet"], { env, cwd: dir })).code).toBe(0);
		const ok = await runCli(["extract", "shop.yaml", "--run", "latest", "--out", "out"], { env, cwd: dir });
		expect(ok.code, ok.stderr).toBe(0);
		// The terminal's time line says no p50/p95 of fetches the re-extraction did not make.
		const time = ok.stdout.split("\n").find((line) => /^\s*time\b/.test(line));
		expect(time).toMatch(/ s, [\d.]+\/s/);
		expect(time).not.toContain("p50");
		expect(readRecords(runFolders(join(dir, "out"))[2]!)[0]?.data).toEqual({ price: 10 });
	}, 60_000);
});

describe("overrides: each page is read again with the fields it was fetched to be read with", () => {
	it("a target's and a source's own extract apply to their pages, the job's to the rest", async () => {
		const shop: Shop = {
			prices: new Map<number, number | null>([
				[1, 10],
				[2, 20],
				[3, 30],
				[4, 40],
			]),
			// Products 2, 3 and 4 show their price under `.amount`: the job's `.price` finds nothing there.
			moved: new Set([2, 3, 4]),
		};
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const dir = tempDir();
		writeFileSync(join(dir, "moved.txt"), `${site.origin}/product/3\n${site.origin}/product/4\n`);
		const job = (own: string) =>
			[
				"name: shop",
				"defaults: {mode: request}",
				"output: {content: files}",
				"extract:",
				"  name: {css: h1}",
				"  price: {css: .price, type: number}",
				"targets:",
				`  - {url: "${site.origin}/product/1", id: p1}`,
				`  - url: "${site.origin}/product/2"`,
				"    id: p2",
				"    extract:",
				`      price: {css: ${own === "fetch" ? ".nothing" : ".amount"}, type: number}`,
				"sources:",
				"  - file: moved.txt",
				"    extract:",
				`      price: {css: ${own === "fetch" ? ".nothing" : ".amount"}, type: number}`,
				"",
			].join("\n");
		// Fetched with overrides that find nothing; the job file's overrides are then fixed.
		writeJob(dir, "shop", job("fetch"));
		const out = join(dir, "out");
		expect((await runCli(["run", "shop.yaml", "--out", out, "--quiet"], { env: envOf(), cwd: dir })).code).toBe(0);
		writeJob(dir, "shop", job("fixed"));
		const sent = paid();
		const summary = await extractJobFile(join(dir, "shop.yaml"), { out, run: "latest" });
		expect(paid()).toBe(sent);
		const records = readRecords(summary.run_dir);
		const prices = Object.fromEntries(
			records.map((record) => [record.url.slice(site.origin.length), record.data?.price ?? null]),
		);
		// p1: the job's .price; p2: its own .amount; 3 and 4: their source's .amount.
		expect(prices).toEqual({ "/product/1": 10, "/product/2": 20, "/product/3": 30, "/product/4": 40 });
	});
});

describe("data contracts gate latest", () => {
	const fields = [
		"name: {css: h1, required: true, min_length: 3}",
		"price: {css: .price, type: number, required: true, min: 0.01}",
	];
	const checks = ["extract_checks:", "  min_fill: 0.9", "  max_fill_drop: 0.2", "  max_rows_drop: 0.5"];

	it("a layout change that empties half the prices: exit 1, contract_failed, export --latest keeps last week's values, --accept promotes", async () => {
		const shop: Shop = {
			prices: new Map<number, number | null>([1, 2, 3, 4, 5, 6].map((id) => [id, id * 10])),
			moved: new Set<number>(),
		};
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 3 } });
		const dir = tempDir();
		const env = envOf();
		writeJob(dir, "shop", shopJob(site.origin, 6, fields, checks));
		const lastWeek = await runCli(["run", "shop.yaml", "--out", "out", "--json"], { env, cwd: dir });
		expect(lastWeek.code, lastWeek.stderr).toBe(0);
		expect(JSON.parse(lastWeek.stdout).contract).toMatchObject({ passed: true, broken: [] });

		// The site's new layout on half the products: their price moved under another class.
		for (const id of [4, 5, 6]) {
			shop.moved.add(id);
			shop.prices.set(id, id * 11);
		}
		const broken = await runCli(["run", "shop.yaml", "--out", "out", "--json"], { env, cwd: dir });
		expect(broken.code).toBe(1);
		const summary = JSON.parse(broken.stdout) as ReturnType<typeof readSummary> & { run_dir: string };
		expect(summary).toMatchObject({ complete: true, stopped_reason: "contract_failed", contract: { passed: false } });
		const rules = summary.contract!.broken.map((rule) => `${rule.rule}:${rule.field ?? ""}`).sort();
		expect(rules).toEqual(["max_fill_drop:price", "min_fill:price"]);
		expect(summary.contract!.baseline_runs).toHaveLength(1);
		// Its records stay in its folder.
		expect(readRecords(summary.run_dir).filter((record) => record.data?.price === null)).toHaveLength(3);

		const before = await runCli(["export", "shop.yaml", "--latest", "--out", "a.csv", "--from", "out"], {
			env,
			cwd: dir,
		});
		expect(before.code, before.stderr).toBe(0);
		expect(exportedPrices(dir, "a.csv")).toEqual(["10", "20", "30", "40", "50", "60"]);
		// The store (a cache of the run folders) keeps it held when rebuilt.
		const { rmSync } = await import("node:fs");
		rmSync(join(dir, "out", "shop", "history.sqlite"));
		await runCli(["export", "shop.yaml", "--latest", "--out", "b.csv", "--from", "out"], { env, cwd: dir });
		expect(exportedPrices(dir, "b.csv")).toEqual(["10", "20", "30", "40", "50", "60"]);

		const runId = summary.run_dir.split("/").pop()!;
		const accepted = await runCli(
			["export", "shop.yaml", "--latest", "--out", "c.csv", "--from", "out", "--accept", runId],
			{ env, cwd: dir },
		);
		expect(accepted.code, accepted.stderr).toBe(0);
		expect(accepted.stderr).toContain(`run ${runId} accepted`);
		expect(exportedPrices(dir, "c.csv")).toEqual(["10", "20", "30", "", "", ""]);
	}, 60_000);

	it("field rules: a value breaking pattern or min is named with its count and first offender; run --accept promotes; notify says failed", async () => {
		const shop: Shop = {
			prices: new Map([1, 2, 3, 4].map((id) => [id, id === 3 ? 0 : id * 10])),
			moved: new Set<number>(),
		};
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const dir = tempDir();
		const env = envOf();
		const posts: string[] = [];
		const hook = await startTargetSite((req, res) => {
			let body = "";
			req.on("data", (chunk: Buffer) => {
				body += chunk.toString();
			});
			req.on("end", () => {
				posts.push(body);
				res.writeHead(204).end();
			});
		});
		const ruled = ["name: {css: h1, pattern: '^Product [0-2]$'}", "price: {css: .price, type: number, min: 0.01}"];
		writeJob(dir, "shop", shopJob(site.origin, 4, ruled, ["notify:", `  url: ${hook.origin}/hook`]));
		const run = await runCli(["run", "shop.yaml", "--out", "out", "--json", "--metrics", "m.prom"], {
			env,
			cwd: dir,
		});
		expect(run.code).toBe(1);
		const summary = JSON.parse(run.stdout) as ReturnType<typeof readSummary> & { run_dir: string };
		const broken = summary.contract!.broken;
		expect(broken.find((rule) => rule.rule === "pattern")).toMatchObject({
			field: "name",
			records: 2,
			example: { id: "p3", value: "Product 3" },
		});
		expect(broken.find((rule) => rule.rule === "min")).toMatchObject({
			field: "price",
			records: 1,
			example: { id: "p3", value: 0 },
		});
		expect(posts).toHaveLength(1);
		expect(JSON.parse(posts[0]!)).toMatchObject({ event: "failed", stopped_reason: "contract_failed" });
		expect(readFileSync(join(dir, "m.prom"), "utf8")).toMatch(/scrapejob_contract_broken_rules\{[^}]*\} 2/);
		expect(readFileSync(join(summary.run_dir, "contract.json"), "utf8")).toContain('"held"');

		// Nothing of it is latest yet: the next run sees every target as new.
		const runId = summary.run_dir.split("/").pop()!;
		const next = await runCli(["run", "shop.yaml", "--out", "out", "--json", "--accept", runId], { env, cwd: dir });
		expect(next.stderr).toContain(`run ${runId} accepted`);
		// Accepted before this run: its records are the previous ones, so nothing is new.
		expect(JSON.parse(next.stdout).changes).toMatchObject({ new: 0, unchanged: 4 });
		expect(readFileSync(join(summary.run_dir, "contract.json"), "utf8")).toContain('"accepted"');
	}, 60_000);

	it("max_changed and max_rows_drop, and the library's extractJobFile with a contract", async () => {
		const shop: Shop = { prices: new Map([1, 2, 3, 4].map((id) => [id, id * 10])), moved: new Set<number>() };
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const dir = tempDir();
		const env = envOf();
		const job = writeJob(
			dir,
			"shop",
			shopJob(site.origin, 4, ["price: {css: .price, type: number}"], ["extract_checks:", "  max_changed: 0.5"]),
		);
		expect((await runCli(["run", "shop.yaml", "--out", "out"], { env, cwd: dir })).code).toBe(0);
		for (const id of [1, 2, 3]) shop.prices.set(id, id * 100);
		const moved = await runCli(["run", "shop.yaml", "--out", "out", "--json"], { env, cwd: dir });
		expect(moved.code).toBe(1);
		expect(JSON.parse(moved.stdout).contract.broken).toMatchObject([{ rule: "max_changed", limit: 0.5, actual: 0.75 }]);

		// The library: a re-extraction of the latest (the first run's values: the second was held) changes nothing.
		const [first] = runFolders(join(dir, "out"));
		const summary = await extractJobFile(job, { run: "latest", out: "out", cwd: dir, env });
		expect(summary).toMatchObject({
			reextracted_from: basename(first!),
			reextracted_latest: true,
			complete: true,
			stopped_reason: null,
			changes: { changed: 0, unchanged: 4 },
			contract: { passed: true },
		});
		expect(summary.credits.used).toBe(0);
		await expect(extractJobFile(job, { run: "nope", out: "out", cwd: dir, env })).rejects.toBeInstanceOf(UsageError);
		const lock = lockJobOutput(join(dir, "out"), "shop", "holder");
		try {
			await expect(extractJobFile(job, { run: "latest", out: "out", cwd: dir, env })).rejects.toBeInstanceOf(
				LockHeldError,
			);
		} finally {
			lock.release();
		}

		// Rows: 3 of 4 products gone drops the ok records by 75 %, past max_rows_drop 0.5.
		writeJob(
			dir,
			"shop",
			shopJob(site.origin, 4, ["price: {css: .price, type: number}"], ["extract_checks:", "  max_rows_drop: 0.5"]),
		);
		for (const id of [1, 2, 3]) shop.prices.delete(id);
		const gone = await runCli(["run", "shop.yaml", "--out", "out", "--json"], { env, cwd: dir });
		expect(gone.code).toBe(1);
		expect(JSON.parse(gone.stdout).contract.broken).toMatchObject([{ rule: "max_rows_drop", actual: 1, limit: 0.5 }]);
	}, 60_000);
});

describe("a field added to extract: is added, not changed", () => {
	it("re-extracting with a new field keeps max_changed: the records list it in added_fields, changes count shared fields only", async () => {
		const shop: Shop = { prices: new Map([1, 2, 3, 4].map((id) => [id, id * 10])), moved: new Set<number>() };
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const dir = tempDir();
		const env = envOf();
		const contract = ["extract_checks:", "  max_changed: 0.25"];
		writeJob(dir, "shop", shopJob(site.origin, 4, ["price: {css: .price, type: number}"], contract));
		expect((await runCli(["run", "shop.yaml", "--out", "out"], { env, cwd: dir })).code).toBe(0);
		// A second night: nothing changed on the site.
		expect((await runCli(["run", "shop.yaml", "--out", "out"], { env, cwd: dir })).code).toBe(0);
		const paid = emulator.ledger.requestCount;

		// Two fields added (`sku` is on no page), the stored pages read again: every record lists both, none has changed.
		shop.prices.set(1, 999);
		const fields = ["price: {css: .price, type: number}", "name: {css: h1}", "sku: {css: .sku}"];
		writeJob(dir, "shop", shopJob(site.origin, 4, fields, contract));
		const extract = await runCli(["extract", "shop.yaml", "--run", "latest", "--out", "out", "--json"], {
			env,
			cwd: dir,
		});
		expect(extract.code, extract.stderr).toBe(0);
		const summary = JSON.parse(extract.stdout) as ReturnType<typeof readSummary> & { run_dir: string };
		expect(summary).toMatchObject({ changes: { new: 0, changed: 0, unchanged: 4 }, contract: { passed: true } });
		for (const record of readRecords(summary.run_dir)) {
			expect(record.added_fields).toEqual(["name", "sku"]);
			expect(record.data).toMatchObject({ sku: null });
		}
		// Its report shows what it did (pages read, fields, changes), not fetch charts that would be empty.
		const report = readFileSync(join(summary.run_dir, "report.html"), "utf8");
		expect(report).toContain("pages read");
		expect(report).toContain("without a stored page");
		for (const fetchChart of ["activity", "latency", "credits-time", "credits-mode"])
			expect(report).not.toContain(`data-chart="${fetchChart}"`);
		expect(report).toContain('data-chart="fill"');
		expect(emulator.ledger.requestCount).toBe(paid);
		// The job's store agrees with the records: no target changed, so `changed_at` stays at the first night's
		// fetch ("what changed yesterday" does not list every target whose fields were added).
		const store = new (createRequire(import.meta.url)("better-sqlite3") as typeof import("better-sqlite3"))(
			join(dir, "out", "shop", "history.sqlite"),
			{ readonly: true },
		);
		const stamps = store.prepare("SELECT changed_at, finished_at FROM targets").all() as Array<{
			changed_at: string;
			finished_at: string;
		}>;
		store.close();
		expect(stamps).toHaveLength(4);
		for (const stamp of stamps) expect(stamp.changed_at <= stamp.finished_at).toBe(true);
		const firstRun = readRecords(
			join(dir, "out", "shop", readdirSync(join(dir, "out", "shop")).filter((name) => /^\d/.test(name))[0]!),
		);
		expect(stamps.map((stamp) => stamp.changed_at).sort()).toEqual(firstRun.map((record) => record.finished_at).sort());

		// A value of a field both runs had still counts: product 1's price changed on the site.
		const run = await runCli(["run", "shop.yaml", "--out", "out", "--json"], { env, cwd: dir });
		const next = JSON.parse(run.stdout) as ReturnType<typeof readSummary>;
		expect(next.changes).toMatchObject({ changed: 1, unchanged: 3 });
		expect(run.code).toBe(0);
	});
});

describe("an older run read again", () => {
	it("reports no change against the newer record the job holds (a diff backwards in time would be wrong)", async () => {
		const shop: Shop = { prices: new Map([1, 2].map((id) => [id, id * 10])), moved: new Set<number>() };
		const site = await startShop(shop);
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const dir = tempDir();
		const env = envOf();
		writeJob(dir, "shop", shopJob(site.origin, 2, ["price: {css: .price, type: number}"]));
		expect((await runCli(["run", "shop.yaml", "--out", "out"], { env, cwd: dir })).code).toBe(0);
		const [monday] = runFolders(join(dir, "out"));
		// Tuesday product 1 costs more.
		shop.prices.set(1, 12);
		const tuesday = JSON.parse(
			(await runCli(["run", "shop.yaml", "--out", "out", "--json"], { env, cwd: dir })).stdout,
		) as ReturnType<typeof readSummary>;
		expect(tuesday.changes).toMatchObject({ changed: 1, unchanged: 1 });

		// Monday's pages read again: product 1's Monday price is no change from Tuesday's.
		const extract = await runCli(["extract", "shop.yaml", "--run", basename(monday!), "--out", "out", "--json"], {
			env,
			cwd: dir,
		});
		expect(extract.code, extract.stderr).toBe(0);
		const summary = JSON.parse(extract.stdout) as ReturnType<typeof readSummary> & { run_dir: string };
		expect(summary.changes).toMatchObject({ new: 0, changed: 0 });
		expect(existsSync(join(summary.run_dir, "changes.jsonl"))).toBe(false);
		expect(readRecords(summary.run_dir).find((record) => record.id === "p1")).toMatchObject({
			data: { price: 10 },
			change: null,
		});
		// The job's latest is still Tuesday's.
		const exported = await runCli(["export", "shop.yaml", "--latest", "--from", "out", "--out", "latest.jsonl"], {
			env,
			cwd: dir,
		});
		expect(exported.code, exported.stderr).toBe(0);
		const latest = readFileSync(join(dir, "latest.jsonl"), "utf8")
			.trim()
			.split("\n")
			.map((line) => JSON.parse(line));
		expect(latest.find((record) => record.id === "p1").data).toEqual({ price: 12 });
	});
});

describe("contract keys are validated", () => {
	it("a regex that does not compile, bounds on text, min above max, an out-of-range check: exit 2 at file:line:col", async () => {
		const dir = tempDir();
		writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"extract:",
				"  sku: {css: .sku, pattern: '([a-z'}",
				"  title: {css: h1, min: 3}",
				"  price: {css: .price, type: number, min: 10, max: 5, min_length: 2}",
				"extract_checks:",
				"  max_changed: 1.5",
				"targets:",
				"  - https://shop.example/a",
			].join("\n"),
		);
		const result = await runCli(["validate", "shop.yaml"], { cwd: dir });
		expect(result.code).toBe(2);
		expect(result.stderr).toMatch(/shop\.yaml:3:\d+ .*pattern "\(\[a-z" does not compile/);
		expect(result.stderr).toMatch(/shop\.yaml:4:\d+ .*`min` bounds a number/);
		expect(result.stderr).toMatch(/shop\.yaml:5:\d+ .*max 5 is below min 10/);
		expect(result.stderr).toMatch(/shop\.yaml:5:\d+ .*`min_length` counts characters/);
		expect(result.stderr).toMatch(/shop\.yaml:7:\d+ .*max_changed/);
	});
});
