import { existsSync, readdirSync, readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { join } from "node:path";
import { Readable } from "node:stream";
import { createGzip, gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { creditCostRange } from "../../src/common/index.js";
import { SITEMAP_MAX_URLS } from "../../src/crawl/index.js";
import { runJobFile } from "../../src/library/index.js";
import type { RunSummary } from "../../src/output/index.js";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite, type TargetSite } from "../helpers/target-site.js";

/** What one robots.txt or sitemap fetch costs (mode: request). */
const COST = creditCostRange({ mode: "request" }).max;

beforeAll(() => assertBuilt());

function urlset(locs: Iterable<string>): string {
	let xml = '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n';
	for (const loc of locs) xml += `<url><loc>${loc}</loc></url>\n`;
	return `${xml}</urlset>\n`;
}

function sitemapIndex(locs: Iterable<string>): string {
	let xml = '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">';
	for (const loc of locs) xml += `<sitemap><loc>${loc}</loc></sitemap>`;
	return `${xml}</sitemapindex>`;
}

/** A urlset of `count` `<loc>`s generated as a stream (with back-pressure), gzipped on the way out. */
function streamGzipUrlset(res: ServerResponse, count: number, locOf: (index: number) => string): void {
	async function* chunks() {
		yield '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">';
		let chunk = "";
		for (let index = 0; index < count; index++) {
			chunk += `<url><loc>${locOf(index)}</loc></url>`;
			if (chunk.length > 64 * 1024) {
				yield chunk;
				chunk = "";
			}
		}
		yield `${chunk}</urlset>`;
	}
	res.writeHead(200, { "content-type": "application/x-gzip" });
	Readable.from(chunks()).pipe(createGzip()).pipe(res);
}

function runDirOf(out: string, job: string): string {
	const runs = readdirSync(join(out, job)).filter((name) => existsSync(join(out, job, name, "run.json")));
	expect(runs).toHaveLength(1);
	return join(out, job, runs[0]!);
}

/** Credits the service charged for robots.txt and sitemap files. */
function sitemapCharges(svc: TestService): number {
	return svc.emulator.ledger.entries
		.filter((entry) => entry.endpoint === "realtime" && /robots\.txt|\.xml/.test(entry.url ?? ""))
		.reduce((sum, entry) => sum + entry.creditsCharged, 0);
}

function allCharges(svc: TestService): number {
	return svc.emulator.ledger.entries.reduce((sum, entry) => sum + entry.creditsCharged, 0);
}

function crawlYaml(name: string, seed: string, crawl: string[], extra: string[] = []): string {
	return [
		`name: ${name}`,
		"defaults: {mode: request}",
		"output: {content: none}",
		...extra,
		"crawl:",
		"  sitemaps: true",
		...crawl.map((line) => `  ${line}`),
		`targets: [${seed}]`,
		"",
	].join("\n");
}

/** Requests the site got per path. */
function asked(target: TargetSite): Map<string, number> {
	const counts = new Map<string, number>();
	for (const request of target.requests) counts.set(request.path, (counts.get(request.path) ?? 0) + 1);
	return counts;
}

function expectCreditsAdd(summary: RunSummary, svc: TestService): void {
	expect(summary.crawl?.sitemap_credits).toBe(sitemapCharges(svc));
	expect(summary.crawl?.sitemap_credits).toBeGreaterThan(0);
	expect(summary.credits.used).toBe(allCharges(svc));
}

/**
 * A gzip bomb served as a stream: gzip members (one per MiB of `a`s, compressed once) concatenated,
 * which gunzip reads as one document — ~1 MB on the wire, `mib` MiB inside one `<loc>`.
 */
function streamGzipBomb(res: ServerResponse, origin: string, mib: number): void {
	const before = gzipSync(`<?xml version="1.0"?><urlset><url><loc>${origin}/p/before-bomb</loc></url><url><loc>`);
	const mebibyte = gzipSync(Buffer.alloc(1024 * 1024, "a"), { level: 9 });
	const after = gzipSync(`</loc></url><url><loc>${origin}/p/after-bomb</loc></url></urlset>`);
	async function* members() {
		yield before;
		for (let index = 0; index < mib; index++) yield mebibyte;
		yield after;
	}
	res.writeHead(200, { "content-type": "application/x-gzip" });
	Readable.from(members()).pipe(res);
}

describe("crawl: sitemap bounds (sitemaps.org: 50 MB uncompressed, 50,000 URLs a file)", () => {
	it("a gzip bomb (1 MB inflating to 1 GiB) and a file of 50,010 URLs are cut at their bounds with a warning; the crawl goes on from its seeds", async () => {
		const service = await useTestService({ concurrency: 8 });
		const site = await startTargetSite((req, res, origin) => {
			const path = req.url ?? "/";
			if (path === "/robots.txt") {
				res.writeHead(200, { "content-type": "text/plain" });
				res.end(`User-agent: *\nSitemap: ${origin}/bomb.xml.gz\nSitemap: ${origin}/many.xml.gz\n`);
			} else if (path === "/bomb.xml.gz") streamGzipBomb(res, origin, 1024);
			else if (path === "/many.xml.gz") {
				// The first 3 and the last 10 are pages; the last 10 lie past the bound.
				const count = SITEMAP_MAX_URLS + 10;
				streamGzipUrlset(
					res,
					count,
					(index) => `${origin}/${index < 3 || index >= count - 10 ? "p" : "skip"}/${index}`,
				);
			} else html(res, `page ${path}`);
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"bomb",
			crawlYaml("bomb", `${site.origin}/home`, ["max_depth: 1", "max_pages: 100", 'exclude: ["/skip/"]']),
		);
		const started = Date.now();
		const result = await runCli(["run", job, "--out", out], { env: service.env });
		expect(result.stderr).not.toMatch(/invalid_source|Invalid string length/);
		expect(result.code, result.stderr).toBe(0);
		expect(Date.now() - started).toBeLessThan(30_000);
		expect(result.stderr).toMatch(
			/bomb\.xml\.gz is past the sitemaps\.org bound of a file: read up to its first 50 MiB uncompressed/,
		);
		expect(result.stderr).toMatch(
			/many\.xml\.gz is past the sitemaps\.org bound of a file: read up to its first 50,000 URLs/,
		);
		const paths = readRecords(runDirOf(out, "bomb"))
			.map((record) => new URL(record.url).pathname)
			.sort();
		expect(paths).toEqual(["/home", "/p/0", "/p/1", "/p/2", "/p/before-bomb"]);
	}, 60_000);
});

describe("crawl: sitemaps", () => {
	it("streams a gzipped sitemap of 50,000 <loc>s (sitemaps.org's bound) and a Content-Encoding: gzip one; pages are depth 0; credits counted", async () => {
		const service = await useTestService({ concurrency: 8 });
		const LOCS = SITEMAP_MAX_URLS;
		const site = await startTargetSite((req, res, origin) => {
			const path = req.url ?? "/";
			if (path === "/robots.txt") {
				res.writeHead(200, { "content-type": "text/plain" });
				res.end(`User-agent: *\nSitemap: ${origin}/big.xml.gz\nSitemap: ${origin}/ce.xml\n`);
			} else if (path === "/big.xml.gz") {
				// All but the last 10 are excluded: every <loc> is read, few pages are fetched.
				streamGzipUrlset(res, LOCS, (index) => `${origin}/${index < LOCS - 10 ? "skip" : "p"}/${index}`);
			} else if (path === "/ce.xml") {
				res.writeHead(200, { "content-type": "application/xml", "content-encoding": "gzip" });
				res.end(gzipSync(urlset([0, 1, 2].map((index) => `${origin}/p/ce-${index}?a=1&amp;b=${index}`))));
			} else html(res, `page ${path} <a href="/p/ce-0?b=0&a=1">linked</a>`);
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"big",
			crawlYaml("big", `${site.origin}/home`, ["max_depth: 2", "max_pages: 1000", 'exclude: ["/skip/"]']),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.stderr).not.toMatch(/Maximum call stack|invalid_source|sitemaps\.org bound/);
		expect(result.code).toBe(0);
		const runDir = runDirOf(out, "big");
		const records = readRecords(runDir);
		const paths = records.map((record) => new URL(record.url).pathname + new URL(record.url).search).sort();
		expect(paths).toEqual(
			[
				"/home",
				...Array.from({ length: 10 }, (_, index) => `/p/${LOCS - 10 + index}`),
				"/p/ce-0?a=1&b=0",
				"/p/ce-1?a=1&b=1",
				"/p/ce-2?a=1&b=2",
			].sort(),
		);
		// Sitemap pages are depth 0 (the seed's link to /p/ce-0 does not make it depth 1).
		expect(records.every((record) => record.depth === 0 && record.parent === null)).toBe(true);
		const counts = asked(site);
		expect([...counts.values()].every((count) => count === 1)).toBe(true);
		const summary = readSummary(runDir);
		expectCreditsAdd(summary, service);
		expect(summary.crawl?.sitemap_credits).toBe(3 * COST);
		expect(summary.complete).toBe(true);
		// The bodies waiting to be read are gone once read.
		expect(readdirSync(join(runDir, "sitemaps"))).toEqual([]);
	}, 60_000);

	it("takes a sitemap's <loc>s only up to max_pages; --resume with a larger one reads on in the kept body, paying nothing twice", async () => {
		const service = await useTestService({ concurrency: 8 });
		const LOCS = 600_000;
		const site = await startTargetSite((req, res, origin) => {
			const path = req.url ?? "/";
			if (path === "/robots.txt") res.writeHead(404).end();
			else if (path === "/sitemap.xml") streamGzipUrlset(res, LOCS, (index) => `${origin}/p/${index}`);
			else html(res, "leaf");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "cut", crawlYaml("cut", `${site.origin}/home`, ["max_depth: 0", "max_pages: 20"]));
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code).toBe(1);
		const runDir = runDirOf(out, "cut");
		expect(readRecords(runDir)).toHaveLength(20);
		expect(readSummary(runDir)).toMatchObject({ complete: false, crawl: { stopped_by: "max_pages" } });
		// The frontier holds a batch of the sitemap's pages, not its 600,000.
		const frontierLines = readFileSync(join(runDir, "frontier.jsonl"), "utf8").trim().split("\n").length;
		expect(frontierLines).toBeLessThan(1100);

		writeJob(dir, "cut", crawlYaml("cut", `${site.origin}/home`, ["max_depth: 0", "max_pages: 1100"]));
		const summary = await runJobFile(job, { out, env: service.env, resume: true });
		const records = readRecords(runDir);
		expect(records).toHaveLength(1100);
		// The pages are the sitemap's first 1,099 in order, each asked once; the sitemap was paid once.
		const expected = ["/home", ...Array.from({ length: 1099 }, (_, index) => `/p/${index}`)];
		expect(records.map((record) => new URL(record.url).pathname).sort()).toEqual(expected.sort());
		const counts = asked(site);
		expect(counts.get("/sitemap.xml")).toBe(1);
		expect([...counts.values()].every((count) => count === 1)).toBe(true);
		// robots.txt's 404 is not charged: the sitemap's fetch is all.
		expect(summary.crawl?.sitemap_credits).toBe(COST);
		expect(summary.crawl?.sitemap_credits).toBe(sitemapCharges(service));
		expect(summary.credits.used).toBe(allCharges(service));
	}, 60_000);

	it("a budget stop in the middle of the sitemap files: --resume --max-credits reads exactly the files left", async () => {
		const service = await useTestService({ concurrency: 4 });
		const FILES = 10;
		const site = await startTargetSite((req, res, origin) => {
			const path = req.url ?? "/";
			const file = /^\/s\/(\d+)\.xml$/.exec(path);
			if (path === "/robots.txt")
				res.writeHead(200, { "content-type": "text/plain" }).end(`Sitemap: ${origin}/index.xml`);
			else if (path === "/index.xml") {
				res.writeHead(200, { "content-type": "application/xml" });
				res.end(sitemapIndex(Array.from({ length: FILES }, (_, index) => `${origin}/s/${index}.xml`)));
			} else if (file) {
				res.writeHead(200, { "content-type": "application/xml" });
				res.end(urlset([0, 1, 2].map((index) => `${origin}/p/${file[1]}-${index}`)));
			} else html(res, "leaf");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		// robots.txt, the index and 4 files fit; the 5th file does not.
		const job = writeJob(
			dir,
			"budget",
			crawlYaml("budget", `${site.origin}/home`, ["max_depth: 0"], [`max_credits: ${6 * COST}`]),
		);
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code).toBe(1);
		const runDir = runDirOf(out, "budget");
		const stopped = readSummary(runDir);
		expect(stopped.stopped_reason).toBe("budget_exhausted");
		expect(stopped.crawl?.sitemap_credits).toBe(6 * COST);
		expect(stopped.credits.used).toBe(allCharges(service));
		expect(readRecords(runDir)).toHaveLength(0);

		// The credits the sitemaps cost are in the resumed run's budget: one more file fits, not seven.
		const more = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--max-credits", `${7 * COST}`], {
			env: service.env,
		});
		expect(more.code).toBe(1);
		expect(asked(site).has("/s/4.xml")).toBe(true);
		expect(asked(site).has("/s/5.xml")).toBe(false);
		expect(readSummary(runDir).crawl?.sitemap_credits).toBe(7 * COST);

		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume", "--max-credits", "5000"], {
			env: service.env,
		});
		expect(resumed.code).toBe(0);
		const records = readRecords(runDir);
		expect(records).toHaveLength(1 + FILES * 3);
		const counts = asked(site);
		expect([...counts.entries()].filter(([, count]) => count !== 1)).toEqual([]);
		const summary = readSummary(runDir);
		expect(summary.complete).toBe(true);
		expectCreditsAdd(summary, service);
		expect(summary.crawl?.sitemap_credits).toBe((2 + FILES) * COST);
	});

	it("SIGKILL while reading slow sitemaps, then --resume: no file read before the kill is fetched again, credits all counted", async () => {
		const service = await useTestService({ concurrency: 4 });
		const FILES = 8;
		const HELD = 4;
		let held: ServerResponse | null = null;
		let onHeld: () => void = () => undefined;
		const heldNow = new Promise<void>((resolve) => {
			onHeld = resolve;
		});
		const site = await startTargetSite((req, res, origin) => {
			const path = req.url ?? "/";
			const file = /^\/s\/(\d+)\.xml$/.exec(path);
			if (path === "/robots.txt")
				res.writeHead(200, { "content-type": "text/plain" }).end(`Sitemap: ${origin}/index.xml`);
			else if (path === "/index.xml") {
				res.writeHead(200, { "content-type": "application/xml" });
				res.end(sitemapIndex(Array.from({ length: FILES }, (_, index) => `${origin}/s/${index}.xml`)));
			} else if (file) {
				// The first ask for file HELD hangs: the crawl is killed while it waits.
				if (Number(file[1]) === HELD && held === null) {
					held = res;
					onHeld();
					return;
				}
				res.writeHead(200, { "content-type": "application/xml" });
				res.end(urlset([0, 1].map((index) => `${origin}/p/${file[1]}-${index}`)));
			} else html(res, "leaf");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "kill", crawlYaml("kill", `${site.origin}/home`, ["max_depth: 0"]));
		const first = spawnCli(["run", job, "--out", out, "--quiet"], service.env);
		await heldNow;
		first.child.kill("SIGKILL");
		await first.done;
		(held as ServerResponse | null)?.destroy();
		const runDir = runDirOf(out, "kill");
		// Files before the held one were read (their pages journalled) before it was asked for.
		const frontier = readFileSync(join(runDir, "frontier.jsonl"), "utf8");
		for (let index = 0; index < HELD; index++) expect(frontier).toContain(`/p/${index}-1"`);

		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env: service.env });
		expect(resumed.code).toBe(0);
		const records = readRecords(runDir);
		expect(records).toHaveLength(1 + FILES * 2);
		const counts = asked(site);
		// Only the file in flight at the kill was asked for twice.
		expect([...counts.entries()].filter(([, count]) => count !== 1)).toEqual([[`/s/${HELD}.xml`, 2]]);
		const summary = readSummary(runDir);
		expect(summary.complete).toBe(true);
		expectCreditsAdd(summary, service);
	});

	it("/sitemap.xml when robots.txt names none; its pages are depth 0 even when a seed's link reaches them first", async () => {
		const service = await useTestService({ concurrency: 4 });
		let homeServed: () => void = () => undefined;
		const homeDone = new Promise<void>((resolve) => {
			homeServed = resolve;
		});
		const site = await startTargetSite((req, res, origin) => {
			const path = req.url ?? "/";
			if (path === "/robots.txt") {
				// Held until the seed was fetched (or 300 ms): a crawl that fetches seeds while reading
				// sitemaps journals /p/x from the seed's link first.
				void Promise.race([homeDone, new Promise((resolve) => setTimeout(resolve, 300))]).then(() =>
					res.writeHead(200, { "content-type": "text/plain" }).end("User-agent: *\nDisallow:\n"),
				);
			} else if (path === "/sitemap.xml") {
				res.writeHead(200, { "content-type": "application/xml" }).end(urlset([`${origin}/p/x`]));
			} else if (path === "/home") {
				html(res, '<a href="/p/x">x</a>');
				homeServed();
			} else html(res, "leaf");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "depth", crawlYaml("depth", `${site.origin}/home`, ["max_depth: 3"]));
		const summary = await runJobFile(job, { out, env: service.env });
		expect(summary.complete).toBe(true);
		const records = readRecords(runDirOf(out, "depth"));
		const x = records.find((record) => record.url.endsWith("/p/x"));
		expect(x).toMatchObject({ depth: 0, parent: null });
		expect(asked(site).get("/sitemap.xml")).toBe(1);
	});
});
