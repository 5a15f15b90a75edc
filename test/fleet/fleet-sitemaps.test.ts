import { mkdirSync, readdirSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expectFleetRunDone } from "../helpers/fleet.js";
import { isRunFolderName, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { queryDatabase as query } from "../helpers/postgres-cluster.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite, type TargetSite } from "../helpers/target-site.js";

const cluster = useCluster();

function urlset(locs: readonly string[]): string {
	return `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs.map((loc) => `<url><loc>${loc}</loc></url>`).join("")}</urlset>`;
}

/**
 * A site whose sitemap index names two sitemaps listing pages no seed links to (one of them linked from
 * the seed as well: depth 0 all the same), a page robots.txt disallows and one out of scope. Pages under
 * /s/ link one level deeper; `/sitemap-b.xml` waits for `holdB` when given.
 */
function sitemapSite(holdB?: Promise<void>, askedB?: () => void) {
	return (req: IncomingMessage, res: ServerResponse, origin: string) => {
		const path = req.url ?? "/";
		const xml = (body: string) => res.writeHead(200, { "content-type": "application/xml" }).end(body);
		if (path === "/robots.txt") {
			res.writeHead(200, { "content-type": "text/plain" });
			res.end(`User-agent: *\nDisallow: /private/\nSitemap: ${origin}/sitemap-index.xml\n`);
		} else if (path === "/sitemap-index.xml")
			xml(
				`<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${origin}/sitemap-a.xml</loc></sitemap><sitemap><loc>${origin}/sitemap-b.xml</loc></sitemap></sitemapindex>`,
			);
		else if (path === "/sitemap-a.xml")
			xml(urlset(["/s/1", "/s/2", "/s/3", "/linked", "/private/x"].map((p) => `${origin}${p}`)));
		else if (path === "/sitemap-b.xml") {
			askedB?.();
			const answer = () =>
				xml(
					urlset(
						["/s/4", "/s/5", "/home", "http://elsewhere.invalid/s/9"].map((p) =>
							p.startsWith("/") ? `${origin}${p}` : p,
						),
					),
				);
			void (holdB ?? Promise.resolve()).then(answer);
		} else if (path === "/home") html(res, '<a href="/linked">linked</a> <a href="/d1">d1</a>');
		else if (path === "/d1") html(res, '<a href="/d2">d2</a>');
		else if (path.startsWith("/s/") && !path.endsWith("/child")) html(res, `<a href="${path}/child">child</a>`);
		else html(res, `page ${path}`);
	};
}

const PAGES = ["/home", "/linked", "/d1", "/d2", "/s/1", "/s/2", "/s/3", "/s/4", "/s/5"].flatMap((path) =>
	path.startsWith("/s/") ? [path, `${path}/child`] : [path],
);

function jobYaml(seed: string): string {
	return [
		"name: smjob",
		"defaults: {mode: request}",
		"output: {content: none}",
		"crawl: {max_depth: 3, robots: obey, sitemaps: true}",
		`targets: [${seed}]`,
		"",
	].join("\n");
}

/** Each record as path → depth and its parent's path. */
function placesOf(records: ReadonlyArray<{ id: string; url: string; depth: number | null; parent: string | null }>) {
	const pathOf = new Map(records.map((record) => [record.id, new URL(record.url).pathname]));
	return Object.fromEntries(
		records
			.map((record) => [
				new URL(record.url).pathname,
				{ depth: record.depth, parent: record.parent === null ? null : (pathOf.get(record.parent) ?? "?") },
			])
			.sort(([a], [b]) => String(a).localeCompare(String(b))),
	);
}

function fleetRecords(url: string) {
	return query<{ id: string; url: string; depth: number | null; parent: string | null }>(
		url,
		"SELECT record->>'id' AS id, record->>'url' AS url, (record->>'depth')::int AS depth, record->>'parent' AS parent FROM scrapejob.records",
	);
}

/** Realtime fetches the service was sent per path of `site`. */
function fetchesOf(service: TestService, site: TargetSite): Map<string, number> {
	const counts = new Map<string, number>();
	for (const entry of service.emulator.ledger.byEndpoint("realtime")) {
		if (!entry.url?.startsWith(site.origin)) continue;
		const path = new URL(entry.url).pathname;
		counts.set(path, (counts.get(path) ?? 0) + 1);
	}
	return counts;
}

describe("run --fleet with crawl.sitemaps: true", () => {
	it("3 workers: each sitemap file fetched once for the fleet, every listed page once, at the depth and parent a local crawl gives", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const dir = tempDir("scrapejob-fleet-sitemaps-");
		for (const folder of ["local", "fleet"]) mkdirSync(join(dir, folder));
		// The local crawl of the same site (another copy of it): the depths and parents to match.
		const localSite = await startTargetSite(sitemapSite());
		const localJob = writeJob(join(dir, "local"), "smjob", jobYaml(`${localSite.origin}/home`));
		const local = await runCli(["run", localJob, "--out", join(dir, "local-out"), "--quiet"], { env: service.env });
		expect(local.code, local.stderr).toBe(0);
		const runs = readdirSync(join(dir, "local-out", "smjob")).filter(isRunFolderName);
		const localRecords = readRecords(join(dir, "local-out", "smjob", runs[0]!));
		const expected = placesOf(localRecords);
		expect(Object.keys(expected).sort()).toEqual([...PAGES].sort());

		const site = await startTargetSite(sitemapSite());
		const job = writeJob(join(dir, "fleet"), "smjob", jobYaml(`${site.origin}/home`));
		const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: "2000" };
		const workers = Array.from({ length: 3 }, () =>
			spawnCli(["run", job, "--quiet", "--json", "--fleet", url, "--fleet-run", "sm-1"], env, join(dir, "fleet")),
		);
		for (const outcome of await Promise.all(workers.map((worker) => worker.done))) {
			expect(outcome.code, outcome.stderr).toBe(0);
			expectFleetRunDone(outcome.stdout);
		}
		const records = await fleetRecords(url);
		expect(placesOf(records)).toEqual(expected);
		expect(records).toHaveLength(PAGES.length);
		const fetches = fetchesOf(service, site);
		// robots.txt, the index and each sitemap once for the fleet; each page once; nothing disallowed or out of scope.
		for (const path of ["/robots.txt", "/sitemap-index.xml", "/sitemap-a.xml", "/sitemap-b.xml", ...PAGES])
			expect(fetches.get(path), path).toBe(1);
		expect(fetches.size).toBe(PAGES.length + 4);
	}, 120_000);

	it("a worker killed while it reads the sitemaps: another takes the task over, fetching only the file in flight again; each page once", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		let release = () => {};
		const holdB = new Promise<void>((resolve) => {
			release = resolve;
		});
		let askedB = () => {};
		const bAsked = new Promise<void>((resolve) => {
			askedB = resolve;
		});
		const site = await startTargetSite(sitemapSite(holdB, askedB));
		const dir = tempDir("scrapejob-fleet-sitemaps-kill-");
		const job = writeJob(dir, "smjob", jobYaml(`${site.origin}/home`));
		const env = { ...service.env, SCRAPEJOB_LOCK_LEASE_MS: "2000" };
		const start = () => spawnCli(["run", job, "--quiet", "--json", "--fleet", url, "--fleet-run", "sm-kill"], env, dir);
		const first = start();
		// It has read robots.txt, the index and sitemap-a (noted on the task's row), and waits on sitemap-b.
		await bAsked;
		first.child.kill("SIGKILL");
		await first.done;
		release();
		const second = start();
		const outcome = await second.done;
		expect(outcome.code, outcome.stderr).toBe(0);
		expectFleetRunDone(outcome.stdout);
		const records = await fleetRecords(url);
		expect(records.map((record) => new URL(record.url).pathname).sort()).toEqual([...PAGES].sort());
		const fetches = fetchesOf(service, site);
		for (const path of ["/robots.txt", "/sitemap-index.xml", "/sitemap-a.xml"]) expect(fetches.get(path), path).toBe(1);
		// The file in flight when the worker died, fetched again by the one that took the task over.
		expect(fetches.get("/sitemap-b.xml")).toBe(2);
		const [task] = await query<{ state: string }>(url, "SELECT state FROM scrapejob.targets WHERE depth = -1");
		expect(task?.state).toBe("done");
	}, 120_000);
	it("max_credits holds for the sitemap files too: each is reserved on a lease before it is sent, so the fleet stops within the budget", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		const service = await useTestService({ concurrency: 4 });
		const dir = tempDir("scrapejob-fleet-sitemaps-budget-");
		const site = await startTargetSite(sitemapSite());
		const job = writeJob(
			dir,
			"smjob",
			jobYaml(`${site.origin}/home`).replace("defaults:", "max_credits: 3\ndefaults:"),
		);
		const workers = Array.from({ length: 2 }, () =>
			spawnCli(
				["run", job, "--quiet", "--fleet", url, "--fleet-run", "budget"],
				{ ...service.env, SCRAPEJOB_LOCK_LEASE_MS: "2000" },
				dir,
			),
		);
		const outcomes = await Promise.all(workers.map((worker) => worker.done));
		const charged = service.emulator.ledger.totalCharged();
		// Without the reservations, robots.txt, the index and both sitemaps went out whatever the budget.
		expect(charged, outcomes.map((outcome) => outcome.stderr).join("\n")).toBeLessThanOrEqual(3);
		expect(charged, outcomes.map((outcome) => outcome.stdout + outcome.stderr).join("\n")).toBeGreaterThan(0);
		expect(outcomes.some((outcome) => outcome.code === 1)).toBe(true);
		const [run] = await query<{ spent: number; reserved: number }>(
			url,
			"SELECT spent::int, reserved::int FROM scrapejob.runs WHERE run_name = 'budget'",
		);
		expect(run).toEqual({ spent: charged, reserved: 0 });
	}, 60_000);
});

