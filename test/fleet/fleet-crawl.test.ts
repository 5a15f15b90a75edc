import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expectBfsPages, siteBfs } from "../crawl/site-bfs.js";
import { onlyRunDir, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase as query } from "../helpers/postgres-cluster.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, type SpawnedCli, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
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

describe("the shipped crawl demo in a fleet", () => {
	it("jobs/crawl-demo.yaml as written (max_credits 400, robots.txt obeyed), two workers: the pages a local run crawls, each paid once, within the budget", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const job = join(import.meta.dirname, "..", "..", "jobs", "crawl-demo.yaml");
		const env = { ...service.env, SCRAPEJOB_DEMO_SITE: service.site.url };
		const dir = tempDir("scrapejob-fleet-crawl-demo-");
		const local = await spawnCli(["run", job, "--quiet", "--json", "--out", join(dir, "local")], env, dir).done;
		expect([0, 1], local.stderr).toContain(local.code);
		const localUrls = readRecords(onlyRunDir(join(dir, "local"), "crawl-demo")).map((record) => record.url);
		const localCharged = service.emulator.ledger.totalCharged();

		const start = () =>
			spawnCli(
				["run", job, "--quiet", "--json", "--out", join(dir, "fleet"), "--fleet", url, "--fleet-run", "demo"],
				env,
				dir,
			);
		const outcomes = await Promise.all([start().done, start().done]);
		for (const outcome of outcomes) {
			expect([0, 1], outcome.stderr).toContain(outcome.code);
			expect(JSON.parse(outcome.stdout.trim().split("\n").at(-1)!)).toMatchObject({
				complete: true,
				stopped_reason: null,
			});
		}
		const records = await query<{ url: string; credits: number }>(
			url,
			"SELECT record->>'url' AS url, (record->>'credits_used')::int AS credits FROM scrapejob.records",
		);
		// Every page the local run crawled: recorded, or fetched as where a redirect landed. A queued page a
		// redirect lands on before a worker claims it leaves the queue, paid once under the redirect's record
		// (a local crawl that found it as a link first fetches it again). More only where two workers met a
		// redirect's landing by a link before the redirect was fetched (a race a local crawl has too).
		const landings = await query<{ url: string }>(url, "SELECT url FROM scrapejob.targets WHERE depth = -2");
		const covered = new Set([...records.map((record) => record.url), ...landings.map((landing) => landing.url)]);
		expect(localUrls.filter((page) => !covered.has(page))).toEqual([]);
		expect(records.length).toBeLessThanOrEqual(localUrls.length + 1);
		// Every credit the fleet paid is on a record, but robots.txt's, paid once.
		const fleetCharged = service.emulator.ledger.totalCharged() - localCharged;
		const recorded = records.reduce((sum, record) => sum + record.credits, 0);
		expect(fleetCharged - recorded).toBe(2);
	}, 120_000);
});

describe("a fleet crawl's worker stopped cleanly", () => {
	it("a worker stopped with SIGTERM while its pages are in flight: they settle with their links in the frontier, and the next worker crawls what a local run crawls", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		// Every page slow: the stop comes while the seed's links are being fetched.
		const service = await useTestService({
			concurrency: 4,
			faults: [{ kind: "slow", match: "/graph/", delay_ms: 600 }],
		});
		const site = service.site.url;
		const host = new URL(site).host;
		const seed = `${site}/graph/3`;
		const expected = await siteBfs({ seeds: [seed], maxDepth: 2, follows: (page) => page.host === host });
		const dir = tempDir("scrapejob-fleet-crawl-stop-");
		const job = writeJob(
			dir,
			"crawlstop",
			[
				"name: crawlstop",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 2, robots: ignore, sitemaps: false}",
				`targets: [${seed}]`,
				"",
			].join("\n"),
		);
		const start = () =>
			spawnCli(["run", job, "--quiet", "--json", "--fleet", url, "--fleet-run", "stop-1"], service.env, dir);
		const first = start();
		// The seed settled and its links claimed, their fetches in flight.
		await until(
			async () =>
				Number(
					(
						await query<{ n: string }>(
							url,
							"SELECT count(*) AS n FROM scrapejob.targets WHERE state = 'leased' AND depth = 1",
						)
					)[0]?.n ?? 0,
				) >= 2,
		);
		first.child.kill("SIGTERM");
		const stopped = await first.done;
		expect(stopped.code, stopped.stderr).toBe(130);
		const next = await start().done;
		expect([0, 1], next.stderr).toContain(next.code);
		expect(JSON.parse(next.stdout.trim().split("\n").at(-1)!)).toMatchObject({ complete: true });
		const records = await query<{ url: string; depth: number | null }>(
			url,
			"SELECT record->>'url' AS url, (record->>'depth')::int AS depth FROM scrapejob.records",
		);
		expectBfsPages(records, expected, expect);
	}, 120_000);
});

