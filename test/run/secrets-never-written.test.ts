import { readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

const PASSWORD = "pw-s3cret-4711";
const HEALTHCHECK_TOKEN = "hc-secret-uuid-0815";

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
	return (readdirSync(dir, { recursive: true }) as string[])
		.map((name) => join(dir, name))
		.filter((path) => statSync(path).isFile());
}

/** A Healthchecks.io-style endpoint that answers every ping. */
async function pingServer(): Promise<string> {
	const server = createServer((_req, res) => res.writeHead(200).end("OK"));
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}/${HEALTHCHECK_TOKEN}`;
}

describe('keys never reach files (docs/behaviour.md, "Keys never written")', () => {
	it("a run, a crawl, shards, their merge, a re-extraction and an export write none of the keys, URL passwords or the healthcheck URL", async () => {
		const service = await useTestService({ concurrency: 4 });
		const healthcheck = await pingServer();
		const dir = tempDir();
		const out = join(dir, "out");
		const env = {
			...service.env,
			SCRAPEJOB_SCRAPER_KEY: service.emulator.scraperKey,
			SCRAPEJOB_SCRAPER_URL: service.emulator.scraperUrl,
		};
		const site = new URL(service.site.url);
		const withPassword = (path: string) => `http://user:${PASSWORD}@${site.host}${path}`;
		const secrets = {
			"account key": service.emulator.accountKey,
			"scraper key": service.emulator.scraperKey,
			"URL password": PASSWORD,
			"healthcheck URL": HEALTHCHECK_TOKEN,
		};
		/** One command; `codes`: the exits it may end with (a crawl stopped at max_pages is incomplete: exit 1). */
		const cli = async (argv: string[], codes: readonly number[] = [0]) => {
			const result = await runCli(argv, { env, cwd: dir });
			expect(codes, `${argv.join(" ")} exited ${result.code}\n${result.stderr}`).toContain(result.code);
			for (const [what, secret] of Object.entries(secrets))
				expect(result.stdout + result.stderr, `${argv[0]}: ${what}`).not.toContain(secret);
			return result;
		};

		const shop = [
			"name: shop",
			"defaults:",
			"  mode: request",
			"output:",
			"  content: files",
			"extract:",
			"  price: {css: .price}",
			`healthcheck: ${healthcheck}`,
			"targets:",
			...[1, 2, 3, 4].map((id) => `  - {url: "${withPassword(`/product/${id}`)}", id: p${id}}`),
			"",
		].join("\n");
		writeJob(dir, "shop", shop);
		// A run (with the metrics file and the report), then a re-extraction of it and an export of the latest.
		await cli(["run", "shop.yaml", "--out", "out", "--quiet", "--metrics", join(out, "shop.prom")]);
		await cli(["extract", "shop.yaml", "--run", "latest", "--out", "out"]);
		await cli(["export", "shop.yaml", "--latest", "--out", join(dir, "latest.csv"), "--from", "out"]);
		await cli(["export", "shop.yaml", "--latest", "--out", join(dir, "latest.jsonl"), "--from", "out"]);

		// Shards, and their merge.
		writeJob(dir, "sharded", shop.replace("name: shop", "name: sharded"));
		await cli(["run", "sharded.yaml", "--out", "out", "--quiet", "--shard", "1/2"]);
		await cli(["run", "sharded.yaml", "--out", "out", "--quiet", "--shard", "2/2"]);
		const shardDirs = readdirSync(join(out, "sharded"), { withFileTypes: true })
			.filter((entry) => entry.isDirectory())
			.map((entry) => join(out, "sharded", entry.name));
		expect(shardDirs).toHaveLength(2);
		await cli(["merge", ...shardDirs, "--out", join(out, "merged")]);

		// A crawl: robots.txt and sitemaps fetched with the seed's credentials.
		writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults:",
				"  mode: request",
				"crawl: {max_depth: 1, max_pages: 6, robots: obey, sitemaps: true}",
				`healthcheck: ${healthcheck}`,
				"targets:",
				`  - ${withPassword("/product/1")}`,
				"",
			].join("\n"),
		);
		await cli(["run", "crawl.yaml", "--out", "out", "--quiet"], [0, 1]);

		const files = [...filesUnder(out), join(dir, "latest.csv"), join(dir, "latest.jsonl")];
		const names = files.map((path) => path.slice(dir.length + 1));
		// Every kind of file was written, so the search below read them.
		for (const kind of [
			"results.jsonl",
			"results.csv",
			"summary.json",
			"run.json",
			"run.log",
			"report.html",
			"shop.prom",
			"merge.json",
			"frontier",
			"pages/",
			"history.sqlite",
		]) {
			expect(
				names.some((name) => name.includes(kind)),
				`${kind} in ${names.join(", ")}`,
			).toBe(true);
		}
		const found: string[] = [];
		for (const path of files) {
			const text = readFileSync(path).toString("latin1");
			for (const [what, secret] of Object.entries(secrets))
				if (text.includes(secret)) found.push(`${what} in ${path.slice(dir.length + 1)}`);
		}
		expect(found).toEqual([]);
	}, 120_000);
});
