import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runJobFile } from "../../src/library/index.js";
import { readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite, type TargetSite } from "../helpers/target-site.js";

/** A binary tree of pages: /t/i links /t/2i+1 and /t/2i+2. */
async function startTreeSite(failing: ReadonlySet<string> = new Set()): Promise<TargetSite> {
	return startTargetSite((req, res) => {
		const index = Number(/^\/t\/(\d+)$/.exec(req.url ?? "")?.[1] ?? -1);
		if (index < 0 || failing.has(req.url ?? "")) return html(res, "none", 404);
		html(res, `<a href="/t/${2 * index + 1}">l</a> <a href="/t/${2 * index + 2}">r</a>`);
	});
}

function yaml(origin: string, content: "files" | "none", maxPages: number): string {
	return [
		"name: fresh",
		"defaults: {mode: request}",
		`output: {content: ${content}}`,
		"freshness: 1h",
		// robots.txt is not what this test counts (robots.test.ts is).
		`crawl: {max_depth: 20, max_pages: ${maxPages}, robots: ignore}`,
		`targets: [${origin}/t/0]`,
		"",
	].join("\n");
}

function runDirs(out: string): string[] {
	const jobDir = join(out, "fresh");
	return readdirSync(jobDir)
		.filter((name) => existsSync(join(jobDir, name, "run.json")))
		.sort()
		.map((name) => join(jobDir, name));
}

function askedPaths(target: TargetSite): Map<string, number> {
	const counts = new Map<string, number>();
	for (const request of target.requests) counts.set(request.path, (counts.get(request.path) ?? 0) + 1);
	return counts;
}

describe("crawl × freshness", () => {
	it("content: files — fresh pages are not paid again, their links are read from their stored pages", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startTreeSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "fresh", yaml(site.origin, "files", 11));
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code).toBe(1);
		const [firstRun] = runDirs(out);
		expect(readRecords(firstRun!)).toHaveLength(11);

		writeJob(dir, "fresh", yaml(site.origin, "files", 40));
		const summary = await runJobFile(job, { out, env: service.env });
		const secondRun = runDirs(out).find((dir) => dir !== firstRun)!;
		const records = readRecords(secondRun);
		expect(records).toHaveLength(40);
		expect(summary.targets.fresh).toBe(11);
		expect(summary.crawl).toMatchObject({ fresh: 11, refetched_for_links: 0, pages: 40 });
		// Every page asked for once across both runs: the fresh ones were not fetched again.
		const counts = askedPaths(site);
		expect([...counts.values()].every((count) => count === 1)).toBe(true);
		expect(counts.size).toBe(51);
		// The new pages are below the fresh ones, at their BFS depth.
		const firstUrls = new Set(readRecords(firstRun!).map((record) => record.url));
		expect(records.some((record) => firstUrls.has(record.url))).toBe(false);
		expect(Math.min(...records.map((record) => record.depth!))).toBeGreaterThanOrEqual(3);
	});

	it("content: none — fresh pages are fetched again only to follow their links, counted as refetched_for_links", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startTreeSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "fresh", yaml(site.origin, "none", 11));
		await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		const [firstRun] = runDirs(out);

		writeJob(dir, "fresh", yaml(site.origin, "none", 40));
		const second = await runCli(["run", job, "--out", out, "--quiet", "--json"], { env: service.env });
		const summary = JSON.parse(second.stdout) as { crawl: { refetched_for_links: number; fresh: number } };
		expect(summary.crawl).toMatchObject({ refetched_for_links: 11, fresh: 0 });
		const records = readRecords(runDirs(out).find((dir) => dir !== firstRun)!);
		expect(records).toHaveLength(40);
		const counts = askedPaths(site);
		expect([...counts.values()].filter((count) => count === 2)).toHaveLength(11);
		expect(counts.size).toBe(40);
	});

	it("content: none — a fresh page at max_depth is not fetched again: its links are not wanted", async () => {
		const service = await useTestService({ concurrency: 4 });
		const site = await startTreeSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "fresh", yaml(site.origin, "none", 40).replace("max_depth: 20", "max_depth: 1"));
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code, first.stderr).toBe(0);
		expect(site.requests).toHaveLength(3);
		const second = await runCli(["run", job, "--out", out, "--quiet", "--json"], { env: service.env });
		expect(second.code, second.stderr).toBe(0);
		const summary = JSON.parse(second.stdout) as {
			targets: { fresh: number };
			crawl: { refetched_for_links: number; fresh: number };
		};
		// The seed is fetched again for its links (none were kept); /t/1 and /t/2 at depth 1 are fresh.
		expect(summary.crawl).toMatchObject({ refetched_for_links: 1, fresh: 2 });
		expect(summary.targets.fresh).toBe(2);
		expect([...askedPaths(site)].sort()).toEqual([
			["/t/0", 2],
			["/t/1", 1],
			["/t/2", 1],
		]);
	});

	it("a seed or a crawled page whose latest record failed is not fresh, however recent its last ok record", async () => {
		const service = await useTestService({ concurrency: 4 });
		const failing = new Set<string>();
		const site = await startTreeSite(failing);
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "fresh", yaml(site.origin, "files", 7));
		const run = (freshness: string) =>
			runCli(["run", job, "--out", out, "--quiet", "--freshness", freshness], { env: service.env });
		await run("1h");
		const asked = (path: string) => askedPaths(site).get(path) ?? 0;
		expect(asked("/t/2")).toBe(1);

		// A crawled page fails in a later run; the next run within the hour fetches it again, not its fresh parent.
		failing.add("/t/2");
		await run("0");
		expect(asked("/t/2")).toBe(2);
		failing.clear();
		await run("1h");
		expect(asked("/t/2")).toBe(3);
		expect(asked("/t/0")).toBe(2);

		// Likewise the seed.
		failing.add("/t/0");
		await run("0");
		expect(asked("/t/0")).toBe(3);
		failing.clear();
		await run("1h");
		expect(asked("/t/0")).toBe(4);
	});
});