describe("max_pages in a fleet crawl", () => {
	it("pages settling at once on two workers never take the last room twice: the frontier holds max_pages pages, as a local crawl fetches", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 10 });
		const dir = tempDir("scrapejob-fleet-crawl-max-");
		const job = writeJob(
			dir,
			"crawlmax",
			[
				"name: crawlmax",
				"concurrency: 10",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 3, max_pages: 50, robots: ignore, sitemaps: false}",
				`targets: [${service.site.url}/graph/1]`,
				"",
			].join("\n"),
		);
		for (const run of ["a", "b", "c"]) {
			const start = () =>
				spawnCli(["run", job, "--quiet", "--json", "--fleet", url, "--fleet-run", run], service.env, dir).done;
			for (const outcome of await Promise.all([start(), start()]))
				expect([0, 1], outcome.stderr).toContain(outcome.code);
			const [counts] = await query<{ pages: number; records: number }>(
				url,
				`SELECT count(*) FILTER (WHERE t.depth >= 0 AND t.state <> 'spare')::int AS pages,
					(SELECT count(*)::int FROM scrapejob.records rec WHERE rec.run_id = r.id) AS records
				FROM scrapejob.targets t JOIN scrapejob.runs r ON r.id = t.run_id WHERE r.run_name = '${run}' GROUP BY r.id`,
			);
			// Exactly max_pages: a queued page that turned out to be a redirect's landing leaves the frontier
			// (fetched with the redirect), and a link waiting as a spare takes its room.
			expect(counts, run).toEqual({ pages: 50, records: 50 });
		}
		expect(await pageCounts(url)).toEqual(await pageCounts(url, "counted"));
	}, 120_000);

	it("a run opened by the previous version (no page count on its row) goes on within max_pages once a worker upgrades the tables", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir("scrapejob-fleet-crawl-upgrade-");
		const job = writeJob(
			dir,
			"crawlupgrade",
			[
				"name: crawlupgrade",
				"max_credits: 6",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 3, max_pages: 10, robots: ignore, sitemaps: false}",
				`targets: [${service.site.url}/graph/1]`,
				"",
			].join("\n"),
		);
		const worker = (...flags: string[]) =>
			spawnCli(["run", job, "--quiet", "--fleet", url, "--fleet-run", "upgrade", ...flags], service.env, dir).done;
		// The run stops at its budget, unfinished, its frontier already at max_pages.
		expect((await worker()).code).toBe(1);
		expect(await pageCounts(url)).toEqual({ upgrade: 10 });
		// The tables before the page count: its migration and the six after undone, that version number (the
		// links that version turned away rather than keep as spares gone too).
		await query(url, "DELETE FROM scrapejob.targets WHERE state = 'spare'");
		await query(url, "DROP INDEX scrapejob.targets_spare");
		await query(url, "DROP INDEX scrapejob.targets_queued_depth");
		await query(url, "ALTER TABLE scrapejob.runs DROP COLUMN spares");
		await query(url, "ALTER TABLE scrapejob.runs DROP COLUMN max_pages");
		await query(url, "ALTER TABLE scrapejob.runs DROP COLUMN pages");
		await query(url, "ALTER TABLE scrapejob.targets DROP COLUMN saved");
		await query(url, "ALTER TABLE scrapejob.targets DROP COLUMN uncounted");
		await query(url, "ALTER TABLE scrapejob.records DROP COLUMN landing");
		await query(url, "ALTER TABLE scrapejob.robots DROP COLUMN stored_at");
		await query(url, "ALTER TABLE scrapejob.targets DROP COLUMN fresh_found");
		await query(url, "UPDATE scrapejob.schema_version SET version = version - 7");
		const finished = await worker("--max-credits", "400");
		expect([0, 1], finished.stderr).toContain(finished.code);
		expect(await pageCounts(url)).toEqual({ upgrade: 10 });
		expect(await pageCounts(url, "counted")).toEqual({ upgrade: 10 });
	}, 60_000);
});

