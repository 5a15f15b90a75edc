import { beforeAll, describe, expect, it } from "vitest";
import { UsageError } from "../../src/common/index.js";
import {
	connectFleet,
	FLEET_SCHEMA_VERSION,
	type Fleet,
	FleetSchemaTooNewError,
	openFleetRun,
} from "../../src/fleet/index.js";
import { fleetFor, streamOf, targetsOn } from "../helpers/fleet.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { useCluster } from "../helpers/postgres.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

const cluster = useCluster();

beforeAll(() => assertBuilt());

describe("the fleet's schema", () => {
	it("workers starting together create the tables once, with a version row", async () => {
		const url = await (await cluster()).createDatabase();
		const fleets = await Promise.all(Array.from({ length: 4 }, () => fleetFor(url)));
		const rows = await fleets[0]!.query("SELECT version FROM scrapejob.schema_version");
		expect(rows).toEqual([{ version: FLEET_SCHEMA_VERSION }]);
		const tables = await fleets[0]!.query<{ name: string }>(
			"SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'scrapejob' ORDER BY 1",
		);
		expect(tables.map((table) => table.name)).toEqual([
			"breakers",
			"domain_modes",
			"hosts",
			"records",
			"robots",
			"runs",
			"schema_version",
			"slots",
			"targets",
			"workers",
		]);
	});

	it("a schema newer than this code knows is refused before anything is read or written", async () => {
		const url = await (await cluster()).createDatabase();
		const fleet = await fleetFor(url);
		await openFleetRun(fleet, { jobName: "job", concurrencyLimit: 1, source: () => streamOf(targetsOn(3)) });
		await fleet.query("UPDATE schema_version SET version = $1", [FLEET_SCHEMA_VERSION + 1]);
		const refused = await connectFleet({ url }).then(
			() => null,
			(error: unknown) => error,
		);
		expect(refused).toBeInstanceOf(FleetSchemaTooNewError);
		expect(refused).toMatchObject({
			code: "SCRAPEJOB_FLEET_SCHEMA",
			found: FLEET_SCHEMA_VERSION + 1,
			known: FLEET_SCHEMA_VERSION,
		});
		expect((refused as Error).message).toMatch(/newer than this scrapejob knows/);
		const [state] = await fleet.query(
			"SELECT (SELECT version FROM schema_version) AS version, (SELECT count(*)::int FROM targets) AS targets",
		);
		expect(state).toEqual({ version: FLEET_SCHEMA_VERSION + 1, targets: 3 });
	});

	it("a database of the last shipped version is upgraded in place when a worker connects: the new tables and columns made, each run's page count filled from its targets, every row kept", async () => {
		const url = await (await cluster()).createDatabase();
		const fleet = await fleetFor(url);
		const opened = await openFleetRun(fleet, {
			jobName: "job",
			concurrencyLimit: 1,
			source: () => streamOf(targetsOn(3)),
		});
		if (opened.outcome === "complete" || opened.outcome === "changed") throw new Error("the new run is complete");
		const other = await openFleetRun(fleet, {
			jobName: "other",
			concurrencyLimit: 1,
			source: () => streamOf(targetsOn(5)),
		});
		if (other.outcome === "complete" || other.outcome === "changed") throw new Error("the new run is complete");
		// A crawl's rows beside the seeds: a page found at depth 1, a sitemap task (-1), a redirect's landing (-2).
		await fleet.query(
			`INSERT INTO targets (run_id, target_id, url_key, url, host, depth, state) VALUES
				($1, 'found', 'found', 'https://host0.test/found', 'host0.test', 1, 'queued'),
				($1, 'sitemaps', 'sitemaps', 'https://host0.test/', 'host0.test', -1, 'queued'),
				($1, 'landed', 'landed', 'https://host0.test/landed', 'host0.test', -2, 'done')`,
			[opened.run.id],
		);
		// The tables of the last shipped version (the nine migrations since undone), and that version number.
		await undoSpares(fleet);
		await fleet.query("DROP TABLE domain_modes");
		await fleet.query("ALTER TABLE records DROP COLUMN links");
		await fleet.query("ALTER TABLE runs DROP COLUMN pages");
		await fleet.query("ALTER TABLE targets DROP COLUMN saved");
		await fleet.query("ALTER TABLE targets DROP COLUMN uncounted");
		await fleet.query("ALTER TABLE records DROP COLUMN landing");
		await fleet.query("ALTER TABLE robots DROP COLUMN stored_at");
		await fleet.query("ALTER TABLE targets DROP COLUMN fresh_found");
		await fleet.query("UPDATE schema_version SET version = $1", [FLEET_SCHEMA_VERSION - 9]);
		const upgraded = await fleetFor(url);
		const [state] = await upgraded.query(
			"SELECT (SELECT version FROM schema_version) AS version, (SELECT count(*)::int FROM targets) AS targets",
		);
		expect(state).toEqual({ version: FLEET_SCHEMA_VERSION, targets: 11 });
		const workers = await upgraded.query<{ id: string; ended_at: Date | null }>("SELECT id, ended_at FROM workers");
		expect(workers.sort((a, b) => a.id.localeCompare(b.id))).toEqual(
			[opened.worker.id, other.worker.id].sort((a, b) => a.localeCompare(b)).map((id) => ({ id, ended_at: null })),
		);
		const pages = await upgraded.query<{ job: string; pages: number }>(
			"SELECT job_name AS job, pages::int FROM runs ORDER BY job_name",
		);
		expect(pages).toEqual([
			{ job: "job", pages: 4 },
			{ job: "other", pages: 5 },
		]);
		const [saved] = await upgraded.query(
			"SELECT count(*)::int AS n, sum(saved)::int AS saved, count(*) FILTER (WHERE uncounted)::int AS uncounted FROM targets",
		);
		expect(saved).toEqual({ n: 11, saved: 0, uncounted: 0 });
		const [made] = await upgraded.query(
			`SELECT to_regclass('scrapejob.domain_modes') IS NOT NULL AS modes, (SELECT data_type FROM information_schema.columns
				WHERE table_schema = 'scrapejob' AND table_name = 'records' AND column_name = 'links') AS links`,
		);
		expect(made).toEqual({ modes: true, links: "ARRAY" });
		const [robotsIndex] = await upgraded.query("SELECT to_regclass('scrapejob.robots_stored') IS NOT NULL AS made");
		expect(robotsIndex).toEqual({ made: true });
		// A crawl's spares: the state allowed, none yet in any run, and the claims' indexes made.
		const [spares] = await upgraded.query(
			`SELECT sum(spares)::int AS spares, to_regclass('scrapejob.targets_spare') IS NOT NULL AS spare_index,
				to_regclass('scrapejob.targets_queued_depth') IS NOT NULL AS depth_index FROM runs`,
		);
		expect(spares).toEqual({ spares: 0, spare_index: true, depth_index: true });
		await upgraded.query("UPDATE targets SET state = 'spare' WHERE target_id = 'found'");
	});

	it("tables go in the schema asked for; a name that is not a plain identifier is refused", async () => {
		const url = await (await cluster()).createDatabase();
		const fleet = await fleetFor(url, { schema: "fleet_b" });
		expect(fleet.schema).toBe("fleet_b");
		await openFleetRun(fleet, { jobName: "job", concurrencyLimit: 1, source: () => streamOf(targetsOn(2)) });
		const [found] = await fleet.query(
			"SELECT to_regclass('fleet_b.targets') IS NOT NULL AS ours, to_regclass('scrapejob.targets') IS NOT NULL AS default",
		);
		expect(found).toEqual({ ours: true, default: false });
		await expect(connectFleet({ url, schema: 'x"; DROP SCHEMA fleet_b; --' })).rejects.toBeInstanceOf(UsageError);
		const [still] = await fleet.query("SELECT count(*)::int AS n FROM fleet_b.targets");
		expect(still).toEqual({ n: 2 });
	});

	it("`fleet status` and `export --fleet` only read: a schema without tables, or of an older version, is named and left as it is (exit 2)", async () => {
		const url = await (await cluster()).createDatabase();
		const dir = tempDir();
		const job = writeJob(dir, "job", "name: job\ndefaults: {mode: request}\ntargets: [https://example.com/a]\n");
		const schemas = async () =>
			(
				await (
					await fleetFor(url, { schema: "probe" })
				).query<{ name: string }>(
					"SELECT nspname AS name FROM pg_namespace WHERE nspname IN ('scrapejob', 'scrapejb') ORDER BY 1",
				)
			).map((row) => row.name);
		const typo = { SCRAPEJOB_FLEET_SCHEMA: "scrapejb" };
		const status = await spawnCli(["fleet", "status", job, "--fleet", url], typo, dir).done;
		expect(status.code, status.stderr).toBe(2);
		expect(status.stderr).toContain('no fleet tables in schema "scrapejb" at postgres://');
		expect(status.stderr).toContain("check --fleet and SCRAPEJOB_FLEET_SCHEMA");
		expect(status.stderr).not.toContain("fleet-test-pw");
		const exported = await spawnCli(
			["export", job, "--latest", "--fleet", url, "--out", `${dir}/latest.csv`],
			typo,
			dir,
		).done;
		expect(exported.code, exported.stderr).toBe(2);
		expect(exported.stderr).toContain('no fleet tables in schema "scrapejb"');
		expect(await schemas()).toEqual([]);

		// Tables of the previous version: a worker upgrades them; a reader neither upgrades nor reads them.
		const fleet = await fleetFor(url);
		await openFleetRun(fleet, { jobName: "job", concurrencyLimit: 1, source: () => streamOf(targetsOn(3)) });
		await undoSpares(fleet);
		await fleet.query("UPDATE schema_version SET version = $1", [FLEET_SCHEMA_VERSION - 1]);
		const older = await spawnCli(["fleet", "status", job, "--fleet", url], {}, dir).done;
		expect(older.code, older.stderr).toBe(2);
		expect(older.stderr).toContain(`are at version ${FLEET_SCHEMA_VERSION - 1}, older than this scrapejob reads`);
		const [kept] = await fleet.query("SELECT version FROM schema_version");
		expect(kept).toEqual({ version: FLEET_SCHEMA_VERSION - 1 });
		expect(await schemas()).toEqual(["scrapejob"]);

		// At this version it reads.
		await fleetFor(url);
		const read = await spawnCli(["fleet", "status", job, "--fleet", url], {}, dir).done;
		expect(read.code, read.stderr).toBe(0);
		expect(read.stdout).toContain("job · fleet run");
	});
});

/** The tables as they were before the last migration (a crawl's spares). */
async function undoSpares(fleet: Fleet): Promise<void> {
	await fleet.query("DROP INDEX targets_spare");
	await fleet.query("DROP INDEX targets_queued_depth");
	await fleet.query("ALTER TABLE runs DROP COLUMN spares");
	await fleet.query("ALTER TABLE runs DROP COLUMN max_pages");
	await fleet.query("ALTER TABLE targets DROP CONSTRAINT targets_state_check");
	await fleet.query(
		"ALTER TABLE targets ADD CONSTRAINT targets_state_check CHECK (state IN ('queued', 'leased', 'done', 'failed', 'parked', 'fresh'))",
	);
}
