import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type ProgressSnapshot, runJobFile } from "../../src/index.js";
import { readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";
import { html, startTargetSite } from "../helpers/target-site.js";

/** /start links /moved/x, a redirect to /pages/x, which links ./y: the landing /pages/x gets no record. */
const PAGES: Record<string, string> = {
	"/start": '<a href="/moved/x">moved</a>',
	"/pages/x": '<a href="./y">y</a>',
	"/pages/y": "leaf",
};

function crawlJob(origin: string): string {
	return [
		"name: crawl",
		"defaults: {mode: request}",
		"output: {content: none}",
		"crawl:",
		"  max_depth: 3",
		"  robots: ignore",
		"targets:",
		`  - ${origin}/start`,
		"",
	].join("\n");
}

describe("onProgress during a crawl", () => {
	it("a completed crawl's last snapshot has total equal to done (a redirect's landing counted, with no record)", async () => {
		const service = await useTestService();
		const site = await startTargetSite((req, res) => {
			const path = req.url ?? "/";
			if (path.startsWith("/moved/")) {
				res.writeHead(302, { location: `/pages/${path.slice("/moved/".length)}`, "content-length": 0 }).end();
				return;
			}
			const body = PAGES[path];
			if (body === undefined) html(res, "no such page", 404);
			else html(res, body);
		});
		const dir = tempDir();
		const job = writeJob(dir, "crawl", crawlJob(site.origin));
		const snapshots: ProgressSnapshot[] = [];
		const summary = await runJobFile(job, {
			env: service.env,
			out: join(dir, "out"),
			onProgress: (snapshot) => snapshots.push(snapshot),
		});
		expect(summary.complete).toBe(true);
		const records = readRecords(summary.run_dir);
		expect(records.map((record) => new URL(record.url).pathname).sort()).toEqual(["/moved/x", "/pages/y", "/start"]);
		// The crawl knows four URLs: the landing is one of them (summary.json's figure is unchanged).
		expect(summary.crawl).toMatchObject({ pages: 3, discovered: 4, stopped_by: null });
		const last = snapshots.at(-1)!;
		expect(last).toMatchObject({ done: 3, total: 3, inFlight: 0 });
		for (const snapshot of snapshots) expect(snapshot.total).toBeGreaterThanOrEqual(snapshot.done);
	});
});