/**
 * Each fleet run's pages (targets of depth 0 and deeper, no spare), by run name: counted in the frontier,
 * or as its row keeps them.
 */
async function pageCounts(url: string, how: "frontier" | "counted" = "frontier"): Promise<Record<string, number>> {
	const rows = await query<{ run: string; n: number }>(
		url,
		how === "counted"
			? "SELECT run_name AS run, pages::int AS n FROM scrapejob.runs"
			: "SELECT r.run_name AS run, count(t.*)::int AS n FROM scrapejob.runs r LEFT JOIN scrapejob.targets t ON t.run_id = r.id AND t.depth >= 0 AND t.state <> 'spare' GROUP BY r.run_name",
	);
	return Object.fromEntries(rows.map((row) => [row.run, row.n]));
}

describe("a fleet crawl worker's summary", () => {
	it("counts the crawl's pages as a local run of the same job does: the failed and the non-HTML ones too", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		// /home links six pages: two answer 404 (failed records), one is JSON (ok, no links read), three are HTML.
		const site = await startTargetSite((req, res) => {
			const path = req.url ?? "/";
			if (path === "/robots.txt") res.writeHead(404).end();
			else if (path === "/home")
				html(res, ["/a", "/b", "/c", "/gone1", "/gone2", "/data"].map((p) => `<a href="${p}">${p}</a>`).join(" "));
			else if (path.startsWith("/gone")) html(res, "gone", 404);
			else if (path === "/data") res.writeHead(200, { "content-type": "application/json" }).end("{}");
			else html(res, `<p>${path}</p>`);
		});
		const dir = tempDir("scrapejob-fleet-crawl-count-");
		const job = writeJob(
			dir,
			"crawlcount",
			[
				"name: crawlcount",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 2, robots: ignore, sitemaps: false}",
				`targets: [${site.origin}/home]`,
				"",
			].join("\n"),
		);
		const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1)!);
		const local = await spawnCli(["run", job, "--json", "--out", join(dir, "local")], service.env, dir).done;
		expect(local.code, local.stderr).toBe(1);
		const localSummary = summaryOf(local.stdout);
		expect(localSummary).toMatchObject({ targets: { by_status: { ok: 5, failed: 2 } }, crawl: { pages: 7 } });
		const worker = await spawnCli(["run", job, "--json", "--out", join(dir, "fleet"), "--fleet", url], service.env, dir)
			.done;
		expect(worker.code, worker.stderr).toBe(1);
		expect(summaryOf(worker.stdout)).toMatchObject({
			targets: { by_status: { ok: 5, failed: 2 } },
			crawl: { pages: localSummary.crawl.pages },
		});
	}, 60_000);
});

