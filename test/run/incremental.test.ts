import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";

let closers: Array<() => Promise<void>> = [];
afterEach(async () => {
	for (const close of closers.reverse()) await close();
	closers = [];
});

/** A shop whose pages the test edits between runs (status and price per page). */
async function editableShop(): Promise<{
	url: string;
	pages: Map<string, { status: number; price: string; ad: number }>;
}> {
	const pages = new Map<string, { status: number; price: string; ad: number }>();
	const server: Server = createServer((req, res) => {
		const page = pages.get(req.url ?? "");
		if (!page) {
			res.writeHead(404, { "content-type": "text/html" });
			res.end("<html><body>gone</body></html>");
			return;
		}
		// The rotating ad changes every fetch: with extract:, it is no change. A page with `ad: -1` has none.
		if (page.ad >= 0) page.ad += 1;
		res.writeHead(page.status, { "content-type": "text/html" });
		const ad = page.ad >= 0 ? `<div class="ad">ad ${page.ad}</div>` : "";
		res.end(`<html><body><h1>${req.url}</h1><p class="price">$${page.price}</p>${ad}</body></html>`);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
	closers.push(async () => {
		server.closeAllConnections();
		await new Promise((resolve) => server.close(resolve));
	});
	return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, pages };
}

async function emulator(): Promise<Emulator> {
	const started = await startEmulator({ scenario: { concurrency: 2 } });
	closers.push(() => started.close());
	return started;
}

const envOf = (service: Emulator) => ({ SCRAPEJOB_ACCOUNT_KEY: service.accountKey, SCRAPEJOB_API_URL: service.apiUrl });

function runs(out: string): string[] {
	return readdirSync(join(out, "shop"))
		.filter(isRunFolderName)
		.sort()
		.map((name) => join(out, "shop", name));
}

function job(dir: string, shop: string, extra = ""): string {
	const paths = ["/p/1", "/p/2", "/p/3"];
	return writeJob(
		dir,
		"shop",
		[
			"name: shop",
			"defaults:",
			"  mode: request",
			extra,
			"targets:",
			...paths.map((path) => `  - ${shop}${path}`),
			"",
		].join("\n"),
	);
}

describe("incremental runs", () => {
	it("marks each ok record new, changed or unchanged against the last run, and lists what changed", async () => {
		const shop = await editableShop();
		for (const path of ["/p/1", "/p/2", "/p/3"]) shop.pages.set(path, { status: 200, price: "10.00", ad: 0 });
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url, "extract:\n  price: {css: .price, type: number}");
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(0);
		const [first] = runs(out);
		expect(readRecords(first!).map((record) => record.change)).toEqual(["new", "new", "new"]);
		const before = new Set(runs(out));
		expect(readRecords(first!).every((record) => /^[0-9a-f]{16}$/.test(record.content_hash ?? ""))).toBe(true);

		shop.pages.get("/p/2")!.price = "12.50";
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(0);
		// Run ids made within one second do not sort by time: the new folder is the one that was not there.
		const second = runs(out).find((dir) => !before.has(dir))!;
		const byPath = new Map(readRecords(second).map((record) => [new URL(record.url).pathname, record]));
		// Only the edited page changed; the rotating ad is not a change because the hash is over the extracted data.
		expect([...byPath].map(([path, record]) => [path, record.change]).sort()).toEqual([
			["/p/1", "unchanged"],
			["/p/2", "changed"],
			["/p/3", "unchanged"],
		]);
		const changes = readFileSync(join(second, "changes.jsonl"), "utf8")
			.trim()
			.split("\n")
			.map((line) => JSON.parse(line));
		expect(changes).toHaveLength(1);
		expect(changes[0]).toMatchObject({ id: byPath.get("/p/2")!.id, fields: { price: { old: 10, new: 12.5 } } });
		expect(readSummary(second).changes).toEqual({ new: 0, changed: 1, unchanged: 2 });
	});

	it("without extract:, the hash is over the content: a page whose bytes moved (a rotating ad) is changed, a static one unchanged", async () => {
		const shop = await editableShop();
		shop.pages.set("/p/1", { status: 200, price: "10.00", ad: -1 });
		shop.pages.set("/p/2", { status: 200, price: "10.00", ad: 0 });
		shop.pages.set("/p/3", { status: 200, price: "10.00", ad: -1 });
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url);
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(0);
		const before = new Set(runs(out));
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(0);
		const second = runs(out).find((dir) => !before.has(dir))!;
		const byPath = new Map(readRecords(second).map((record) => [new URL(record.url).pathname, record]));
		expect([...byPath].map(([path, record]) => [path, record.change]).sort()).toEqual([
			["/p/1", "unchanged"],
			["/p/2", "changed"],
			["/p/3", "unchanged"],
		]);
		const [line, ...rest] = readFileSync(join(second, "changes.jsonl"), "utf8").trim().split("\n");
		expect(rest).toEqual([]);
		const change = JSON.parse(line!);
		expect(change.id).toBe(byPath.get("/p/2")!.id);
		expect(change.fields.content_hash.new).toBe(byPath.get("/p/2")!.content_hash);
		expect(change.fields.content_hash.old).not.toBe(change.fields.content_hash.new);
		expect(readSummary(second).changes).toEqual({ new: 0, changed: 1, unchanged: 2 });
	});

	it("freshness: targets fetched ok within the window are not fetched again (nothing sent), counted fresh", async () => {
		const shop = await editableShop();
		for (const path of ["/p/1", "/p/2", "/p/3"]) shop.pages.set(path, { status: 200, price: "1.00", ad: 0 });
		shop.pages.get("/p/3")!.status = 404;
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url, "freshness: 1h");
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(1);
		const sent = service.ledger.byEndpoint("realtime").length;
		expect(sent).toBe(3);

		// /p/1 and /p/2 are fresh; /p/3 failed, so it is fetched again.
		const again = await runCli(["run", file, "--out", out, "--quiet", "--json"], { env: envOf(service) });
		expect(again.code).toBe(1);
		expect(service.ledger.byEndpoint("realtime").length).toBe(sent + 1);
		const summary = JSON.parse(again.stdout);
		expect(summary.targets).toMatchObject({ total: 1, done: 1, fresh: 2 });
		// A terminal's progress bar says how many were left out as fresh (they are not in its total).
		const bar = await runCli(["run", file, "--out", out], { env: envOf(service), tty: true });
		expect(bar.code).toBe(1);
		expect(bar.stderr).toContain("shop (2 fresh)");
		expect(service.ledger.byEndpoint("realtime").length).toBe(sent + 2);
		// --freshness 0 fetches all again.
		const all = await runCli(["run", file, "--out", out, "--quiet", "--freshness", "0"], { env: envOf(service) });
		expect(all.code).toBe(1);
		expect(service.ledger.byEndpoint("realtime").length).toBe(sent + 2 + 3);
	});

	it("freshness: a target whose latest record failed is not fresh, however recent its last ok record", async () => {
		const shop = await editableShop();
		for (const path of ["/p/1", "/p/2", "/p/3"]) shop.pages.set(path, { status: 200, price: "1.00", ad: 0 });
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url, "freshness: 1h");
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(0);
		// A later run fails /p/2 (its ok record of the first run is still within the hour).
		shop.pages.get("/p/2")!.status = 404;
		const failing = await runCli(["run", file, "--out", out, "--quiet", "--freshness", "0"], { env: envOf(service) });
		expect(failing.code).toBe(1);
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(6);
		shop.pages.get("/p/2")!.status = 200;
		const again = await runCli(["run", file, "--out", out, "--quiet", "--json"], { env: envOf(service) });
		expect(again.code, again.stderr).toBe(0);
		expect(JSON.parse(again.stdout).targets).toMatchObject({ total: 1, done: 1, fresh: 2 });
		const realtime = service.ledger.byEndpoint("realtime");
		expect(realtime).toHaveLength(7);
		expect(realtime.at(-1)!.url).toBe(`${shop.url}/p/2`);
	});

	it("--retry-failed runs only the targets whose latest record failed, across runs or of one run", async () => {
		const shop = await editableShop();
		for (const path of ["/p/1", "/p/2", "/p/3"]) shop.pages.set(path, { status: 200, price: "1.00", ad: 0 });
		shop.pages.get("/p/2")!.status = 404;
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url);
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(1);
		const firstRun = runs(out)[0]!;
		/** The run folder a command made (run ids made within one second do not sort by time). */
		const newRun = async (args: string[]) => {
			const before = new Set(runs(out));
			const result = await runCli(["run", file, "--out", out, "--quiet", "--json", ...args], { env: envOf(service) });
			return { result, dir: runs(out).find((dir) => !before.has(dir))! };
		};
		shop.pages.get("/p/2")!.status = 200;
		const retried = await newRun(["--retry-failed"]);
		expect(retried.result.code).toBe(0);
		expect(readRecords(retried.dir).map((record) => new URL(record.url).pathname)).toEqual(["/p/2"]);
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(4);
		// Nothing failed last time any more: a retry-failed run has nothing to do.
		const none = await newRun(["--retry-failed"]);
		expect(none.result.code).toBe(0);
		expect(JSON.parse(none.result.stdout)).toMatchObject({ job: "shop", skipped: "nothing_to_retry" });
		expect(none.dir).toBeUndefined();
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(4);
		// With a run id: that run's failures, whatever happened since.
		const byRun = await newRun(["--retry-failed", firstRun.split("/").at(-1)!]);
		expect(byRun.result.code).toBe(0);
		expect(readRecords(byRun.dir).map((record) => new URL(record.url).pathname)).toEqual(["/p/2"]);
	});

	it("--retry-failed over a job with a target added since (neither ok nor failed) fetches only the failed one", async () => {
		const shop = await editableShop();
		for (const path of ["/p/1", "/p/2", "/p/3", "/p/4"]) shop.pages.set(path, { status: 200, price: "1.00", ad: 0 });
		shop.pages.get("/p/2")!.status = 404;
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url);
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(1);
		// /p/4 joins the job after that run: it has no record at all.
		writeFileSync(file, `${readFileSync(file, "utf8")}  - ${shop.url}/p/4\n`);
		shop.pages.get("/p/2")!.status = 200;
		const result = await runCli(["run", file, "--out", out, "--quiet", "--retry-failed"], { env: envOf(service) });
		expect(result.code).toBe(0);
		const retried = runs(out).at(-1)!;
		expect(readRecords(retried).map((record) => new URL(record.url).pathname)).toEqual(["/p/2"]);
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(4);
	});

	it("--retry-failed retries a failure however recent the target's last ok record (freshness does not apply); a run id is a folder name", async () => {
		const shop = await editableShop();
		for (const path of ["/p/1", "/p/2", "/p/3"]) shop.pages.set(path, { status: 200, price: "1.00", ad: 0 });
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url, "freshness: 1h");
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(0);
		shop.pages.get("/p/2")!.status = 404;
		expect(
			(await runCli(["run", file, "--out", out, "--quiet", "--freshness", "0"], { env: envOf(service) })).code,
		).toBe(1);
		shop.pages.get("/p/2")!.status = 200;
		const retried = await runCli(["run", file, "--out", out, "--quiet", "--json", "--retry-failed"], {
			env: envOf(service),
		});
		expect(retried.code).toBe(0);
		const summary = JSON.parse(retried.stdout);
		expect(summary.targets).toMatchObject({ total: 1, done: 1 });
		expect(summary.targets.fresh).toBeUndefined();
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(7);

		const outside = await runCli(["run", file, "--out", out, "--quiet", "--retry-failed", "../elsewhere"], {
			env: envOf(service),
		});
		expect(outside.code).toBe(2);
		expect(outside.stderr).toContain('"../elsewhere" is not a run id');
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(7);
	});

	it("a resumed run's summary counts the changes of every session", async () => {
		const shop = await editableShop();
		const paths = Array.from({ length: 12 }, (_, index) => `/r/${index + 1}`);
		for (const path of paths) shop.pages.set(path, { status: 200, price: "1.00", ad: -1 });
		const service = await startEmulator({ scenario: { concurrency: 1, latency_ms: 30 } });
		closers.push(() => service.close());
		const dir = tempDir();
		const out = join(dir, "out");
		const file = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"defaults:",
				"  mode: request",
				"targets:",
				...paths.map((path) => `  - ${shop.url}${path}`),
				"",
			].join("\n"),
		);
		const stop = new AbortController();
		const first = runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service), signal: stop.signal });
		// Interrupted once a few records are written (an event on the disk, not a fixed sleep).
		for (let tries = 0; tries < 3000; tries += 1) {
			const [run] = existsSync(join(out, "shop")) ? runs(out) : [];
			if (run && existsSync(join(run, "results.jsonl")) && readRecords(run).length >= 3) break;
			await new Promise((resolve) => setTimeout(resolve, 10));
		}
		stop.abort();
		expect((await first).code).toBe(130);
		const [run] = runs(out);
		const before = readRecords(run!).length;
		expect(before).toBeLessThan(12);
		const resumed = await runCli(["run", file, "--out", out, "--quiet", "--resume"], { env: envOf(service) });
		expect(resumed.code).toBe(0);
		expect(readRecords(run!)).toHaveLength(12);
		expect(readSummary(run!).changes).toEqual({ new: 12, changed: 0, unchanged: 0 });
	}, 30_000);

	it("a deleted or damaged history is rebuilt from the run folders", async () => {
		const shop = await editableShop();
		for (const path of ["/p/1", "/p/2", "/p/3"]) shop.pages.set(path, { status: 200, price: "1.00", ad: 0 });
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url);
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(0);
		const history = join(out, "shop", "history.sqlite");
		expect(existsSync(history)).toBe(true);
		writeFileSync(history, "torn");
		expect(
			(await runCli(["run", file, "--out", out, "--quiet", "--freshness", "1h"], { env: envOf(service) })).code,
		).toBe(0);
		rmSync(history);
		const third = await runCli(["run", file, "--out", out, "--quiet", "--freshness", "1h", "--json"], {
			env: envOf(service),
		});
		expect(JSON.parse(third.stdout).targets.fresh).toBe(3);
		expect(service.ledger.byEndpoint("realtime")).toHaveLength(3);
	});
});

