import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type DemoSite, type Emulator, startDemoSite, startEmulator } from "../../src/emulator/index.js";
import { onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";

let site: DemoSite | undefined;
let emulator: Emulator | undefined;
afterEach(async () => {
	await emulator?.close();
	await site?.close();
	emulator = undefined;
	site = undefined;
});

async function start(credits = 10_000): Promise<{ env: NodeJS.ProcessEnv; site: DemoSite; emulator: Emulator }> {
	site = await startDemoSite({ pages: 30 });
	emulator = await startEmulator({ scenario: { concurrency: 4, credits }, searchSite: site.url });
	return {
		site,
		emulator,
		env: { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl },
	};
}

describe("map: and search: sources", () => {
	it("fetch the URLs the service's map and search endpoints return; their credits are in the summary", async () => {
		const service = await start();
		const domain = new URL(service.site.url).host;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"found",
			[
				"name: found",
				"defaults: {mode: request}",
				"output: {content: none}",
				"sources:",
				`  - map: {domain: "${domain}", max_urls: 12, url_pattern: "/product/"}`,
				"  - search: {query: [laptops, phones], max_urls: 3}",
				"    mode: browser",
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.stderr).toBe("");
		const runDir = onlyRunDir(out, "found");
		const records = readRecords(runDir);
		const mapped = records.filter((record) => record.url.includes("/product/"));
		// The demo site's sitemap index lists /product/1…30 (and the graph pages, which url_pattern leaves out).
		// Records land as fetches finish, four at a time: their order is the service's, not the listing's.
		const productNumber = (url: string) => Number(url.slice(url.lastIndexOf("/") + 1));
		expect(mapped.map((record) => record.url).sort((a, b) => productNumber(a) - productNumber(b))).toEqual(
			Array.from({ length: 12 }, (_, index) => `${service.site.url}/product/${index + 1}`),
		);
		const searched = records.filter((record) => record.url.includes("/graph/"));
		expect(searched).toHaveLength(6);
		// The search source's own options apply to its URLs.
		expect(searched.every((record) => record.mode_requested === "browser")).toBe(true);
		const summary = readSummary(runDir);
		expect(summary.discovery).toEqual([
			{ kind: "map", urls: 12, credits_used: 2 },
			{ kind: "search", urls: 6, credits_used: 2 },
		]);
		const fetchCredits = records.reduce((sum, record) => sum + record.credits_used, 0);
		expect(summary.credits.used).toBe(fetchCredits + 4);
		const asked = service.emulator.ledger.entries.filter(
			(entry) => entry.endpoint === "map" || entry.endpoint === "search",
		);
		expect(asked).toHaveLength(2);
	});

	it("an answer's URL a listed target could not be (not a URL, past 64 KiB) is left out, not paid for", async () => {
		const target = await startTargetSite((req, res, origin) => {
			if (req.url === "/sitemap.xml") {
				const locs = [`${origin}/ok`, "http://[oops/x", `${origin}/long?q=${"x".repeat(70_000)}`].map(
					(url) => `<url><loc>${url}</loc></url>`,
				);
				res.writeHead(200, { "content-type": "application/xml" }).end(`<urlset>${locs.join("")}</urlset>`);
			} else html(res, "<p>page</p>");
		});
		emulator = await startEmulator({ scenario: { concurrency: 4 } });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"found",
			`name: found\ndefaults: {mode: request}\nsources:\n  - map: {domain: "${new URL(target.origin).host}", max_urls: 10}\n`,
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], {
			env: { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl },
		});
		expect(result.code).toBe(0);
		expect(readRecords(onlyRunDir(out, "found")).map((record) => record.url)).toEqual([`${target.origin}/ok`]);
		expect(emulator.ledger.byEndpoint("realtime").map((entry) => entry.url)).toEqual([`${target.origin}/ok`]);
	});

	it("a domain with nothing to list finds nothing; a refused call (402) is reported; the run goes on with the other targets", async () => {
		const service = await start(10);
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"bad",
			[
				"name: bad",
				"defaults: {mode: request}",
				"output: {content: none}",
				`targets: ["${service.site.url}/product/1"]`,
				"sources:",
				'  - map: {domain: "no-such-host.invalid", max_urls: 5}',
				"  - search: {query: [a, b, c, d, e, f, g, h, i, j]}",
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code).toBe(0);
		const runDir = onlyRunDir(out, "bad");
		expect(readRecords(runDir)).toHaveLength(1);
		// 10 credits: the map call takes 2; the search's 10 queries cost 10, more than is left: refused.
		const discovery = readSummary(runDir).discovery!;
		expect(discovery[0]).toEqual({ kind: "map", urls: 0, credits_used: 2 });
		expect(discovery[1]).toMatchObject({ kind: "search", urls: 0, credits_used: 0 });
		expect(discovery[1]?.error).toMatch(/402|credits/i);
	});

	it("shards each ask the map call and fetch their own part of what it found; the merged summary counts every credit", async () => {
		const service = await start();
		const domain = new URL(service.site.url).host;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"found",
			[
				"name: found",
				"defaults: {mode: request}",
				"output: {content: none}",
				"sources:",
				`  - map: {domain: "${domain}", max_urls: 8, url_pattern: "/product/"}`,
				"",
			].join("\n"),
		);
		for (const shard of ["1/2", "2/2"]) {
			const result = await runCli(["run", job, "--out", out, "--quiet", "--shard", shard], { env: service.env });
			expect(result.code, result.stderr).toBe(0);
		}
		const shards = readdirSync(join(out, "found")).filter((name) => name.includes("-shard-"));
		expect(shards).toHaveLength(2);
		const merged = await runCli([
			"merge",
			...shards.map((name) => join(out, "found", name)),
			"--out",
			join(dir, "merged"),
			"--json",
		]);
		expect(merged.code, merged.stderr).toBe(0);
		const summary = JSON.parse(merged.stdout) as { credits: { used: number } };
		expect(service.emulator.ledger.entries.filter((entry) => entry.endpoint === "map")).toHaveLength(2);
		// Each URL the calls found fetched once, by its own shard.
		const fetched = service.emulator.ledger.byEndpoint("realtime").map((entry) => entry.url);
		expect(fetched).toHaveLength(8);
		expect(new Set(fetched).size).toBe(8);
		expect(readRecords(join(dir, "merged"))).toHaveLength(8);
		expect(summary.credits.used).toBe(service.emulator.ledger.totalCharged());
	});
});
