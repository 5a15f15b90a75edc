import type { Fleet } from "./connect.js";
import { FleetDatabaseError, FleetSchemaTooNewError, FleetSchemaUnreadableError } from "./errors.js";

/**
 * The fleet's tables, one migration per version: version N is reached by running migrations 1..N in
 * order. A change to the tables is a new entry at the end, never an edit of one that shipped.
 */
const MIGRATIONS: readonly string[] = [
	`
CREATE TABLE runs (
	id bigserial PRIMARY KEY,
	job_name text NOT NULL,
	run_name text NOT NULL,
	state text NOT NULL DEFAULT 'opening' CHECK (state IN ('opening', 'loading', 'running', 'complete')),
	created_at timestamptz NOT NULL DEFAULT now(),
	completed_at timestamptz,
	-- The worker streaming the job's targets in, and until when it holds that role.
	loader text,
	loader_until timestamptz,
	max_credits bigint CHECK (max_credits >= 0),
	spent bigint NOT NULL DEFAULT 0,
	reserved bigint NOT NULL DEFAULT 0,
	concurrency_limit integer NOT NULL CHECK (concurrency_limit >= 1),
	-- What a new host's row starts with (per_host_delay, per_host_concurrency).
	host_delay_ms integer NOT NULL DEFAULT 0 CHECK (host_delay_ms >= 0),
	host_concurrency integer CHECK (host_concurrency >= 1),
	paused_until timestamptz,
	UNIQUE (job_name, run_name)
);
CREATE INDEX runs_newest ON runs (job_name, created_at DESC) WHERE state <> 'complete';

CREATE TABLE workers (
	id text PRIMARY KEY,
	run_id bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
	hostname text NOT NULL,
	pid integer NOT NULL,
	started_at timestamptz NOT NULL DEFAULT now(),
	last_beat timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workers_run ON workers (run_id);

CREATE TABLE hosts (
	run_id bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
	host text NOT NULL,
	delay_ms integer NOT NULL DEFAULT 0 CHECK (delay_ms >= 0),
	max_in_flight integer CHECK (max_in_flight >= 1),
	next_allowed_at timestamptz NOT NULL DEFAULT '-infinity',
	in_flight integer NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, host)
);
-- Claims take the hosts whose turn came longest ago first.
CREATE INDEX hosts_due ON hosts (run_id, next_allowed_at);

CREATE TABLE targets (
	run_id bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
	target_id text NOT NULL,
	-- Claim order: loaded and discovered targets in the order they arrived.
	seq bigserial,
	url_key text NOT NULL,
	url text NOT NULL,
	host text NOT NULL,
	state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'leased', 'done', 'failed')),
	lease_owner text,
	lease_epoch bigint NOT NULL DEFAULT 0,
	lease_until timestamptz,
	attempts integer NOT NULL DEFAULT 0,
	depth integer NOT NULL DEFAULT 0,
	parent text,
	task_id text,
	-- Credits booked for the fetch in flight (released when its lease lapses) and credits spent on it.
	reserved bigint NOT NULL DEFAULT 0,
	credits bigint NOT NULL DEFAULT 0,
	error text,
	-- The target's own fields (params, metadata) as the job gave them.
	input jsonb,
	PRIMARY KEY (run_id, target_id),
	UNIQUE (run_id, url_key)
);
CREATE INDEX targets_queued ON targets (run_id, host, seq) WHERE state = 'queued';
CREATE INDEX targets_leased ON targets (run_id, lease_until) WHERE state = 'leased';
CREATE INDEX targets_owner ON targets (lease_owner) WHERE state = 'leased';

CREATE TABLE records (
	run_id bigint NOT NULL,
	target_id text NOT NULL,
	-- The lease epoch the record was written under.
	epoch bigint NOT NULL,
	record jsonb NOT NULL,
	written_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (run_id, target_id),
	FOREIGN KEY (run_id, target_id) REFERENCES targets ON DELETE CASCADE
);

-- The account's concurrency as rows: a fetch holds one; only slots below the run's limit are handed out.
CREATE TABLE slots (
	run_id bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
	slot integer NOT NULL,
	holder text,
	epoch bigint NOT NULL DEFAULT 0,
	held_until timestamptz,
	PRIMARY KEY (run_id, slot)
);
CREATE INDEX slots_holder ON slots (holder) WHERE holder IS NOT NULL;
`,
	// Freshness: a target's newest record across the job's runs, found by its id.
	`
CREATE INDEX records_target ON records (target_id, written_at DESC);
`,
	// A host with a delay takes its next claim only once the last claimed fetch has started (or its lease
	// lapsed): the delay runs from the start of a fetch, not from its claim.
	`
ALTER TABLE hosts ADD COLUMN starting_until timestamptz;
-- A crawl's claims go level by level: the shallowest depth not yet settled, found quickly.
CREATE INDEX targets_unsettled_depth ON targets (run_id, depth) WHERE state IN ('queued', 'leased');
-- A crawl's robots.txt, fetched by one worker for the whole run (null body: missing, allows everything).
CREATE TABLE robots (
	run_id bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
	url text NOT NULL,
	state text NOT NULL DEFAULT 'fetching' CHECK (state IN ('fetching', 'done')),
	fetcher text,
	fetching_until timestamptz,
	body text,
	PRIMARY KEY (run_id, url)
);
`,
	// The per-domain breakers, one row per domain for the whole fleet; an open breaker's targets wait parked.
	`
ALTER TABLE targets DROP CONSTRAINT targets_state_check;
ALTER TABLE targets ADD CONSTRAINT targets_state_check
	CHECK (state IN ('queued', 'leased', 'done', 'failed', 'parked'));
-- The breaker (domain or host) a parked target waits on.
ALTER TABLE targets ADD COLUMN breaker text;
CREATE INDEX targets_parked ON targets (run_id, breaker, seq) WHERE state = 'parked';
CREATE TABLE breakers (
	run_id bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
	domain text NOT NULL,
	-- The latest charged outcomes, oldest first (true: useless or failed), at most the job's window.
	outcomes boolean[] NOT NULL DEFAULT '{}',
	state text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'probing')),
	opened_at timestamptz,
	reason text,
	-- The parked targets' worst cases, summed as they were parked.
	credits_saved bigint NOT NULL DEFAULT 0,
	-- The one target let through as the half-open breaker's probe.
	probe_target text,
	PRIMARY KEY (run_id, domain)
);
`,
	// A crawl's sitemaps (\`sitemaps: true\`) are read by one worker per seed origin, as a target of depth -1:
	// what its holder has read so far is kept on the row, so a worker taking it over pays none of it again.
	`
ALTER TABLE targets ADD COLUMN progress jsonb;
`,
	// \`--retry-failed\` of a crawl: every worker of the run (whatever its own flags) follows no link to a
	// page whose newest record in the job's fleet runs is ok.
	`
ALTER TABLE runs ADD COLUMN retry_failed boolean NOT NULL DEFAULT false;
`,
	// The fleet's limit changes only on an answer to a fetch sent after its last change (a late answer
	// carrying the service's old limit must not undo a newer one): each change raises this count.
	`
ALTER TABLE runs ADD COLUMN limit_epoch bigint NOT NULL DEFAULT 0;
`,
	// A worker that stops cleanly says so: it leaves the live workers (whose count divides the limit) at
	// once, not a lease after its last heartbeat.
	`
ALTER TABLE workers ADD COLUMN ended_at timestamptz;
`,
	// The claimed target a host with a delay waits on to start: only its own settle (it never started)
	// frees the host early; the settle of an earlier fetch must not let the next claim past it.
	`
ALTER TABLE hosts ADD COLUMN starting_target text;
`,
	// The reservations booked on a target's lease, by the token each was sent with: one sent again after
	// its answer was lost (the connection dropped after the commit) is not booked twice.
	`
ALTER TABLE targets ADD COLUMN reservations text[] NOT NULL DEFAULT '{}';
`,
	// The job's targets a run's loading left out as fresh (\`freshness\`): in no state of the run, and
	// \`fleet status\` says so rather than show a run of nothing.
	`
ALTER TABLE runs ADD COLUMN fresh integer NOT NULL DEFAULT 0;
`,
	// What decides the fetches of the job a run was opened with (its targets and options): a worker
	// started with another version of the job file does not join it. Null: opened before, anyone joins.
	`
ALTER TABLE runs ADD COLUMN job_fingerprint text;
`,
	// What \`mode: adaptive\` learned per domain, for a job across its fleet runs (workers have no store of
	// their own that outlives them): the rung (ladder index, with its mode and proxy) its targets start on,
	// and whether it gave useful records (false: every rung was tried and none did). Workers read the rows
	// changed since their last poll.
	`
CREATE TABLE domain_modes (
	job_name text NOT NULL,
	domain text NOT NULL,
	rung integer NOT NULL CHECK (rung >= 0),
	mode text NOT NULL,
	proxy_type text NOT NULL,
	useful boolean NOT NULL,
	-- The fleet run that last wrote the row: within one run workers' findings add up, a later run's replace.
	run_id bigint NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (job_name, domain)
);
CREATE INDEX domain_modes_changed ON domain_modes (job_name, updated_at);
`,
	// \`freshness\` in a crawl: a crawled page fetched with freshness on keeps its links beside its record, so
	// while it is fresh a later run follows them without fetching it; such a page settles \`fresh\`, no record.
	`
ALTER TABLE targets DROP CONSTRAINT targets_state_check;
ALTER TABLE targets ADD CONSTRAINT targets_state_check
	CHECK (state IN ('queued', 'leased', 'done', 'failed', 'parked', 'fresh'));
ALTER TABLE records ADD COLUMN links text[];
`,
	// The run's pages (targets of depth 0 and deeper: no sitemap task, no redirect's landing), kept by each
	// statement that adds or takes out one: \`max_pages\` reads one row, not a count of the frontier.
	// A run opened before starts from its count.
	`
ALTER TABLE runs ADD COLUMN pages bigint NOT NULL DEFAULT 0;
UPDATE runs r SET pages = c.n
FROM (SELECT run_id, count(*) AS n FROM targets WHERE depth >= 0 GROUP BY run_id) c WHERE c.run_id = r.id;
`,
	// A parked target's worst case, as its breaker's \`credits_saved\` counted it: taken back out when the
	// target leaves the parked ones as the half-open probe (it is fetched: nothing was saved on it). A target
	// parked before counts 0 (the worker that parked it did not say).
	`
ALTER TABLE targets ADD COLUMN saved bigint NOT NULL DEFAULT 0;
`,
	// A crawled page found fresh (\`freshness\`) as it entered the frontier: read, not fetched, so it takes no
	// room under \`max_pages\` from the start (\`runs.pages\` leaves it out), not only once it settles.
	`
ALTER TABLE targets ADD COLUMN uncounted boolean NOT NULL DEFAULT false;
`,
	// Where a crawled page's redirects ended, kept with its links (\`freshness\`): a later run that follows the
	// fresh page notes that address as fetched, so a link to it is not paid for again.
	`
ALTER TABLE records ADD COLUMN landing text;
`,
	// When a robots.txt was fetched: a later fleet run of the job reads one stored less than 24 hours ago
	// (RFC 9309's bound on a cached copy) instead of paying for it again. Rows stored before count as old.
	`
ALTER TABLE robots ADD COLUMN stored_at timestamptz;
CREATE INDEX robots_stored ON robots (url, stored_at DESC) WHERE state = 'done' AND body IS NOT NULL;
`,
	// Whether a crawled page was fresh (\`freshness\`) when it entered the frontier, null when that was not
	// asked: a page found stale then is not looked up again when claimed (one lookup per page, not two).
	`
ALTER TABLE targets ADD COLUMN fresh_found boolean;
`,
	// A crawl's link found with no room under \`max_pages\` (or while seeds still load) waits as a \`spare\`,
	// neither claimed nor counted, until a page leaving the count frees its room: dropped, the room stayed
	// empty and the fleet fetched a page fewer than a local crawl. \`runs.spares\` bounds them, and with
	// \`runs.max_pages\` (noted with the first) a run is not complete while one could take room left. Claims
	// find whether a seed (depth 0) is queued in one probe, as every seed is leased before any link.
	`
ALTER TABLE targets DROP CONSTRAINT targets_state_check;
ALTER TABLE targets ADD CONSTRAINT targets_state_check
	CHECK (state IN ('queued', 'leased', 'done', 'failed', 'parked', 'fresh', 'spare'));
ALTER TABLE runs ADD COLUMN spares bigint NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN max_pages bigint;
CREATE INDEX targets_spare ON targets (run_id, depth, seq) WHERE state = 'spare';
CREATE INDEX targets_queued_depth ON targets (run_id, depth) WHERE state = 'queued';
`,
];

