import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runJobFile } from "../../src/library/index.js";
import { onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

/**
 * A crawl whose domain's breaker opens (docs/behaviour.md, "Breakers"): the pages it parks have no record, so
 * the run is not complete, and a resume after the cool-down fetches them — and the pages only their links
 * lead to — once each.
 */
beforeAll(() => assertBuilt());

const PAGES = 30;

/** A chain of pages, each linking to the next two; each says SOLDOUT (the job's block signature) until `lift`. */
async function parkingCrawl() {
	let soldOut = true;
	const site = await startTargetSite((req, res) => {
		const page = Number((req.url ?? "/").replace(/^\/p\//, "")) || 0;
		const links = [page + 1, page + 2]
			.filter((next) => next < PAGES)
			.map((next) => `<a href="/p/${next}">p${next}</a>`)
			.join("");
		html(res, `${soldOut ? "SOLDOUT" : "<h1>in stock</h1>"}${links}`);
	});
	const service = await useTestService();
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(
		dir,
		"parkedcrawl",
		[
			"name: parkedcrawl",
			"concurrency: 1",
			"defaults: {mode: request}",
			"block_signatures: [SOLDOUT]",
			"breaker: {cool_down: 1s}",
			`crawl: {max_depth: ${PAGES}}`,
			"targets:",
			`  - ${site.origin}/p/0`,
			"",
		].join("\n"),
	);
	return {
		service,
		out,
		job,
		lift: () => {
			soldOut = false;
		},
	};
}

/** Every page has one record and was sent once; the figures agree with the service's ledger. */
function expectEveryPageOnce(service: TestService, runDir: string): void {
	const records = readRecords(runDir);
	const urls = records.map((record) => new URL(record.url).pathname);
	expect(new Set(urls).size).toBe(PAGES);
	expect(urls).toHaveLength(PAGES);
	const fetched = service.emulator.ledger
		.byEndpoint("realtime")
		.map((entry) => entry.url ?? "")
		.filter((url) => url.includes("/p/"));
	expect(new Set(fetched).size).toBe(PAGES);
	expect(fetched).toHaveLength(PAGES);
	const summary = readSummary(runDir);
	expect(summary.complete).toBe(true);
	expect(summary.breakers).toEqual([]);
	expect(summary.credits.used).toBe(service.emulator.ledger.totalCharged());
	expect(records.reduce((sum, record) => sum + record.credits_used, 0)).toBe(
		summary.credits.used - summary.crawl!.sitemap_credits,
	);
}

describe("crawl with an open breaker", () => {
	it("parked pages leave the run incomplete; --continue after the cool-down crawls the rest, every page paid once", async () => {
		const { service, out, job, lift } = await parkingCrawl();
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code, first.stderr).toBe(6);
		const runDir = onlyRunDir(out, "parkedcrawl");
		const stopped = readSummary(runDir);
		expect(readRecords(runDir)).toHaveLength(8);
		expect(stopped.breakers).toEqual([expect.objectContaining({ parked: 2 })]);
		expect(stopped.complete).toBe(false);

		lift();
		const openedAt = Date.parse(stopped.breakers![0]!.opened_at);
		await until(() => Date.now() >= openedAt + 1000, "the breaker's cool-down");
		const resumed = await runCli(["run", job, "--out", out, "--continue", "--quiet"], { env: service.env });
		expect(resumed.code, resumed.stderr).toBe(0);
		expect(onlyRunDir(out, "parkedcrawl")).toBe(runDir);
		expectEveryPageOnce(service, runDir);
	}, 60_000);

	it("runJobFile the same: an incomplete run, then its resume crawls the rest", async () => {
		const { service, out, job, lift } = await parkingCrawl();
		const first = await runJobFile(job, { out, env: service.env });
		expect(first.complete).toBe(false);
		expect(first.breakers).toEqual([expect.objectContaining({ parked: 2 })]);
		lift();
		const openedAt = Date.parse(first.breakers![0]!.opened_at);
		await until(() => Date.now() >= openedAt + 1000, "the breaker's cool-down");
		const resumed = await runJobFile(job, { out, env: service.env, resume: basename(first.run_dir) });
		expect(resumed.complete).toBe(true);
		expectEveryPageOnce(service, first.run_dir);
	}, 60_000);
});

describe("a map: source with an open breaker", () => {
	it("the targets it parked leave the run incomplete; the resume fetches them once, without asking the map again", async () => {
		let soldOut = true;
		const site = await startTargetSite((req, res, origin) => {
			if (req.url === "/sitemap.xml") {
				const locs = Array.from({ length: 12 }, (_, index) => `<url><loc>${origin}/p/${index}</loc></url>`);
				res.writeHead(200, { "content-type": "application/xml" }).end(`<urlset>${locs.join("")}</urlset>`);
			} else html(res, soldOut ? "SOLDOUT" : "<h1>in stock</h1>");
		});
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"parkedmap",
			[
				"name: parkedmap",
				"concurrency: 1",
				"defaults: {mode: request}",
				"block_signatures: [SOLDOUT]",
				"breaker: {cool_down: 1s}",
				"sources:",
				`  - map: {domain: "${new URL(site.origin).host}", max_urls: 12}`,
				"",
			].join("\n"),
		);
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code, first.stderr).toBe(6);
		const runDir = onlyRunDir(out, "parkedmap");
		const stopped = readSummary(runDir);
		expect(stopped.breakers).toEqual([expect.objectContaining({ parked: 4 })]);
		expect(stopped.complete).toBe(false);

		soldOut = false;
		await until(() => Date.now() >= Date.parse(stopped.breakers![0]!.opened_at) + 1000, "the breaker's cool-down");
		const resumed = await runCli(["run", job, "--out", out, "--continue", "--quiet"], { env: service.env });
		expect(resumed.code, resumed.stderr).toBe(0);
		const records = readRecords(runDir);
		expect(new Set(records.map((record) => record.url)).size).toBe(12);
		expect(records).toHaveLength(12);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(12);
		expect(service.emulator.ledger.entries.filter((entry) => entry.endpoint === "map")).toHaveLength(1);
		const summary = readSummary(runDir);
		expect(summary.complete).toBe(true);
		expect(summary.credits.used).toBe(service.emulator.ledger.totalCharged());
	}, 60_000);
});
