import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite } from "../helpers/target-site.js";

/** /start (depth 0) links /a, /b and /slow (depth 1); /a links /a2, /b links /b2 (depth 2). */
const LINKS: Record<string, string[]> = {
	"/start": ["/a", "/b", "/slow"],
	"/a": ["/a2"],
	"/b": ["/b2"],
	"/slow": ["/slow2"],
};

describe("crawl: a continuous feed", () => {
	it("level 2 starts while level 1's slow page is in flight: fetches stay at the account's limit across the boundary", async () => {
		const limit = 3;
		const service = await useTestService({ concurrency: limit });
		/** Requests being answered now, and what was open when each level-2 page was asked for. */
		let open = 0;
		const openAtLevel2: Array<{ path: string; open: number; slowOpen: boolean }> = [];
		let slowOpen = false;
		let releaseSlow: () => void = () => undefined;
		const level2Started = new Promise<void>((resolve) => {
			releaseSlow = resolve;
		});
		let level2 = 0;
		const site = await startTargetSite((req, res) => {
			const path = req.url ?? "/";
			open += 1;
			res.on("finish", () => {
				open -= 1;
			});
			const answer = () => html(res, (LINKS[path] ?? []).map((href) => `<a href="${href}">x</a>`).join(" "));
			if (path === "/a2" || path === "/b2") {
				openAtLevel2.push({ path, open, slowOpen });
				level2 += 1;
				if (level2 === 2) releaseSlow();
				// Held with /slow: when the second arrives, the first is still open.
				void level2Started.then(answer);
				return;
			}
			if (path === "/slow") {
				slowOpen = true;
				// Held until both level-2 pages were asked for (an event, not a time); a crawl that drains
				// level 1 first never asks, so the page is let go after a bound and the test fails below.
				const bound = setTimeout(releaseSlow, 3000);
				void level2Started.then(() => {
					clearTimeout(bound);
					slowOpen = false;
					answer();
				});
				return;
			}
			answer();
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"feed",
			[
				"name: feed",
				"defaults: {mode: request}",
				`concurrency: ${limit}`,
				"output: {content: none}",
				"crawl: {max_depth: 2, robots: ignore}",
				`targets: [${site.origin}/start]`,
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code, result.stderr).toBe(0);
		// Both level-2 pages were fetched while /slow (level 1) was still in flight; when the second came,
		// the account's whole limit was busy: /slow, /a2 and /b2.
		expect(openAtLevel2.map((entry) => entry.slowOpen)).toEqual([true, true]);
		expect(openAtLevel2.at(-1)!.open).toBe(limit);
		// Depths stay exact: every page at its BFS depth, each fetched once.
		const runDir = join(out, "feed", readdirSync(join(out, "feed")).find((name) => /^\d/.test(name))!);
		const depths = Object.fromEntries(
			readRecords(runDir).map((record) => [record.url.slice(site.origin.length), record.depth]),
		);
		expect(depths).toEqual({ "/start": 0, "/a": 1, "/b": 1, "/slow": 1, "/a2": 2, "/b2": 2, "/slow2": 2 });
		expect(readSummary(runDir).crawl).toMatchObject({ pages: 7, stopped_by: null });
	});

	it("a page first found one level too deep (from the next level, while the last pages of this one were in flight) gets its shortest depth", async () => {
		const service = await useTestService({ concurrency: 3 });
		// /start → /a, /slow (1); /a → /a2 (2); /a2 → /x (3); /slow → /x (2): /x is at depth 2.
		const links: Record<string, string[]> = {
			"/start": ["/a", "/slow"],
			"/a": ["/a2"],
			"/a2": ["/x"],
			"/slow": ["/x"],
		};
		let a2Answered: () => void = () => undefined;
		const a2Done = new Promise<void>((resolve) => {
			a2Answered = resolve;
		});
		const site = await startTargetSite((req, res) => {
			const path = req.url ?? "/";
			const answer = () => html(res, (links[path] ?? []).map((href) => `<a href="${href}">x</a>`).join(" "));
			if (path === "/a2") res.on("finish", () => a2Answered());
			// /slow answers once /a2 has (and a moment more, for its link to /x to be journalled at depth 3 first).
			if (path === "/slow") void a2Done.then(() => setTimeout(answer, 300));
			else answer();
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"feed",
			[
				"name: feed",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 3, robots: ignore}",
				`targets: [${site.origin}/start]`,
				"",
			].join("\n"),
		);
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(result.code, result.stderr).toBe(0);
		const runDir = join(out, "feed", readdirSync(join(out, "feed")).find((name) => /^\d/.test(name))!);
		const records = readRecords(runDir);
		const byPath = new Map(records.map((record) => [record.url.slice(site.origin.length), record]));
		expect([...byPath.keys()].sort()).toEqual(["/a", "/a2", "/slow", "/start", "/x"]);
		expect(byPath.get("/x")).toMatchObject({ depth: 2, parent: byPath.get("/slow")!.id });
		// Asked for once: the deeper entry was passed over once the shallower one claimed it.
		expect(site.requests.filter((request) => request.path === "/x")).toHaveLength(1);
	});
});
