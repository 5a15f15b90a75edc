import type pg from "pg";
import {
	errorMessage,
	lazyModule,
	maskUrlCredentials,
	redactSecrets,
	ScrapejobError,
	UsageError,
} from "../common/index.js";
import { FleetDatabaseError } from "./errors.js";
import { checkSchemaReadable, ensureSchema } from "./schema.js";

/** The PostgreSQL driver, loaded by the first fleet connection: a run without `--fleet` never loads it. */
const driver = lazyModule<typeof pg>("pg");

/** The schema the fleet's tables live in unless told otherwise (the CLI reads `SCRAPEJOB_FLEET_SCHEMA`). */
export const DEFAULT_FLEET_SCHEMA = "scrapejob";

/** pg's error for a statement unanswered within its `query_timeout`. */
const UNANSWERED = "Query read timeout";

/** How long the database may leave a connection or a statement unanswered (FleetOptions.answerTimeoutMs). */
const DEFAULT_ANSWER_TIMEOUT_MS = 30_000;

/** A lower-case SQL identifier: it is put in statements and `search_path` as it is, never quoted. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export interface FleetOptions {
	/** `postgres://user:password@host:port/database`: a secret, never shown as given. */
	readonly url: string;
	/** @default "scrapejob" */
	readonly schema?: string;
	/** Connections this process keeps open at most. @default 4 */
	readonly maxConnections?: number;
	/**
	 * How long a connection or a statement may go unanswered before it fails (as a refused one does, and is
	 * retried or stops the worker as an outage): a server that went silent (a host whose packets are
	 * dropped, a network cut without a reset) never refuses anything, and would hold the process forever.
	 * @default 30,000
	 */
	readonly answerTimeoutMs?: number;
	/**
	 * Only reading (`fleet status`, `export --fleet`): the tables must be there at this code's version;
	 * nothing is created or upgraded. @default false
	 */
	readonly readOnly?: boolean;
}

/** One process's connection to the fleet's database: a pool whose every connection uses the fleet's schema. */
export interface Fleet {
	readonly schema: string;
	/** The URL as messages may show it (password masked). */
	readonly maskedUrl: string;
	/**
	 * One statement; a failure is a FleetDatabaseError whose message carries no secret. A `name` makes it a
	 * prepared statement on each connection (parsed and planned once there, or per execution when its
	 * parameters make a better plan: `plan_cache_mode = auto`, whatever the database's default).
	 */
	query<Row extends pg.QueryResultRow = pg.QueryResultRow>(
		text: string,
		values?: unknown[],
		name?: string,
	): Promise<Row[]>;
	/**
	 * Run `work` in one transaction on one connection (committed when it resolves, rolled back when it
	 * throws). `answerTimeoutMs`: how long each of its statements may go unanswered, in place of the
	 * connection's (a schema upgrade may take minutes on a large fleet).
	 */
	transaction<T>(
		work: (query: Fleet["query"]) => Promise<T>,
		options?: { readonly answerTimeoutMs?: number },
	): Promise<T>;
	close(): Promise<void>;
}

