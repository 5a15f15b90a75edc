/**
 * The layout of `history.sqlite` (docs/guides/incremental-runs.md, "The job store: `history.sqlite`"). Any change to a table bumps `STORE_LAYOUT`:
 * a file of an older layout is brought up to date in place by `STORE_MIGRATIONS` when it has one, and
 * otherwise rebuilt from the run folders; never misread.
 */

/** `PRAGMA user_version` of the current layout. */
export const STORE_LAYOUT = 4;
/** `PRAGMA application_id`: "SJob", so a file of another program is not taken for a store. */
export const STORE_APPLICATION_ID = 0x534a6f62;

export const STORE_TABLES = ["runs", "targets", "domain_modes", "host_costs"] as const;

export const STORE_SCHEMA = `
CREATE TABLE runs (
	id TEXT PRIMARY KEY,
	results_bytes INTEGER NOT NULL,
	records INTEGER NOT NULL,
	ok INTEGER NOT NULL,
	failed INTEGER NOT NULL,
	credits REAL NOT NULL,
	first_finished_at TEXT,
	last_finished_at TEXT
);
CREATE TABLE targets (
	id TEXT PRIMARY KEY,
	url TEXT NOT NULL,
	status TEXT NOT NULL,
	status_at TEXT NOT NULL,
	ok_run TEXT,
	ok_offset INTEGER,
	finished_at TEXT,
	content_hash TEXT,
	changed_at TEXT,
	data TEXT,
	credits REAL NOT NULL,
	depth INTEGER,
	parent TEXT
);
CREATE TABLE domain_modes (
	domain TEXT PRIMARY KEY,
	mode TEXT NOT NULL,
	proxy_type TEXT NOT NULL,
	useful INTEGER NOT NULL,
	run TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE TABLE host_costs (
	run TEXT NOT NULL,
	host TEXT NOT NULL,
	price TEXT NOT NULL,
	targets INTEGER NOT NULL,
	credits REAL NOT NULL,
	credits_sq REAL NOT NULL,
	first REAL NOT NULL,
	first_sq REAL NOT NULL,
	last REAL NOT NULL,
	last_sq REAL NOT NULL,
	PRIMARY KEY (run, host, price)
);
PRAGMA application_id = ${STORE_APPLICATION_ID};
PRAGMA user_version = ${STORE_LAYOUT};
`;

/**
 * The steps that bring an older layout to the next one, in place, by the layout they start from. The
 * run folders rebuild `runs` and `targets`, but not what a job learned (`domain_modes`, `host_costs`):
 * a rebuild would make every adaptive domain climb again, paid. A layout with no step here is rebuilt.
 */
export const STORE_MIGRATIONS: Readonly<Record<number, string>> = {
	// Costs kept per price class (mode and proxy). A row kept before has no class (''): the forecast
	// uses it for any class, as it did, until a run of the host writes one with its class.
	3: `
CREATE TABLE host_costs_4 (
	run TEXT NOT NULL,
	host TEXT NOT NULL,
	price TEXT NOT NULL,
	targets INTEGER NOT NULL,
	credits REAL NOT NULL,
	credits_sq REAL NOT NULL,
	first REAL NOT NULL,
	first_sq REAL NOT NULL,
	last REAL NOT NULL,
	last_sq REAL NOT NULL,
	PRIMARY KEY (run, host, price)
);
INSERT INTO host_costs_4 SELECT run, host, '', targets, credits, credits_sq, first, first_sq, last, last_sq FROM host_costs;
DROP TABLE host_costs;
ALTER TABLE host_costs_4 RENAME TO host_costs;
PRAGMA user_version = 4;
`,
};

/**
 * One record into `targets`, its values bound by position in this order (`changed_at` is the record's
 * `finished_at` again), then the `?` of `changed_at`'s CASE: 1 when the record says `change: unchanged`
 * (a hash that differs only by fields the job's `extract:` gained keeps `changed_at`, as the record
 * says). Binding by name costs ~40 % more instructions an upsert in better-sqlite3.
 * The later finish wins, not the later fold (run folders
 * are folded in name order, and run ids made in the same second do not sort by time); on a tie the later
 * fold wins. Every right-hand side reads the row as it was before this statement (SQLite's UPDATE semantics).
 */
export const UPSERT_TARGET = `
INSERT INTO targets (id, url, status, status_at, ok_run, ok_offset, finished_at, content_hash, changed_at, data, credits, depth, parent)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	url = CASE WHEN excluded.status_at >= status_at THEN excluded.url ELSE url END,
	depth = CASE WHEN excluded.status_at >= status_at THEN excluded.depth ELSE depth END,
	parent = CASE WHEN excluded.status_at >= status_at THEN excluded.parent ELSE parent END,
	status = CASE WHEN excluded.status_at >= status_at THEN excluded.status ELSE status END,
	status_at = max(excluded.status_at, status_at),
	changed_at = CASE
		WHEN excluded.finished_at IS NULL OR excluded.finished_at < coalesce(finished_at, '') THEN changed_at
		WHEN finished_at IS NOT NULL AND (content_hash IS excluded.content_hash OR ?) THEN changed_at
		ELSE excluded.finished_at END,
	ok_run = CASE WHEN excluded.finished_at >= coalesce(finished_at, '') THEN excluded.ok_run ELSE ok_run END,
	ok_offset = CASE WHEN excluded.finished_at >= coalesce(finished_at, '') THEN excluded.ok_offset ELSE ok_offset END,
	content_hash = CASE WHEN excluded.finished_at >= coalesce(finished_at, '') THEN excluded.content_hash ELSE content_hash END,
	data = CASE WHEN excluded.finished_at >= coalesce(finished_at, '') THEN excluded.data ELSE data END,
	finished_at = CASE WHEN excluded.finished_at >= coalesce(finished_at, '') THEN excluded.finished_at ELSE finished_at END,
	credits = credits + excluded.credits
`;

/** A run's figures, added to by each batch of its records folded in. */
export const UPSERT_RUN = `
INSERT INTO runs (id, results_bytes, records, ok, failed, credits, first_finished_at, last_finished_at)
VALUES (@id, @bytes, @records, @ok, @failed, @credits, @first, @last)
ON CONFLICT (id) DO UPDATE SET
	results_bytes = max(results_bytes, excluded.results_bytes),
	records = records + excluded.records,
	ok = ok + excluded.ok,
	failed = failed + excluded.failed,
	credits = credits + excluded.credits,
	first_finished_at = CASE WHEN first_finished_at IS NULL OR excluded.first_finished_at < first_finished_at
		THEN excluded.first_finished_at ELSE first_finished_at END,
	last_finished_at = CASE WHEN last_finished_at IS NULL OR excluded.last_finished_at > last_finished_at
		THEN excluded.last_finished_at ELSE last_finished_at END
`;
