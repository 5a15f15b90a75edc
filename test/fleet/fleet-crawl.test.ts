import { describe, expect, it } from "vitest";
import { expectBfsPages, siteBfs } from "../crawl/site-bfs.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase as query } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, type SpawnedCli, spawnCli } from "../helpers/spawn-cli.js";
import { until } from "../helpers/until.js";

const cluster = useCluster();

describe("run --fleet with crawl:", () => {
	it("4 workers crawl one site together, one killed mid-crawl and replaced: every reachable page once, at its BFS depth, links fenced by their page's lease", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4, latency_ms: 15 });
		const site = service.site.url;
		const host = new URL(site).host;
		const seed = `${site}/graph/3`;
		const expected = await siteBfs({ seeds: [seed], maxDepth: 4, follows: (page) => page.host === host });
		const dir = tempDir("scrapejob-fleet-crawl-");
		const job = writeJob(
			dir,
			"crawljob",
			[
				"name: crawljob",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 4, robots: obey, sitemaps: false}",
				`targets: [${seed}]`,
				"",
			].join("\n"),
		);
		const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: "2000" };
		const start = () => spawnCli(["run", job, "--quiet", "--json", "--fleet", url, "--fleet-run", "crawl-1"], env, dir);
		const workers: SpawnedCli[] = Array.from({ length: 4 }, start);
		await until(
			async () =>
				Number((await query<{ n: string }>(url, "SELECT count(*) AS n FROM scrapejob.records"))[0]?.n ?? 0) >= 15,
		);
		workers[0]!.child.kill("SIGKILL");
		await workers[0]!.done;
		// Read at once: the dead worker's leases stay until they lapse (a lease, 2 s, after its last beat).
		const leased = new Set(
			(await query<{ url: string }>(url, "SELECT url FROM scrapejob.targets WHERE state = 'leased'")).map(
				(row) => row.url,
			),
		);
		workers.push(start());
		const outcomes = await Promise.all(workers.map((worker) => worker.done));
		// The site has pages that answer 404: a worker that wrote a failed record exits 1, the others 0; the
		// fleet run is complete for every one.
		expect(outcomes.slice(1).some((outcome) => outcome.code === 1)).toBe(true);
		for (const outcome of outcomes.slice(1)) {
			expect([0, 1], outcome.stderr).toContain(outcome.code);
			const summary = JSON.parse(outcome.stdout.trim().split("\n").at(-1)!);
			expect(summary).toMatchObject({ complete: true, fleet: { run: "crawl-1", targets: { queued: 0, leased: 0 } } });
		}
		const records = await query<{ url: string; depth: number | null; credits: number }>(
			url,
			"SELECT record->>'url' AS url, (record->>'depth')::int AS depth, (record->>'credits_used')::int AS credits FROM scrapejob.records",
		);
		expectBfsPages(records, expected, expect);
		// robots.txt aside, every charge is on a record, except fetches the killed worker held.
		const charged = new Map<string, number>();
		for (const entry of service.emulator.ledger.byEndpoint("realtime")) {
			if (entry.url && entry.creditsCharged > 0 && !entry.url.endsWith("/robots.txt"))
				charged.set(entry.url, (charged.get(entry.url) ?? 0) + entry.creditsCharged);
		}
		for (const record of records) {
			const paid = charged.get(record.url) ?? 0;
			if (paid !== record.credits) expect(leased.has(record.url), `${record.url}: paid ${paid}`).toBe(true);
		}
		expect(service.emulator.ledger.maxInFlight()).toBeLessThanOrEqual(4);
		// robots.txt once for the whole fleet run (one worker fetched it, the others read it from the database).
		const robots = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.url?.endsWith("/robots.txt"));
		expect(robots).toHaveLength(1);
	}, 120_000);
});
