import { ScrapejobError } from "../common/index.js";

/**
 * The fleet's tables were made by a newer scrapejob: this one must not read or write them. Thrown by
 * `runJobFile` with `fleet` before anything is sent; code `SCRAPEJOB_FLEET_SCHEMA` (the CLI's exit 2).
 */
export class FleetSchemaTooNewError extends ScrapejobError {
	readonly found: number;
	readonly known: number;

	constructor(schema: string, found: number, known: number) {
		super(
			"SCRAPEJOB_FLEET_SCHEMA",
			`the fleet's tables in schema "${schema}" are at version ${found}, newer than this scrapejob knows (${known}): upgrade scrapejob on every worker`,
		);
		this.found = found;
		this.known = known;
	}
}

/**
 * A command that only reads the fleet (`fleet status`, `export --fleet`) found no tables it can read in the
 * schema: none at all (a mistyped schema or database, or no worker has run there yet), or tables of an older
 * version that only a worker may upgrade. Nothing was created or changed.
 */
export class FleetSchemaUnreadableError extends ScrapejobError {
	constructor(message: string) {
		super("SCRAPEJOB_FLEET_SCHEMA", message);
	}
}

/**
 * The fleet's database could not be reached or refused a statement. The message names the server with
 * its password masked and never carries the connection URL as given. Thrown by `runJobFile` with `fleet`
 * (or `SCRAPEJOB_FLEET_URL`) when the database fails before the run starts (nothing was sent); later, the
 * worker stops with `stopped_reason: fleet_unavailable` instead. Code `SCRAPEJOB_FLEET_DATABASE` (exit 3).
 */
export class FleetDatabaseError extends ScrapejobError {
	/** PostgreSQL's SQLSTATE when the server answered, else the client's error code (ECONNREFUSED, …). */
	readonly sqlState: string | undefined;

	constructor(message: string, sqlState?: string) {
		super("SCRAPEJOB_FLEET_DATABASE", message);
		this.sqlState = sqlState;
	}
}