describe("a fleet crawl's settings", () => {
	it("a worker whose crawl: settings differ from the run's (another max_pages) does not join it: exit 2, nothing sent", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 2 });
		const dir = tempDir("scrapejob-fleet-crawl-edit-");
		const yaml = (maxPages: number) =>
			[
				"name: crawledit",
				"max_credits: 6",
				"defaults: {mode: request}",
				"output: {content: none}",
				`crawl: {max_depth: 3, max_pages: ${maxPages}, robots: ignore, sitemaps: false}`,
				`targets: [${service.site.url}/graph/1]`,
				"",
			].join("\n");
		const job = writeJob(dir, "crawledit", yaml(20));
		const worker = (...flags: string[]) =>
			spawnCli(["run", job, "--quiet", "--fleet", url, "--fleet-run", "edit", ...flags], service.env, dir).done;
		// The run stops at its budget, unfinished.
		expect((await worker()).code).toBe(1);
		const sent = service.emulator.ledger.byEndpoint("realtime").length;
		writeJob(dir, "crawledit", yaml(40));
		const edited = await worker("--max-credits", "400");
		expect(edited.code).toBe(2);
		expect(edited.stderr).toContain("fleet run edit was opened with another version of");
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sent);
		// Its own file finishes it, within its own max_pages.
		writeJob(dir, "crawledit", yaml(20));
		const finished = await worker("--max-credits", "400");
		expect([0, 1], finished.stderr).toContain(finished.code);
		const [pages] = await query<{ n: number }>(
			url,
			"SELECT count(*)::int AS n FROM scrapejob.targets WHERE depth >= 0 AND state <> 'spare'",
		);
		expect(pages).toEqual({ n: 20 });
	}, 60_000);
});

