/**
 * The peers row's Crawlee client (`bench/peers-bench.ts`): an `HttpCrawler` (got-scraping) that POSTs
 * `{url, mode: "request"}` for each target to the emulator's realtime endpoint, at `minConcurrency` =
 * `maxConcurrency` = desired concurrency = C (its autoscaled pool would otherwise start lower and grow
 * only while the machine is idle), its default retries,
 * its default request queue (kept in `CRAWLEE_STORAGE_DIR`), and one JSON line per page in a JSONL
 * file. Crawlee is not a dependency of the project: the orchestrator installs `@crawlee/http` into a
 * folder outside the repository and passes it here; the module is loaded from there by path.
 * Measures itself like the other clients (`startMeter`) and reports over IPC.
 */
import { createWriteStream, readFileSync } from "node:fs";
import { join } from "node:path";
import { finished } from "node:stream/promises";
import { pathToFileURL } from "node:url";
import { exitWithParent, readConfig, sendAndExit, startMeter } from "./protocol.js";

export interface CrawleeClientConfig {
	readonly urlsFile: string;
	readonly concurrency: number;
	readonly realtimeUrl: string;
	readonly scraperKey: string;
	readonly outFile: string;
	/** The `npm install --prefix` folder that holds `node_modules/@crawlee/http`. */
	readonly crawleePrefix: string;
}

/** The little of `@crawlee/http` this client uses (it is not a dependency, so it has no types here). */
interface CrawleeModule {
	readonly HttpCrawler: new (
		options: Record<string, unknown>,
	) => {
		run(requests: unknown[]): Promise<{ requestsFinished: number; requestsFailed: number }>;
	};
	readonly Request: new (options: Record<string, unknown>) => unknown;
}

interface HandlerContext {
	readonly request: { readonly userData: { readonly target: string } };
	readonly response: { readonly statusCode?: number };
	readonly body: string | Buffer;
}

const config = readConfig<CrawleeClientConfig>();
exitWithParent();

const startup = process.cpuUsage();
const crawlee = (await import(
	pathToFileURL(join(config.crawleePrefix, "node_modules", "@crawlee", "http", "index.mjs")).href
)) as CrawleeModule;
const loaded = process.cpuUsage(startup);

const meter = startMeter();
const targets = readFileSync(config.urlsFile, "utf8")
	.split("\n")
	.filter((line) => line !== "");
const out = createWriteStream(config.outFile);
let written = 0;
const crawler = new crawlee.HttpCrawler({
	minConcurrency: config.concurrency,
	maxConcurrency: config.concurrency,
	// HttpCrawler starts its pool at a desired concurrency of 10 and only grows it while the machine is
	// idle, which a busy 2-core machine never is: at 10 the pool never reaches `minConcurrency`.
	autoscaledPoolOptions: { desiredConcurrency: config.concurrency },
	async requestHandler({ request, response, body }: HandlerContext) {
		written += 1;
		const line = `${JSON.stringify({ url: request.userData.target, status: response.statusCode, bytes: body.length })}\n`;
		if (!out.write(line)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
	},
});
const headers = { "content-type": "application/json", "x-api-key": config.scraperKey };
const stats = await crawler.run(
	targets.map(
		(target) =>
			new crawlee.Request({
				url: config.realtimeUrl,
				method: "POST",
				headers,
				payload: JSON.stringify({ url: target, mode: "request" }),
				// Every request goes to the same endpoint: without its own key, Crawlee would keep one.
				uniqueKey: target,
				userData: { target },
			}),
	),
);
out.end();
await finished(out);
const measured = meter.stop();
sendAndExit({
	type: "report",
	...measured,
	startupCpuMs: (loaded.user + loaded.system) / 1000,
	results: written,
	exitCode: stats.requestsFailed === 0 ? 0 : 1,
});