describe("export --latest", () => {
	it("writes the newest ok record of each target across runs as csv, jsonl, parquet and sqlite, read back by their own readers", async () => {
		const shop = await editableShop();
		for (const path of ["/p/1", "/p/2", "/p/3"]) shop.pages.set(path, { status: 200, price: "10.00", ad: 0 });
		const service = await emulator();
		const dir = tempDir();
		const out = join(dir, "out");
		const file = job(dir, shop.url, "extract:\n  price: {css: .price, type: number}");
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(0);
		// Second run: /p/2's price moved, /p/3 fails (its newest ok record stays the first run's).
		shop.pages.get("/p/2")!.price = "12.50";
		shop.pages.get("/p/3")!.status = 500;
		expect((await runCli(["run", file, "--out", out, "--quiet"], { env: envOf(service) })).code).toBe(1);
		const prices = (rows: Array<{ url: string; price: unknown }>) =>
			Object.fromEntries(rows.map((row) => [new URL(String(row.url)).pathname, Number(row.price)]));
		const expected = { "/p/1": 10, "/p/2": 12.5, "/p/3": 10 };

		const exported = async (format: string) => {
			const target = join(dir, `latest.${format}`);
			const result = await runCli([
				"export",
				file,
				"--latest",
				"--format",
				format,
				"--out",
				target,
				"--from",
				out,
				"--json",
			]);
			expect(result.code, result.stderr).toBe(0);
			expect(JSON.parse(result.stdout).records).toBe(3);
			return target;
		};
		const jsonl = readFileSync(await exported("jsonl"), "utf8")
			.trim()
			.split("\n")
			.map((line) => JSON.parse(line));
		expect(prices(jsonl.map((record) => ({ url: record.url, price: record.data.price })))).toEqual(expected);
		const { parse } = await import("csv-parse/sync");
		expect(prices(parse(readFileSync(await exported("csv")), { columns: true }))).toEqual(expected);
		const { parquetReadObjects } = await import("hyparquet");
		const parquet = readFileSync(await exported("parquet"));
		const rows = await parquetReadObjects({
			file: parquet.buffer.slice(parquet.byteOffset, parquet.byteOffset + parquet.byteLength),
		});
		expect(prices(rows as Array<{ url: string; price: unknown }>)).toEqual(expected);
		// Typed columns: every price found was a number, so the column is one (DOUBLE); http_status an INT32.
		expect(rows.map((row) => [typeof row.price, typeof row.http_status, typeof row.url])).toEqual(
			Array(3).fill(["number", "number", "string"]),
		);
		const Database = (await import("better-sqlite3")).default;
		const db = new Database(await exported("sqlite"), { readonly: true });
		const table = db.prepare("SELECT url, price FROM latest ORDER BY url").all() as Array<{
			url: string;
			price: unknown;
		}>;
		expect(prices(table)).toEqual(expected);
		const sum = db.prepare("SELECT sum(price), typeof(price), typeof(http_status) FROM latest").raw().all();
		db.close();
		expect(sum).toEqual([[32.5, "real", "integer"]]);
		// Written through a temporary file renamed at the end: nothing else is left beside the exports.
		expect(readdirSync(dir).filter((name) => name.includes(".tmp"))).toEqual([]);
		db.close();
	});
});