/** The version this scrapejob writes and reads. */
export const FLEET_SCHEMA_VERSION = MIGRATIONS.length;

/** The version of the fleet's tables in `fleet.schema`, 0 when there are none; `query` may be a transaction's. */
async function schemaVersion(fleet: Fleet, query: Fleet["query"]): Promise<number> {
	const [table] = await query<{ found: string | null }>("SELECT to_regclass($1)::text AS found", [
		`${fleet.schema}.schema_version`,
	]);
	if (!table?.found) return 0;
	const [row] = await query<{ version: number }>(`SELECT version FROM ${fleet.schema}.schema_version`);
	return row?.version ?? 0;
}

async function checkServerVersion(fleet: Fleet): Promise<void> {
	const [server] = await fleet.query<{ version: string }>("SELECT current_setting('server_version_num') AS version");
	if (Number(server?.version) < 130000) {
		throw new FleetDatabaseError(`the fleet needs PostgreSQL 13 or later (the server is ${server?.version})`);
	}
}

/**
 * For a command that only reads the fleet: its tables are there at the version this code reads, else it
 * says why not. Creates and upgrades nothing (a mistyped schema must not become an empty one, and workers
 * of the older version may still be running on older tables).
 */
export async function checkSchemaReadable(fleet: Fleet): Promise<void> {
	await checkServerVersion(fleet);
	const version = await schemaVersion(fleet, fleet.query);
	if (version > FLEET_SCHEMA_VERSION) throw new FleetSchemaTooNewError(fleet.schema, version, FLEET_SCHEMA_VERSION);
	if (version === 0) {
		throw new FleetSchemaUnreadableError(
			`no fleet tables in schema "${fleet.schema}" at ${fleet.maskedUrl}: no worker has run with this database and schema (check --fleet and SCRAPEJOB_FLEET_SCHEMA); nothing was created`,
		);
	}
	if (version < FLEET_SCHEMA_VERSION) {
		throw new FleetSchemaUnreadableError(
			`the fleet's tables in schema "${fleet.schema}" are at version ${version}, older than this scrapejob reads (${FLEET_SCHEMA_VERSION}): a worker of this version upgrades them when it starts, or use the scrapejob that wrote them`,
		);
	}
}

