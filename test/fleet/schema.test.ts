import { describe, expect, it } from "vitest";
import {
	connectFleet,
	FLEET_SCHEMA_VERSION,
	FleetDatabaseError,
	FleetSchemaTooNewError,
	openFleetRun,
} from "../../src/fleet/index.js";
import { fleetFor, streamOf, targetsOn } from "../helpers/fleet.js";
import { useCluster } from "../helpers/postgres.js";

const cluster = useCluster();

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

	it("tables go in the schema asked for; a name that is not a plain identifier is refused", async () => {
		const url = await (await cluster()).createDatabase();
		const fleet = await fleetFor(url, { schema: "fleet_b" });
		expect(fleet.schema).toBe("fleet_b");
		await openFleetRun(fleet, { jobName: "job", concurrencyLimit: 1, source: () => streamOf(targetsOn(2)) });
		const [found] = await fleet.query(
			"SELECT to_regclass('fleet_b.targets') IS NOT NULL AS ours, to_regclass('scrapejob.targets') IS NOT NULL AS default",
		);
		expect(found).toEqual({ ours: true, default: false });
		await expect(connectFleet({ url, schema: 'x"; DROP SCHEMA fleet_b; --' })).rejects.toBeInstanceOf(
			FleetDatabaseError,
		);
		const [still] = await fleet.query("SELECT count(*)::int AS n FROM fleet_b.targets");
		expect(still).toEqual({ n: 2 });
	});
});