describe("the history after a crash", () => {
	it("a run killed mid-way (SIGKILL) leaves the history usable: what it wrote counts for freshness next time", async () => {
		const { assertBuilt, spawnCli } = await import("../helpers/spawn-cli.js");
		assertBuilt();
		const shop = await editableShop();
		const paths = Array.from({ length: 40 }, (_, index) => `/q/${index + 1}`);
		for (const path of paths) shop.pages.set(path, { status: 200, price: "1.00", ad: 0 });
		const service = await startEmulator({ scenario: { concurrency: 2, latency_ms: 20 } });
		closers.push(() => service.close());
		const dir = tempDir();
		const out = join(dir, "out");
		const file = writeJob(
			dir,
			"shop",
			[
				"name: shop",
				"defaults:",
				"  mode: request",
				"targets:",
				...paths.map((path) => `  - ${shop.url}${path}`),
				"",
			].join("\n"),
		);
		const first = spawnCli(["run", file, "--out", out, "--quiet"], envOf(service));
		for (let tries = 0; tries < 2000; tries += 1) {
			const dirs = existsSync(join(out, "shop")) ? runs(out) : [];
			if (
				dirs[0] &&
				existsSync(join(dirs[0], "results.jsonl")) &&
				readFileSync(join(dirs[0], "results.jsonl"), "utf8").split("\n").length > 6
			)
				break;
			await new Promise((resolve) => setTimeout(resolve, 10));
		}
		first.child.kill("SIGKILL");
		await first.done;
		const killed = readRecords(runs(out)[0]!);
		expect(killed.length).toBeGreaterThan(4);
		expect(killed.length).toBeLessThan(40);
		// The killed run saved no history: the next one folds what it wrote from its results.jsonl.
		const sent = service.ledger.byEndpoint("realtime").length;
		const next = await runCli(["run", file, "--out", out, "--quiet", "--freshness", "1h", "--json"], {
			env: envOf(service),
		});
		expect(next.code).toBe(0);
		expect(JSON.parse(next.stdout).targets).toMatchObject({ fresh: killed.length, total: 40 - killed.length });
		expect(service.ledger.byEndpoint("realtime").length).toBe(sent + 40 - killed.length);
	}, 30_000);
});
