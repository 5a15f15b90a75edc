import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { LedgerEntry } from "../../src/emulator/index.js";
import { isRunFolderName, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite, type TargetSite } from "../helpers/target-site.js";

/** The `*` group refuses everything: only the `scrapejob` group lets the crawl in. */
const ROBOTS = [
	"User-agent: *",
	"Disallow: /",
	"",
	"User-agent: scrapejob",
	"Disallow: /private/",
	"Allow: /private/open",
	"Disallow: /*.pdf$",
	"Crawl-delay: 0.3",
	"",
].join("\n");

const LINKS = ["/a", "/b", "/private/x", "/private/open", "/doc.pdf", "/doc.pdf?page=2"];

async function startSite(robots: string | null): Promise<TargetSite> {
	return startTargetSite((req, res) => {
		if (req.url === "/robots.txt") {
			if (robots === null) res.writeHead(404).end("no");
			else res.writeHead(200, { "content-type": "text/plain" }).end(robots);
			return;
		}
		if (req.url === "/start") html(res, LINKS.map((path) => `<a href="${path}">x</a>`).join(""));
		else html(res, "<p>leaf</p>");
	});
}

function crawlYaml(origin: string, robots: "obey" | "ignore" | null, extra: string[] = []): string {
	return [
		"name: polite",
		"defaults: {mode: request}",
		"output: {content: none}",
		"concurrency: 4",
		...extra,
		`crawl: {max_depth: 1${robots ? `, robots: ${robots}` : ""}}`,
		"targets:",
		`  - ${origin}/start`,
		// A listed seed is fetched whatever robots.txt says.
		`  - ${origin}/private/seed`,
		"",
	].join("\n");
}

async function crawl(yaml: string, env: NodeJS.ProcessEnv) {
	const dir = tempDir();
	const out = join(dir, "out");
	const result = await runCli(["run", writeJob(dir, "polite", yaml), "--out", out, "--quiet"], {
		env,
	});
	const run = readdirSync(join(out, "polite")).filter(isRunFolderName)[0]!;
	return { result, summary: readSummary(join(out, "polite", run)) };
}

const fetchedPaths = (s: TargetSite) => s.requests.map((request) => request.path).sort();

/** Realtime fetches of `origin`, in the order they reached the emulator. */
function fetchesOf(entries: readonly LedgerEntry[], origin: string): LedgerEntry[] {
	return entries.filter((entry) => entry.endpoint === "realtime" && entry.url?.startsWith(origin));
}

/**
 * The runner spaces the fetch starts; the ledger stamps arrivals, and the first fetch of a run reaches
 * the emulator some ms after it started (connection, first-call work): a fifth of the delay is left for
 * that. Unpaced, the gaps are near 0.
 */
const SLACK = 0.8;

function gapsMs(entries: readonly LedgerEntry[]): number[] {
	const starts = entries.map((entry) => entry.at).sort((a, b) => a - b);
	return starts.slice(1).map((at, index) => at - starts[index]!);
}