/**
 * Create or upgrade the fleet's tables in one transaction, under an advisory lock so that workers
 * starting together do it once. A version newer than this code knows is refused before anything else.
 */
export async function ensureSchema(fleet: Fleet): Promise<void> {
	await checkServerVersion(fleet);
	await fleet.transaction(
		async (query) => {
			await query("SELECT pg_advisory_xact_lock(hashtext($1))", [`scrapejob fleet schema ${fleet.schema}`]);
			const version = await schemaVersion(fleet, query);
			if (version > FLEET_SCHEMA_VERSION) throw new FleetSchemaTooNewError(fleet.schema, version, FLEET_SCHEMA_VERSION);
			if (version === FLEET_SCHEMA_VERSION) return;
			await query(`CREATE SCHEMA IF NOT EXISTS ${fleet.schema}`);
			await query(`SET LOCAL search_path TO ${fleet.schema}`);
			await query(
				"CREATE TABLE IF NOT EXISTS schema_version (only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row), version integer NOT NULL)",
			);
			for (const migration of MIGRATIONS.slice(version)) await query(migration);
			await query(
				"INSERT INTO schema_version (version) VALUES ($1) ON CONFLICT (only_row) DO UPDATE SET version = EXCLUDED.version",
				[FLEET_SCHEMA_VERSION],
			);
		},
		// An upgrade rebuilds indexes and checks constraints over every row (minutes for millions of
		// targets), and a worker starting meanwhile waits for its lock: not the seconds a claim may take.
		{ answerTimeoutMs: SCHEMA_UPGRADE_TIMEOUT_MS },
	);
}

/** How long a schema upgrade's statements (and the wait for another worker's upgrade) may take. */
const SCHEMA_UPGRADE_TIMEOUT_MS = 60 * 60_000;