/** Every form the URL's secrets can take in a message: the URL itself, its password raw and decoded. */
export function fleetUrlSecrets(url: string): string[] {
	const secrets = [url];
	const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/i.exec(url)?.[1];
	const colon = authority?.indexOf(":") ?? -1;
	if (authority !== undefined && colon >= 0) {
		const raw = authority.slice(colon + 1);
		secrets.push(raw);
		try {
			secrets.push(decodeURIComponent(raw));
		} catch {
			// Not valid percent-encoding: the raw form is all there is.
		}
	}
	for (const match of url.matchAll(/[?&]password=([^&#]*)/g)) {
		secrets.push(match[1]!);
		try {
			secrets.push(decodeURIComponent(match[1]!));
		} catch {
			// As above.
		}
	}
	// Longest first, so a password that contains a shorter secret is replaced whole.
	return secrets.sort((a, b) => b.length - a.length);
}

/**
 * Where a URL points, for messages: credentials masked, and a `password=` hidden too, whether a URL's
 * parameter or a key of a libpq `key=value` string (given where a URL was wanted: it is refused, and
 * the refusal must not show its password). The `password=` goes first: its value may hold an `@`.
 */
function showUrl(url: string): string {
	return maskUrlCredentials(url.replace(/(^|[\s?&])(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&#\s]*)/gi, "$1$2***"));
}

export async function connectFleet(options: FleetOptions): Promise<Fleet> {
	const schema = options.schema ?? DEFAULT_FLEET_SCHEMA;
	const maskedUrl = showUrl(options.url);
	// A name or URL that cannot be is the command's mistake (exit 2): no retry gets it through.
	if (!SCHEMA_NAME.test(schema)) {
		throw new UsageError(
			`fleet schema name ${JSON.stringify(schema)}: use lower-case letters, digits and _ (at most 63)`,
		);
	}
	if (!/^postgres(ql)?:\/\//i.test(options.url)) {
		throw new UsageError(`fleet URL ${maskedUrl}: expected postgres://user:password@host:port/database`);
	}
	const secrets = fleetUrlSecrets(options.url);
	const failure = (error: unknown) => {
		// Ours (schema too new, a refused name) already say what they mean, without secrets.
		if (error instanceof ScrapejobError) return error;
		const code = (error as { code?: unknown }).code;
		// A URL the driver cannot read (a password with an unencoded `#`, `/` or `?`, a port past 65535) is
		// the command's mistake, as a URL without postgres:// is: no retry gets it through (exit 2, not 3).
		if (code === "ERR_INVALID_URL") {
			return new UsageError(
				redactSecrets(
					`fleet URL ${maskedUrl}: not a valid URL (percent-encode a password's @ : / ? # % and spaces)`,
					secrets,
				),
			);
		}
		return new FleetDatabaseError(
			redactSecrets(`PostgreSQL at ${maskedUrl}: ${errorMessage(error)}`, secrets),
			typeof code === "string" ? code : undefined,
		);
	};
	let pool: pg.Pool;
	try {
		pool = new (driver().Pool)({
			connectionString: options.url,
			max: options.maxConnections ?? 4,
			// PostgreSQL's own choice between a cached plan and one for the parameters, even where a database
			// forces generic plans: the claim's generic plan, made for no count in particular, reads every
			// host of the run (20,004 rows at 20,000 hosts) instead of ~6, and `auto` never keeps it. Forcing
			// custom plans would re-plan every statement (~2x the database time of a claim round).
			options: `-c search_path=${schema} -c plan_cache_mode=auto`,
			application_name: "scrapejob",
			connectionTimeoutMillis: options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS,
			query_timeout: options.answerTimeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS,
			keepAlive: true,
		});
	} catch (error) {
		throw failure(error);
	}
	// An idle connection the server drops is replaced on the next query: nothing to do here, and without
	// a listener the pool's error event would end the process.
	pool.on("error", () => undefined);
	const query: Fleet["query"] = async (text, values, name) => {
		try {
			return (await pool.query(name === undefined ? { text, values } : { name, text, values })).rows;
		} catch (error) {
			throw failure(error);
		}
	};
	const fleet: Fleet = {
		schema,
		maskedUrl,
		query,
		async transaction(work, transactionOptions) {
			let client: pg.PoolClient;
			try {
				client = await pool.connect();
			} catch (error) {
				throw failure(error);
			}
			// pg reads a statement's own `query_timeout` before the pool's (its types do not list it).
			const timeout = transactionOptions?.answerTimeoutMs;
			const inside: Fleet["query"] = async (text, values, name) => {
				const config: pg.QueryConfig & { query_timeout?: number } =
					name === undefined ? { text, values } : { name, text, values };
				if (timeout !== undefined) config.query_timeout = timeout;
				try {
					return (await client.query(config)).rows;
				} catch (error) {
					// Unanswered: the connection may still be busy with it (or dead); a ROLLBACK sent after it would
					// wait as long again. Dropped instead: the server rolls the transaction back itself.
					if (error instanceof Error && error.message === UNANSWERED) broken = true;
					throw failure(error);
				}
			};
			let broken = false;
			try {
				await inside("BEGIN");
				const result = await work(inside);
				await inside("COMMIT");
				return result;
			} catch (error) {
				if (!broken)
					await client.query("ROLLBACK").catch(() => {
						broken = true;
					});
				throw failure(error);
			} finally {
				client.release(broken);
			}
		},
		async close() {
			await pool.end();
		},
	};
	try {
		await (options.readOnly ? checkSchemaReadable(fleet) : ensureSchema(fleet));
	} catch (error) {
		await pool.end().catch(() => undefined);
		throw failure(error);
	}
	return fleet;
}