describe("crawl.robots", () => {
	it("obey (the default): the scrapejob group's Disallow/Allow/wildcards decide the links, refused ones are counted, listed seeds fetched, robots.txt paid once", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startSite(ROBOTS);
		const { result, summary } = await crawl(crawlYaml(site.origin, null), service.env);
		expect(result.code).toBe(0);
		expect(fetchedPaths(site)).toEqual(
			["/robots.txt", "/start", "/private/seed", "/a", "/b", "/private/open", "/doc.pdf?page=2"].sort(),
		);
		expect(summary.crawl?.robots_disallowed).toBe(2);
		const charged = fetchesOf(service.emulator.ledger.entries, site.origin).reduce(
			(sum, entry) => sum + entry.creditsCharged,
			0,
		);
		// robots.txt is paid like a page, and counted: the summary's credits are what the service charged.
		expect(summary.credits.used).toBe(charged);
		expect(summary.crawl?.sitemap_credits).toBeGreaterThan(0);
	});

	it("obey: Crawl-delay spaces the fetch starts to the host (the emulator's ledger), seeds included", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startSite(ROBOTS);
		await crawl(crawlYaml(site.origin, "obey"), service.env);
		const fetches = fetchesOf(service.emulator.ledger.entries, site.origin);
		expect(fetches).toHaveLength(7);
		// Page fetches after robots.txt: each 300 ms after the one before as sent; the ledger stamps arrival,
		// which a new socket or a busy loop shifts by a few ms (unpaced, the gaps are near 0).
		const pages = fetches.filter((entry) => !entry.url?.endsWith("/robots.txt"));
		for (const gap of gapsMs(pages)) expect(gap).toBeGreaterThanOrEqual(SLACK * 300);
	});

	it("ignore: robots.txt is not fetched and every link in scope is followed", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startSite(ROBOTS);
		const { summary } = await crawl(crawlYaml(site.origin, "ignore"), service.env);
		expect(fetchedPaths(site)).toEqual(["/start", "/private/seed", ...LINKS].sort());
		expect(summary.crawl?.robots_disallowed).toBe(0);
	});

	it("a resumed crawl neither pays for robots.txt again nor forgets it", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startSite(ROBOTS);
		const dir = tempDir();
		const out = join(dir, "out");
		const yaml = (maxPages: number) =>
			crawlYaml(site.origin, "obey").replace("max_depth: 1", `max_depth: 1, max_pages: ${maxPages}`);
		const path = writeJob(dir, "polite", yaml(2));
		const first = await runCli(["run", path, "--out", out, "--quiet"], { env: service.env });
		expect(first.code).toBe(1);
		writeJob(dir, "polite", yaml(100));
		const second = await runCli(["run", path, "--out", out, "--quiet", "--resume"], { env: service.env });
		expect(second.code).toBe(0);
		expect(site.requests.filter((request) => request.path === "/robots.txt")).toHaveLength(1);
		expect(fetchedPaths(site).filter((p) => p.startsWith("/private/x") || p === "/doc.pdf")).toEqual([]);
		const run = readdirSync(join(out, "polite")).filter(isRunFolderName)[0]!;
		const summary = readSummary(join(out, "polite", run));
		expect(summary.crawl?.robots_disallowed).toBe(2);
		const charged = fetchesOf(service.emulator.ledger.entries, site.origin).reduce(
			(sum, e) => sum + e.creditsCharged,
			0,
		);
		expect(summary.credits.used).toBe(charged);
	});

	it("a missing robots.txt allows everything", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startSite(null);
		const { summary } = await crawl(crawlYaml(site.origin, "obey"), service.env);
		expect(fetchedPaths(site)).toEqual(["/robots.txt", "/start", "/private/seed", ...LINKS].sort());
		expect(summary.crawl?.robots_disallowed).toBe(0);
	});
});

describe("per_host_delay", () => {
	it("spaces fetch starts to one host by at least the delay (the emulator's ledger), any job", async () => {
		const service = await useTestService({ concurrency: 8 });
		const targets = Array.from({ length: 6 }, (_, index) => `  - ${service.site.url}/product/${index + 1}`);
		const dir = tempDir();
		const yaml = [
			"name: paced",
			"concurrency: 8",
			"defaults: {mode: request}",
			"output: {content: none}",
			"per_host_delay: 200ms",
			"targets:",
			...targets,
			"",
		].join("\n");
		const started = Date.now();
		const result = await runCli(["run", writeJob(dir, "paced", yaml), "--out", join(dir, "out"), "--quiet"], {
			env: service.env,
		});
		expect(result.code).toBe(0);
		const fetches = fetchesOf(service.emulator.ledger.entries, service.site.url);
		expect(fetches).toHaveLength(6);
		for (const gap of gapsMs(fetches)) expect(gap).toBeGreaterThanOrEqual(SLACK * 200);
		expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
	});
});