describe("freshness in a fleet crawl", () => {
	function freshCrawl(siteUrl: string, maxPages = 60): { dir: string; job: string } {
		const dir = tempDir("scrapejob-fleet-crawl-fresh-");
		const job = writeJob(
			dir,
			"crawlfresh",
			[
				"name: crawlfresh",
				"defaults: {mode: request}",
				"output: {content: none}",
				`crawl: {max_depth: 2, max_pages: ${maxPages}, robots: ignore, sitemaps: false}`,
				`targets: [${siteUrl}/graph/1]`,
				"",
			].join("\n"),
		);
		return { dir, job };
	}

	/** A fleet run's pages (URL, depth and state), in URL order. */
	const pagesOf = (url: string, runName: string) =>
		query<{ url: string; depth: number; state: string }>(
			url,
			`SELECT t.url, t.depth, t.state FROM scrapejob.targets t JOIN scrapejob.runs r ON r.id = t.run_id
			WHERE r.run_name = '${runName}' AND t.depth >= 0 AND t.state <> 'spare' ORDER BY t.url`,
		);
	const lastJson = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1)!);
	const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

	it("a fresh page is not fetched: the next run follows the links its last fetch kept, crawls the same pages, and pays only for the stale ones", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const { dir, job } = freshCrawl(service.site.url);
		const worker = (name: string) =>
			spawnCli(["run", job, "--json", "--fleet", url, "--fleet-run", name, "--freshness", "1h"], service.env, dir).done;
		const fetches = () => service.emulator.ledger.byEndpoint("realtime").length;

		for (const outcome of await Promise.all([worker("first"), worker("first")]))
			expect(outcome.code, outcome.stderr).toBe(0);
		const first = await pagesOf(url, "first");
		expect(first.length).toBeGreaterThan(5);
		expect(fetches()).toBe(first.length);

		// Every page fresh: nothing sent, the same pages reached through the kept links, each settled fresh.
		const second = await Promise.all([worker("second"), worker("second")]);
		for (const outcome of second) expect(outcome.code, outcome.stderr).toBe(0);
		expect(fetches()).toBe(first.length);
		const reached = await pagesOf(url, "second");
		expect(reached.map(({ url, depth }) => ({ url, depth }))).toEqual(first.map(({ url, depth }) => ({ url, depth })));
		expect(new Set(reached.map((page) => page.state))).toEqual(new Set(["fresh"]));
		// A worker that joined once the other had followed every page found the run complete: no summary.
		const summaries = second.map((outcome) => lastJson(outcome.stdout)).filter((last) => last.skipped === undefined);
		expect(summaries.length).toBeGreaterThan(0);
		expect(sum(summaries.map((summary) => summary.crawl.fresh))).toBe(first.length);
		expect(sum(summaries.map((summary) => summary.targets.fresh ?? 0))).toBe(first.length);
		expect(sum(summaries.map((summary) => summary.credits.used))).toBe(0);
		const status = await spawnCli(["fleet", "status", job, "--json", "--fleet", url], {}, dir).done;
		expect(status.code, status.stderr).toBe(0);
		expect(JSON.parse(status.stdout)[0]).toMatchObject({ run: "second", targets: { done: 0, fresh: first.length } });

		// The seed's record grown old: it alone is fetched again; its subtree still comes from the kept links.
		await query(
			url,
			`UPDATE scrapejob.records SET written_at = now() - interval '2 hours'
			WHERE target_id = (SELECT target_id FROM scrapejob.targets WHERE depth = 0 LIMIT 1)`,
		);
		const third = await worker("third");
		expect(third.code, third.stderr).toBe(0);
		expect(fetches()).toBe(first.length + 1);
		expect((await pagesOf(url, "third")).map(({ url }) => url)).toEqual(first.map(({ url }) => url));
		expect(lastJson(third.stdout)).toMatchObject({ targets: { done: 1, fresh: first.length - 1 } });
	}, 90_000);

	it("a fresh page at max_depth needs no links: found fresh, it takes no max_pages room from the new pages", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		// /a2 lists nothing at first, then four new pages (a change since the first run).
		let a2Asked = 0;
		const site = await startTargetSite((req, res) => {
			if (req.url === "/s") html(res, '<a href="/a1">a1</a> <a href="/a2">a2</a>');
			else if (req.url === "/a1") html(res, '<a href="/b1">b1</a> <a href="/b2">b2</a>');
			else if (req.url === "/a2") {
				a2Asked += 1;
				html(res, a2Asked === 1 ? "<p>none yet</p>" : [1, 2, 3, 4].map((n) => `<a href="/c${n}">c</a>`).join(" "));
			} else html(res, "<p>leaf</p>");
		});
		const dir = tempDir("scrapejob-fleet-crawl-fresh-");
		const job = writeJob(
			dir,
			"crawlfresh",
			`name: crawlfresh\nconcurrency: 1\ndefaults: {mode: request}\noutput: {content: none}\ncrawl: {max_depth: 2, max_pages: 5, robots: ignore, sitemaps: false}\ntargets: [${site.origin}/s]\n`,
		);
		const run = (name: string) =>
			spawnCli(["run", job, "--quiet", "--fleet", url, "--fleet-run", name, "--freshness", "1h"], service.env, dir)
				.done;
		expect((await run("first")).code).toBe(0);
		expect(await pagesOf(url, "first")).toHaveLength(5);
		// /a2 grown old: fetched again, it finds four new pages. /b1 and /b2 (max_depth, no links kept) are
		// fresh and never fetched: they leave the four the room /a2's links need.
		await query(
			url,
			`UPDATE scrapejob.records SET written_at = now() - interval '2 hours'
			WHERE record->>'url' LIKE '%/a2'`,
		);
		const before = service.emulator.ledger.byEndpoint("realtime").length;
		const second = await run("second");
		expect(second.code, second.stderr).toBe(0);
		const fetched = service.emulator.ledger
			.byEndpoint("realtime")
			.slice(before)
			.map((entry) => new URL(entry.url!).pathname)
			.sort();
		expect(fetched).toEqual(["/a2", "/c1", "/c2", "/c3", "/c4"]);
		// Found fresh as they entered the frontier, they were never counted (not only once they settled).
		const found = await query<{ path: string; uncounted: boolean }>(
			url,
			`SELECT substring(t.url from '/[a-z0-9]+$') AS path, t.uncounted FROM scrapejob.targets t
			JOIN scrapejob.runs r ON r.id = t.run_id WHERE r.run_name = 'second' AND t.depth = 2 ORDER BY 1`,
		);
		expect(found).toEqual([
			{ path: "/b1", uncounted: true },
			{ path: "/b2", uncounted: true },
			{ path: "/c1", uncounted: false },
			{ path: "/c2", uncounted: false },
			{ path: "/c3", uncounted: false },
			{ path: "/c4", uncounted: false },
		]);
	}, 60_000);

	it("a fresh page is read, not fetched: it does not count toward max_pages, whose room goes to new pages, as in a local crawl", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const { dir, job } = freshCrawl(service.site.url, 3);
		const run = (name: string) =>
			spawnCli(["run", job, "--json", "--fleet", url, "--fleet-run", name, "--freshness", "1h"], service.env, dir).done;
		expect((await run("first")).code).toBe(0);
		const first = await pagesOf(url, "first");
		expect(first).toHaveLength(3);
		const before = service.emulator.ledger.byEndpoint("realtime").length;
		const second = await run("second");
		expect(second.code, second.stderr).toBe(0);
		const reached = await pagesOf(url, "second");
		expect(reached.filter((page) => page.state === "fresh").map(({ url }) => url)).toEqual(first.map(({ url }) => url));
		// A fresh page takes no room from the moment it is found (not only once it settles): the whole of
		// max_pages goes to pages new since the first run, and only they count.
		const fetched = reached.filter((page) => page.state === "done").length;
		expect(fetched).toBe(3);
		expect(service.emulator.ledger.byEndpoint("realtime").length - before).toBe(fetched);
		expect(await pageCounts(url, "counted")).toMatchObject({ first: 3, second: 3 });
		expect(await pageCounts(url)).toMatchObject({ first: 3, second: 6 });
	}, 60_000);

	it("a fresh page that is not HTML has no links to want: it is not fetched again", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const site = await startTargetSite((req, res) => {
			if (req.url === "/doc.txt") {
				res.writeHead(200, { "content-type": "text/plain" });
				res.end("a plain text file, no links");
			} else if (req.url === "/start") html(res, '<a href="/doc.txt">doc</a> <a href="/leaf">leaf</a>');
			else html(res, "<p>leaf</p>");
		});
		const dir = tempDir("scrapejob-fleet-crawl-fresh-");
		const job = writeJob(
			dir,
			"crawlfresh",
			`name: crawlfresh\ndefaults: {mode: request}\noutput: {content: none}\ncrawl: {max_depth: 2, robots: ignore, sitemaps: false}\ntargets: [${site.origin}/start]\n`,
		);
		const run = (name: string) =>
			spawnCli(["run", job, "--json", "--fleet", url, "--fleet-run", name, "--freshness", "1h"], service.env, dir).done;
		expect((await run("first")).code).toBe(0);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(3);
		const second = await run("second");
		expect(second.code, second.stderr).toBe(0);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(3);
		expect(lastJson(second.stdout).crawl).toMatchObject({ fresh: 3, refetched_for_links: 0 });
	}, 60_000);

	it("a fresh page whose last fetch kept no links (a run without freshness) is fetched again only where its links are wanted", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const { dir, job } = freshCrawl(service.site.url);
		const run = (name: string, ...flags: string[]) =>
			spawnCli(["run", job, "--json", "--fleet", url, "--fleet-run", name, ...flags], service.env, dir).done;
		expect((await run("plain")).code).toBe(0);
		const plain = await pagesOf(url, "plain");
		const before = service.emulator.ledger.byEndpoint("realtime").length;

		const again = await run("again", "--freshness", "1h");
		expect(again.code, again.stderr).toBe(0);
		// Pages above max_depth are read again for their links; those at it are fresh, not sent.
		const wanted = plain.filter((page) => page.depth < 2);
		expect(service.emulator.ledger.byEndpoint("realtime").length - before).toBe(wanted.length);
		const summary = lastJson(again.stdout);
		expect(summary.crawl).toMatchObject({ refetched_for_links: wanted.length, fresh: plain.length - wanted.length });
		expect((await pagesOf(url, "again")).map(({ url }) => url)).toEqual(plain.map(({ url }) => url));
	}, 60_000);
});