describe("max_pages with crawl.sitemaps: true", () => {
	it("the sitemaps list more than max_pages: three workers crawl the pages a local run crawls and pay what it pays, no sitemap file past the bound", async () => {
		assertBuilt();
		const url = await (await cluster()).createDatabase();
		// Slow sitemap files: the seed's answer comes first, as it would from a large site.
		const service = await useTestService({
			concurrency: 4,
			latency_ms: 5,
			faults: [{ kind: "slow", match: "/sitemap", delay_ms: 300 }],
		});
		const dir = tempDir("scrapejob-fleet-sitemaps-max-");
		// The demo site's sitemaps list its 100 graph pages, then its products; the seed links pages below them.
		const job = writeJob(
			dir,
			"smmax",
			[
				"name: smmax",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 2, max_pages: 30, scope: host, robots: obey, sitemaps: true}",
				`targets: [${service.site.url}/graph/1]`,
				"",
			].join("\n"),
		);
		const local = await runCli(["run", job, "--quiet", "--out", join(dir, "local")], { env: service.env, cwd: dir });
		expect(local.code, local.stderr).toBe(1);
		const localRun = readdirSync(join(dir, "local", "smmax")).find(isRunFolderName)!;
		const localPages = readRecords(join(dir, "local", "smmax", localRun)).map((record) => record.url);
		const localCharged = service.emulator.ledger.totalCharged();

		const start = () =>
			spawnCli(["run", job, "--quiet", "--json", "--out", join(dir, "fleet"), "--fleet", url], service.env, dir).done;
		for (const outcome of await Promise.all([start(), start(), start()])) expect(outcome.code, outcome.stderr).toBe(0);
		const records = await fleetRecords(url);
		expect(records.map((record) => record.url).sort()).toEqual([...localPages].sort());
		expect(service.emulator.ledger.totalCharged() - localCharged).toBe(localCharged);
		// The run's page count as its row keeps it: the frontier's pages, the sitemap task (depth -1) and the
		// listed pages past max_pages waiting as spares not among them.
		const [counts] = await query<{ counted: number; pages: number; tasks: number }>(
			url,
			`SELECT r.pages::int AS counted, (SELECT count(*)::int FROM scrapejob.targets t WHERE t.run_id = r.id AND t.depth >= 0 AND t.state <> 'spare') AS pages,
				(SELECT count(*)::int FROM scrapejob.targets t WHERE t.run_id = r.id AND t.depth = -1) AS tasks
			FROM scrapejob.runs r`,
		);
		expect(counts).toEqual({ counted: 30, pages: 30, tasks: 1 });
	}, 60_000);
});