describe("crawl × freshness × redirects", () => {
	/**
	 * /t/0 links /r/1 (a redirect to the folder page /d/1/, whose links are relative) and /t/2, which links
	 * the folder page under its own address.
	 */
	async function startRedirectSite(): Promise<TargetSite> {
		return startTargetSite((req, res) => {
			const path = req.url ?? "";
			if (path === "/t/0") return html(res, '<a href="/r/1">r</a> <a href="/t/2">t</a>');
			if (path === "/t/2") return html(res, '<a href="/d/1/">d</a>');
			if (path === "/r/1") return void res.writeHead(302, { location: "/d/1/" }).end();
			if (path === "/d/1/") return html(res, '<a href="a">a</a> <a href="b">b</a>');
			if (path === "/d/1/a" || path === "/d/1/b") return html(res, "leaf");
			html(res, "none", 404);
		});
	}

	it("a fresh page's redirect landing is not paid again, and its links resolve against the landing", async () => {
		const service = await useTestService({ concurrency: 1 });
		const site = await startRedirectSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "fresh", yaml(site.origin, "files", 20));
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.stderr).toBe("");
		expect(first.code).toBe(0);
		const fetchedOnce = new Map([
			["/t/0", 1],
			["/r/1", 1],
			["/d/1/", 1],
			["/t/2", 1],
			["/d/1/a", 1],
			["/d/1/b", 1],
		]);
		expect(askedPaths(site)).toEqual(fetchedOnce);

		// Everything is fresh: the next run reads the stored pages and asks the site for nothing.
		const second = await runCli(["run", job, "--out", out, "--quiet", "--json"], { env: service.env });
		expect(askedPaths(site)).toEqual(fetchedOnce);
		expect(second.code).toBe(0);
		const summary = JSON.parse(second.stdout) as { crawl: { fresh: number; pages: number } };
		expect(summary.crawl).toMatchObject({ fresh: 5, pages: 0 });
	});
});