describe("redirects in a fleet crawl", () => {
	it("where a page's redirects end was fetched as that page: taken out of the queue and never fetched again under its own address, nor by a later run that finds the page fresh", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService();
		// /start links /moved (a redirect to /new) and /new itself; /new's page links /other.
		const site = await startTargetSite((req, res) => {
			if (req.url === "/moved") {
				res.writeHead(302, { location: "/new" });
				res.end();
			} else if (req.url === "/start") html(res, '<a href="/moved">moved</a> <a href="/new">new</a>');
			else if (req.url === "/new") html(res, '<a href="/other">other</a>');
			else html(res, "<p>leaf</p>");
		});
		const dir = tempDir("scrapejob-fleet-landing-");
		const job = writeJob(
			dir,
			"landing",
			[
				"name: landing",
				// One fetch at a time: /moved is fetched (and lands on /new) before /new's turn in the queue.
				"concurrency: 1",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 3, robots: ignore}",
				`targets: [${site.origin}/start]`,
				"",
			].join("\n"),
		);
		const worker = await spawnCli(["run", job, "--quiet", "--fleet", url, "--fleet-run", "landing"], service.env, dir)
			.done;
		expect(worker.code, worker.stderr).toBe(0);
		const records = await query<{ url: string; depth: number }>(
			url,
			"SELECT record->>'url' AS url, (record->>'depth')::int AS depth FROM scrapejob.records ORDER BY 2, 1",
		);
		expect(records.map((record) => [new URL(record.url).pathname, record.depth])).toEqual([
			["/start", 0],
			["/moved", 1],
			["/other", 2],
		]);
		expect(site.requests.filter((request) => request.path === "/new")).toHaveLength(1);
		// /new, queued as a page, left the run's page count when it became /moved's landing.
		expect(await pageCounts(url, "counted")).toEqual({ landing: 3 });
		expect(await pageCounts(url)).toEqual({ landing: 3 });
		// Each page paid once: three records, three fetches.
		expect(service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.creditsCharged > 0)).toHaveLength(3);

		// With freshness, the next run follows /moved from what its fetch kept, its landing included: /new,
		// linked from /start too, is not paid for under its own address.
		const fresh = (name: string) =>
			spawnCli(["run", job, "--quiet", "--fleet", url, "--fleet-run", name, "--freshness", "1h"], service.env, dir)
				.done;
		expect((await fresh("kept")).code).toBe(0);
		const sent = service.emulator.ledger.byEndpoint("realtime").length;
		const again = await fresh("followed");
		expect(again.code, again.stderr).toBe(0);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(sent);
		const followed = await query<{ path: string; depth: number; state: string }>(
			url,
			`SELECT substring(t.url from '/[a-z]+$') AS path, t.depth, t.state FROM scrapejob.targets t
			JOIN scrapejob.runs r ON r.id = t.run_id WHERE r.run_name = 'followed' ORDER BY t.depth, t.url`,
		);
		expect(followed).toEqual([
			{ path: "/new", depth: -2, state: "done" },
			{ path: "/start", depth: 0, state: "fresh" },
			{ path: "/moved", depth: 1, state: "fresh" },
			{ path: "/other", depth: 2, state: "fresh" },
		]);
	}, 60_000);
});
