import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { shardOf } from "../../src/job/index.js";
import { isRunFolderName, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite, type TargetSite } from "../helpers/target-site.js";

const OK_PAGES = 5;
const TRAP_PAGES = 60;

function crawlYaml(origin: string, crawl: string[]): string {
	return [
		"name: scoped",
		"defaults: {mode: request}",
		"output: {content: none}",
		"concurrency: 1",
		`crawl: {max_depth: 2, robots: ignore, ${crawl.join(", ")}}`,
		"targets:",
		`  - ${origin}/start`,
		"",
	].join("\n");
}

describe("crawl: the job's current scope applies to links journalled before it changed", () => {
	it("stopped at max_pages, `exclude` added, --resume: no journalled excluded page is fetched", async () => {
		const service = await useTestService();
		const site = await startTargetSite((req, res) => {
			if (req.url === "/start") {
				const links = [
					...Array.from({ length: OK_PAGES }, (_, index) => `/ok/${index}`),
					...Array.from({ length: TRAP_PAGES }, (_, index) => `/trap/${index}`),
				];
				html(res, links.map((path) => `<a href="${path}">x</a>`).join(""));
			} else html(res, "<p>leaf</p>");
		});
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "scoped", crawlYaml(site.origin, ["max_pages: 2"]));
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env });
		expect(first.code, first.stderr).toBe(1);
		const runDir = join(out, "scoped", readdirSync(join(out, "scoped")).filter(isRunFolderName)[0]!);
		expect(readSummary(runDir).crawl?.stopped_by).toBe("max_pages");
		// Every link of /start is journalled already, the trap pages among them.
		expect(site.requests.map((request) => request.path)).toEqual(["/start", "/ok/0"]);

		writeJob(dir, "scoped", crawlYaml(site.origin, ["max_pages: 1000", 'exclude: ["/trap/"]']));
		const resumed = await runCli(["run", job, "--out", out, "--quiet", "--resume"], { env: service.env });
		expect(resumed.code, resumed.stderr).toBe(0);
		const fetched = site.requests.map((request) => request.path);
		expect(fetched.filter((path) => path.startsWith("/trap/"))).toEqual([]);
		expect(fetched.sort()).toEqual(
			["/start", ...Array.from({ length: OK_PAGES }, (_, index) => `/ok/${index}`)].sort(),
		);
		expect(service.emulator.ledger.byEndpoint("realtime").every((entry) => !entry.url?.includes("/trap/"))).toBe(true);
		expect(readRecords(runDir)).toHaveLength(1 + OK_PAGES);
		expect(readSummary(runDir).complete).toBe(true);
	});
});

describe("crawl with --shard: links from another shard's inbox meet this shard's scope", () => {
	it("shard 1's job file lacks the `exclude` shard 2's has: the trap links it hands over are not fetched by shard 2", async () => {
		assertBuilt();
		const service = await useTestService({ concurrency: 8 });
		let a: TargetSite | undefined;
		let b: TargetSite | undefined;
		// A's pages link B's pages (B's host is shard 2's): shard 1 hands them over through shard 2's inbox.
		// Each site is started again until its port puts it on its shard: one in two each time, apart.
		for (let tries = 0; tries < 64 && (!a || shardOf(a.origin, 2) !== 1); tries += 1) {
			const other = () => b?.origin ?? "";
			a = await startTargetSite((_req, res) =>
				html(
					res,
					[
						...Array.from({ length: 3 }, (_, index) => `${other()}/ok/${index}`),
						...Array.from({ length: 20 }, (_, index) => `${other()}/trap/${index}`),
					]
						.map((href) => `<a href="${href}">x</a>`)
						.join(""),
				),
			);
		}
		for (let tries = 0; tries < 64 && (!b || shardOf(b.origin, 2) !== 2); tries += 1)
			b = await startTargetSite((_req, res) => html(res, "<p>leaf</p>"));
		if (!a || !b) throw new Error("no site pair");
		expect([shardOf(a.origin, 2), shardOf(b.origin, 2)]).toEqual([1, 2]);
		const job = (exclude: string[]) =>
			[
				"name: sharded",
				"defaults: {mode: request}",
				"output: {content: none}",
				`crawl: {max_depth: 1, scope: any, robots: ignore, exclude: ${JSON.stringify(exclude)}}`,
				"targets:",
				`  - ${a.origin}/`,
				`  - ${b.origin}/`,
				"",
			].join("\n");
		const dir = tempDir();
		mkdirSync(join(dir, "older"));
		const older = writeJob(join(dir, "older"), "sharded", job([]));
		const current = writeJob(dir, "sharded", job(["/trap/"]));
		const out = join(dir, "out");
		const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: "1500" };
		const shard1 = spawnCli(["run", older, "--out", out, "--quiet", "--shard", "1/2"], env);
		const shard2 = spawnCli(["run", current, "--out", out, "--quiet", "--shard", "2/2"], env);
		const [ended1, ended2] = await Promise.all([shard1.done, shard2.done]);
		expect(ended1.code, ended1.stderr).toBe(0);
		expect(ended2.code, ended2.stderr).toBe(0);
		const onB = b.requests.map((request) => request.path).sort();
		expect(onB).toEqual(["/", "/ok/0", "/ok/1", "/ok/2"]);
	}, 60_000);
});
