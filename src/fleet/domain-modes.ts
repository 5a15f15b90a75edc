import type { Fleet } from "./connect.js";

/**
 * What `mode: adaptive` learned of one domain, kept for the job in the fleet (table `domain_modes`): the
 * rung its targets start on (an index into the runner's ladder, with that rung's mode and proxy), and
 * whether it gave useful records (false: every rung was tried and none did).
 */
export interface FleetDomainMode {
	readonly domain: string;
	readonly rung: number;
	readonly mode: string;
	readonly proxyType: string;
	readonly useful: boolean;
}

/** The rows changed since a worker's last read, and the database's clock to read from next time. */
export interface FleetDomainModeChanges {
	readonly rows: readonly FleetDomainMode[];
	/** The database's time of this read: the next read asks for rows changed since shortly before it. */
	readonly readAt: Date;
}

/**
 * A row committed late is still read: each read goes this far behind the last one's clock (a row's time is
 * its statement's start, and one upsert commits well within it). Rows read twice change nothing.
 */
const LATE_COMMIT_MARGIN_MS = 5_000;

interface DomainModeRow {
	read_at: Date;
	domain: string | null;
	rung: number;
	mode: string;
	proxy_type: string;
	useful: boolean;
}

/**
 * What the job's fleet runs learned (every domain's row, or those changed since `since`), read when a
 * worker starts and on its polls. Rows, not one aggregate: a job of millions of domains reads as many.
 */
export async function readFleetDomainModes(
	fleet: Fleet,
	jobName: string,
	since: Date | null = null,
): Promise<FleetDomainModeChanges> {
	// The clock's row comes back even when no domain changed.
	const rows = await fleet.query<DomainModeRow>(
		`SELECT n.read_at, d.domain, d.rung, d.mode, d.proxy_type, d.useful
		FROM (SELECT now() AS read_at) n
		LEFT JOIN domain_modes d ON d.job_name = $1
			AND ($2::timestamptz IS NULL OR d.updated_at >= $2::timestamptz - make_interval(secs => $3::float8 / 1000))`,
		[jobName, since, LATE_COMMIT_MARGIN_MS],
		"fleet_domain_modes",
	);
	const found: FleetDomainMode[] = [];
	for (const row of rows) {
		if (row.domain === null) continue;
		found.push({ domain: row.domain, rung: row.rung, mode: row.mode, proxyType: row.proxy_type, useful: row.useful });
	}
	return { rows: found, readAt: rows[0]?.read_at ?? new Date(0) };
}

/**
 * Keep what workers of run `runId` learned of some domains (each domain at most once), in one statement.
 * Learning only climbs: a row keeps the higher rung. Within one run, a domain any worker found useful
 * stays useful; a later run's finding replaces an earlier run's (a domain that gave useful records before
 * and none now is given up, as a local run does).
 */
export async function keepFleetDomainModes(
	fleet: Fleet,
	jobName: string,
	runId: number,
	learned: readonly FleetDomainMode[],
): Promise<void> {
	if (learned.length === 0) return;
	await fleet.query(
		`INSERT INTO domain_modes AS d (job_name, domain, rung, mode, proxy_type, useful, run_id)
		SELECT $1, l.domain, l.rung, l.mode, l.proxy_type, l.useful, $2
		FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::boolean[]) AS l(domain, rung, mode, proxy_type, useful)
		ON CONFLICT (job_name, domain) DO UPDATE SET
			rung = greatest(d.rung, EXCLUDED.rung),
			mode = CASE WHEN EXCLUDED.rung >= d.rung THEN EXCLUDED.mode ELSE d.mode END,
			proxy_type = CASE WHEN EXCLUDED.rung >= d.rung THEN EXCLUDED.proxy_type ELSE d.proxy_type END,
			useful = CASE WHEN d.run_id = EXCLUDED.run_id THEN d.useful OR EXCLUDED.useful ELSE EXCLUDED.useful END,
			run_id = EXCLUDED.run_id,
			updated_at = now()`,
		[
			jobName,
			runId,
			learned.map((row) => row.domain),
			learned.map((row) => row.rung),
			learned.map((row) => row.mode),
			learned.map((row) => row.proxyType),
			learned.map((row) => row.useful),
		],
		"fleet_domain_modes_keep",
	);
}
