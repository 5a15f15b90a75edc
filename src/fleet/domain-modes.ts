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
	domain: string;
	rung: number;
	mode: string;
	proxy_type: string;
	useful: boolean;
}

const fromRow = (row: DomainModeRow): FleetDomainMode => ({
	domain: row.domain,
	rung: row.rung,
	mode: row.mode,
	proxyType: row.proxy_type,
	useful: row.useful,
});

/**
 * What the job's fleet runs learned (every domain's row, or those changed since `since`), read when a
 * worker starts and on its polls.
 */
export async function readFleetDomainModes(
	fleet: Fleet,
	jobName: string,
	since: Date | null = null,
): Promise<FleetDomainModeChanges> {
	const [row] = await fleet.query<{ now: Date; rows: DomainModeRow[] | null }>(
		`SELECT now() AS now, (
			SELECT jsonb_agg(jsonb_build_object('domain', d.domain, 'rung', d.rung, 'mode', d.mode,
				'proxy_type', d.proxy_type, 'useful', d.useful))
			FROM domain_modes d
			WHERE d.job_name = $1
				AND ($2::timestamptz IS NULL OR d.updated_at >= $2::timestamptz - make_interval(secs => $3::float8 / 1000))
		) AS rows`,
		[jobName, since, LATE_COMMIT_MARGIN_MS],
		"fleet_domain_modes",
	);
	return { rows: (row?.rows ?? []).map(fromRow), readAt: row?.now ?? new Date(0) };
}

/**
 * Keep what a worker of run `runId` learned of a domain. Learning only climbs: the row keeps the higher
 * rung. Within one run, a domain any worker found useful stays useful; a later run's finding replaces an
 * earlier run's (a domain that gave useful records before and none now is given up, as a local run does).
 */
export async function keepFleetDomainMode(
	fleet: Fleet,
	jobName: string,
	runId: number,
	learned: FleetDomainMode,
): Promise<void> {
	await fleet.query(
		`INSERT INTO domain_modes AS d (job_name, domain, rung, mode, proxy_type, useful, run_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (job_name, domain) DO UPDATE SET
			rung = greatest(d.rung, EXCLUDED.rung),
			mode = CASE WHEN EXCLUDED.rung >= d.rung THEN EXCLUDED.mode ELSE d.mode END,
			proxy_type = CASE WHEN EXCLUDED.rung >= d.rung THEN EXCLUDED.proxy_type ELSE d.proxy_type END,
			useful = CASE WHEN d.run_id = EXCLUDED.run_id THEN d.useful OR EXCLUDED.useful ELSE EXCLUDED.useful END,
			run_id = EXCLUDED.run_id,
			updated_at = now()`,
		[jobName, learned.domain, learned.rung, learned.mode, learned.proxyType, learned.useful, runId],
		"fleet_domain_mode_keep",
	);
}
