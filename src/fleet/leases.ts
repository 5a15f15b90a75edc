import type { Fleet } from "./connect.js";
import { fillFreedRoom } from "./max-pages.js";
import type { FleetLease, FleetWorker } from "./types.js";

interface LeaseRow {
	run_id: string;
	target_id: string;
	lease_epoch: string;
	url: string;
	url_key: string;
	host: string;
	depth: number;
	parent: string | null;
	task_id: string | null;
	attempts: number;
	input: unknown;
	claimed_at: Date;
	lease_until: Date;
	previous_hash?: string | null;
	previous_at?: string | null;
	previous_data?: unknown;
	fresh_found?: boolean | null;
	uncounted?: boolean;
}

function toLease(row: LeaseRow): FleetLease {
	return {
		runId: Number(row.run_id),
		targetId: row.target_id,
		epoch: Number(row.lease_epoch),
		url: row.url,
		urlKey: row.url_key,
		host: row.host,
		depth: row.depth,
		parent: row.parent,
		taskId: row.task_id,
		attempts: row.attempts,
		input: row.input,
		claimedAt: row.claimed_at,
		leaseUntil: row.lease_until,
		previousOk:
			row.previous_at === undefined || row.previous_at === null
				? null
				: { contentHash: row.previous_hash ?? null, finishedAt: row.previous_at, data: row.previous_data ?? null },
		freshFound: row.fresh_found ?? null,
		uncounted: row.uncounted ?? false,
	};
}

/**
 * Return the run's targets whose lease lapsed (their worker died or stalled) to the queue, with their
 * hosts' in-flight counts and their credit reservations. One reaper at a time per run (the others skip
 * it): two reapers updating the same hosts in different orders could deadlock. Returns how many.
 */
export async function reapExpiredLeases(fleet: Fleet, runId: number): Promise<number> {
	const [row] = await fleet.query<{ n: number }>(
		`WITH reaper AS (
			SELECT pg_try_advisory_xact_lock(hashtext('scrapejob fleet reap'), $1::int) AS got
		), expired AS (
			SELECT target_id, host, reserved FROM targets
			WHERE run_id = $1 AND state = 'leased' AND lease_until < now() AND (SELECT got FROM reaper)
			FOR UPDATE SKIP LOCKED
		), requeued AS (
			UPDATE targets t SET state = 'queued', lease_owner = NULL, lease_until = NULL, reserved = 0, reservations = '{}'
			FROM expired e WHERE t.run_id = $1 AND t.target_id = e.target_id
			RETURNING e.host, e.reserved
		), hosts_freed AS (
			UPDATE hosts h SET in_flight = greatest(h.in_flight - c.n, 0)
			FROM (SELECT host, count(*)::int AS n FROM requeued GROUP BY host) c
			WHERE h.run_id = $1 AND h.host = c.host AND h.max_in_flight IS NOT NULL
		), credits_freed AS (
			UPDATE runs SET reserved = reserved - c.total
			FROM (SELECT sum(reserved) AS total FROM requeued) c
			WHERE id = $1 AND c.total > 0
		)
		SELECT count(*)::int AS n FROM requeued`,
		[runId],
		"fleet_reap",
	);
	return row?.n ?? 0;
}

/**
 * Claim up to `n` queued targets for `worker` with `FOR UPDATE SKIP LOCKED`: concurrent claimers never
 * wait on each other and never get the same target. Honours the run's pause and each host's politeness:
 * a host is claimed from only once its `next_allowed_at` has come (one target per claim when it has a
 * delay) and while its in-flight count is under its limit. A claim moves the host's clock on by its delay
 * (none: to now), so hosts take turns.
 * Each claim raises the target's lease epoch. When fewer than `n` are queued, lapsed leases are returned to
 * the queue and claimed too.
 */
export async function claimTargets(
	fleet: Fleet,
	worker: FleetWorker,
	n: number,
	leaseMs: number,
	options: ClaimOptions = {},
): Promise<FleetLease[]> {
	const claimed = await claimQueued(fleet, worker, n, leaseMs, options);
	// Lapsed leases, and a crawl's spares for room that came free, are looked for only when the queue comes
	// up short: a full claim costs one statement.
	if (claimed.length === n) return claimed;
	const reaped = await reapExpiredLeases(fleet, worker.runId);
	const spares = options.maxPages === undefined ? 0 : await fillFreedRoom(fleet, worker.runId, options.maxPages);
	if (reaped + spares === 0) return claimed;
	// The first claim's targets took the lowest slots; the rest are for the second.
	const rest = options.slots === undefined ? options : { ...options, slots: options.slots.slice(claimed.length) };
	return [...claimed, ...(await claimQueued(fleet, worker, n - claimed.length, leaseMs, rest))];
}

export interface ClaimOptions {
	/**
	 * The job whose earlier fleet runs' records each claimed target is compared with (change tracking):
	 * its newest ok record there comes with the lease (`previousOk`), in the same statement.
	 */
	readonly previousOf?: string;
	/**
	 * The slots the claimed targets are to take, lowest first: only as many targets are claimed as of these
	 * are below the run's limit when the statement runs. A worker's spare slots were taken under the limit
	 * it knew, and another worker may have lowered it since (this one reads it four times a second).
	 */
	readonly slots?: readonly number[];
	/**
	 * A crawl's `max_pages`: a claim that comes up short first queues spares for any room that came free
	 * under it (`fillFreedRoom`).
	 */
	readonly maxPages?: number;
}

async function claimQueued(
	fleet: Fleet,
	worker: FleetWorker,
	n: number,
	leaseMs: number,
	options: ClaimOptions,
): Promise<FleetLease[]> {
	const rows = await fleet.query<LeaseRow>(
		`WITH run AS (
			SELECT id FROM runs
			WHERE id = $1 AND state IN ('loading', 'running') AND (paused_until IS NULL OR paused_until <= now())
		), room AS (
			-- How many of the claim's slots are below the limit now (a CTE of its own: \`run\`, used once, is
			-- planned into the host scan; used twice it would be computed apart, and the scan ~30× slower).
			SELECT CASE WHEN $6::int[] IS NULL THEN $3::int
				ELSE (SELECT count(*)::int FROM unnest($6::int[]) AS s(slot) WHERE s.slot < runs.concurrency_limit) END AS n
			FROM runs WHERE id = $1
		), level AS (
			-- Depth-exact crawls: a page is claimed only once every page two levels above it has settled, so
			-- no unsettled page can still find it shallower (a list's targets are all at depth 0). A sitemap
			-- task (depth -1) goes first, alone, as in a local crawl: its pages, not the seeds' links, fill max_pages.
			-- Every queued seed (depth 0) goes before any link, as a local crawl hands out its seeds first: the
			-- shallowest queued depth is one probe of targets_queued_depth (in its order: an EXISTS was planned
			-- as a scan of the table, which stale statistics took for all queued).
			SELECT CASE WHEN min(depth) < 0 THEN -1
				WHEN min(depth) = 0 AND (
					SELECT s.depth FROM targets s WHERE s.run_id = $1 AND s.state = 'queued' ORDER BY s.depth LIMIT 1
				) = 0 THEN 0
				ELSE coalesce(min(depth), 0) + 1 END AS deepest FROM targets
			WHERE run_id = $1 AND state IN ('queued', 'leased')
		), due_hosts AS (
			SELECT h.host, h.delay_ms, h.max_in_flight, h.in_flight FROM hosts h, run
			WHERE h.run_id = run.id AND h.next_allowed_at <= now()
				AND (h.delay_ms = 0 OR h.starting_until IS NULL OR h.starting_until < now())
				AND (h.max_in_flight IS NULL OR h.in_flight < h.max_in_flight)
				AND EXISTS (
					SELECT 1 FROM targets q, level
					WHERE q.run_id = h.run_id AND q.host = h.host AND q.state = 'queued' AND q.depth <= level.deepest
				)
			ORDER BY h.next_allowed_at
			LIMIT $3
			FOR UPDATE OF h SKIP LOCKED
		), picked AS (
			SELECT t.target_id, t.host FROM due_hosts d
			CROSS JOIN LATERAL (
				SELECT q.target_id, q.host FROM targets q, level
				WHERE q.run_id = $1 AND q.host = d.host AND q.state = 'queued' AND q.depth <= level.deepest
				ORDER BY q.depth, q.seq
				LIMIT CASE WHEN d.delay_ms > 0 THEN 1 ELSE least($3, coalesce(d.max_in_flight - d.in_flight, $3)) END
				FOR UPDATE SKIP LOCKED
			) t
			LIMIT $3
		), chosen AS (
			-- Cut to the slots below the limit on the few rows picked, not in the scans' LIMITs: the planner
			-- plans those scans for the parameter's count.
			SELECT * FROM picked LIMIT (SELECT n FROM room)
		), claimed AS (
			UPDATE targets t SET state = 'leased', lease_owner = $2, lease_epoch = t.lease_epoch + 1,
				lease_until = now() + make_interval(secs => $4::float8 / 1000), attempts = t.attempts + 1
			FROM chosen p WHERE t.run_id = $1 AND t.target_id = p.target_id
			RETURNING t.run_id, t.target_id, t.lease_epoch, t.url, t.url_key, t.host, t.depth, t.parent, t.task_id,
				t.attempts, t.input, now() AS claimed_at, t.lease_until, t.fresh_found, t.uncounted
		), hosts_taken AS (
			UPDATE hosts h SET in_flight = CASE WHEN h.max_in_flight IS NULL THEN h.in_flight ELSE h.in_flight + c.n END,
				next_allowed_at = now() + make_interval(secs => h.delay_ms::float8 / 1000),
				starting_until = CASE WHEN h.delay_ms > 0 THEN now() + make_interval(secs => $4::float8 / 1000) END,
				-- A host with a delay gives one target a claim: the one whose start it waits on.
				starting_target = CASE WHEN h.delay_ms > 0 THEN c.target END
			FROM (SELECT host, count(*)::int AS n, min(target_id) AS target FROM chosen GROUP BY host) c
			WHERE h.run_id = $1 AND h.host = c.host
		)
		SELECT c.*, p.previous_hash, p.previous_at, p.previous_data FROM claimed c
		LEFT JOIN LATERAL (
			SELECT rec.record->>'content_hash' AS previous_hash, rec.record->>'finished_at' AS previous_at,
				rec.record->'data' AS previous_data
			FROM records rec JOIN runs r ON r.id = rec.run_id
			WHERE $5::text IS NOT NULL AND rec.target_id = c.target_id AND rec.run_id <> $1 AND r.job_name = $5
				AND rec.record->>'status' = 'ok'
			ORDER BY rec.written_at DESC
			LIMIT 1
		) p ON true`,
		[worker.runId, worker.id, n, leaseMs, options.previousOf ?? null, options.slots ?? null],
		"fleet_claim",
	);
	return rows.map(toLease);
}

/**
 * Extend every lease and slot `worker` holds, and note its heartbeat. A worker that stops calling this
 * loses its targets and slots to the others once their time passes. With `targetIds`, only those targets'
 * leases are extended: a target the worker no longer keeps track of (its settlement failed and was given
 * up) lapses to the others instead of staying leased to a live worker for ever. Returns the ids of the
 * targets still held (of `targetIds`, when given).
 */
export async function renewLeases(
	fleet: Fleet,
	worker: FleetWorker,
	leaseMs: number,
	targetIds?: readonly string[],
): Promise<string[]> {
	const rows = await fleet.query<{ target_id: string }>(
		`WITH beat AS (
			-- An ended worker's row keeps the beat it ended with: a renewal on its way at the end is no sign of life.
			UPDATE workers SET last_beat = now() WHERE id = $2 AND ended_at IS NULL
		), slots_kept AS (
			UPDATE slots SET held_until = now() + make_interval(secs => $3::float8 / 1000)
			WHERE run_id = $1 AND holder = $2
		), renewed AS (
			UPDATE targets SET lease_until = now() + make_interval(secs => $3::float8 / 1000)
			WHERE run_id = $1 AND lease_owner = $2 AND state = 'leased'
				AND ($4::text[] IS NULL OR target_id = ANY($4::text[]))
			RETURNING target_id
		)
		SELECT target_id FROM renewed`,
		[worker.runId, worker.id, leaseMs, targetIds === undefined ? null : [...targetIds]],
		"fleet_renew",
	);
	return rows.map((row) => row.target_id);
}

type LeaseRef = Pick<FleetLease, "runId" | "targetId" | "epoch">;

/**
 * The claimed fetch of a host with a delay starts now: the host's next claim may come a delay from now
 * (not from the claim: a worker may start its fetch late). Fenced by the lease; false when it is not held.
 */
export async function fetchStarting(fleet: Fleet, lease: LeaseRef & Pick<FleetLease, "host">): Promise<boolean> {
	const rows = await fleet.query(
		`UPDATE hosts h SET starting_until = NULL, starting_target = NULL,
			next_allowed_at = greatest(h.next_allowed_at, now() + make_interval(secs => h.delay_ms::float8 / 1000))
		WHERE h.run_id = $1 AND h.host = $4 AND h.delay_ms > 0 AND EXISTS (
			SELECT 1 FROM targets t WHERE t.run_id = $1 AND t.target_id = $2 AND t.lease_epoch = $3 AND t.state = 'leased'
		)
		RETURNING 1`,
		[lease.runId, lease.targetId, lease.epoch, lease.host],
		"fleet_fetch_starting",
	);
	return rows.length === 1;
}

/** Note the service's task id for the target before waiting on it: a worker that takes over polls it. Fenced. */
export async function storeTaskId(fleet: Fleet, lease: LeaseRef, taskId: string): Promise<boolean> {
	const rows = await fleet.query(
		`UPDATE targets SET task_id = $4
		WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased' RETURNING 1`,
		[lease.runId, lease.targetId, lease.epoch, taskId],
		"fleet_task_id",
	);
	return rows.length === 1;
}

/**
 * The target's record, written once: the target becomes done (`failed` when its record failed, so
 * `fleet status` counts failed records), its record is stored with the epoch, its reservation is
 * dropped and `credits` are added to the run's spending, all in one statement. Fenced: a lease whose
 * epoch is no longer the target's (another worker took it over) writes nothing and gets false.
 */
export async function completeTarget(
	fleet: Fleet,
	lease: LeaseRef,
	record: unknown,
	credits: number,
	/** A crawled page's links and redirect landing, kept with its record for a later run to follow while it is fresh. */
	kept: { readonly links: readonly string[] | null; readonly landing: string | null } | null = null,
): Promise<boolean> {
	const failed = (record as { readonly status?: unknown } | null)?.status === "failed";
	return settle(fleet, lease, failed ? "failed" : "done", {
		record,
		credits,
		error: null,
		links: kept?.links ?? null,
		landing: kept?.landing ?? null,
	});
}

/**
 * A crawled page left out as fresh (`freshness`): its links were followed from its last fetch, nothing was
 * sent, it gets no record; it settles `fresh`, its reservation and host place given back, and it no longer
 * counts toward `max_pages` (`runs.pages`). Fenced as completeTarget.
 */
export async function freshTarget(fleet: Fleet, lease: LeaseRef): Promise<boolean> {
	return settle(fleet, lease, "fresh", { record: undefined, credits: 0, error: null });
}

/**
 * The target ends without a record: `failed` for good, or back to `queued` for another attempt (by any
 * worker). `credits` a failed fetch still cost are added to the run's spending. Fenced as completeTarget.
 */
export async function releaseTarget(
	fleet: Fleet,
	lease: LeaseRef,
	outcome: { readonly retry: boolean; readonly error?: string; readonly credits?: number },
): Promise<boolean> {
	return settle(fleet, lease, outcome.retry ? "queued" : "failed", {
		record: undefined,
		credits: outcome.credits ?? 0,
		error: outcome.error ?? null,
	});
}

/**
 * A target that was work of the fleet's own, not a page (a seed origin's sitemaps), ends done without a
 * record; `credits` its fetches cost are the run's spending. Fenced as completeTarget.
 */
export async function finishTarget(fleet: Fleet, lease: LeaseRef, credits: number): Promise<boolean> {
	return settle(fleet, lease, "done", { record: undefined, credits, error: null });
}

/**
 * The target waits behind breaker `breaker` (a domain or host): no record, no credit, its reservation and
 * its host's in-flight place given back. Fenced as completeTarget.
 */
export async function parkLeasedTarget(
	fleet: Pick<Fleet, "query">,
	lease: LeaseRef,
	breaker: string,
): Promise<boolean> {
	return settle(fleet, lease, "parked", { record: undefined, credits: 0, error: null, breaker });
}

async function settle(
	fleet: Pick<Fleet, "query">,
	lease: LeaseRef,
	state: "done" | "failed" | "queued" | "parked" | "fresh",
	what: {
		record: unknown;
		credits: number;
		error: string | null;
		breaker?: string;
		links?: readonly string[] | null;
		landing?: string | null;
	},
): Promise<boolean> {
	const [row] = await fleet.query<{ n: number }>(
		`WITH current AS (
			SELECT target_id, host, reserved FROM targets
			WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased'
			FOR UPDATE
		), settled AS (
			UPDATE targets t SET state = $4, lease_owner = NULL, lease_until = NULL, reserved = 0, reservations = '{}',
				credits = t.credits + $5, error = $6, breaker = $8
			FROM current c WHERE t.run_id = $1 AND t.target_id = c.target_id
			RETURNING c.target_id, c.host, c.reserved, t.uncounted
		), record AS (
			INSERT INTO records (run_id, target_id, epoch, record, links, landing)
			SELECT $1, $2, $3, $7::jsonb, $9::text[], $10::text FROM settled WHERE $7::jsonb IS NOT NULL
		), host_freed AS (
			-- A target settled before its fetch started (parked, given back): the host waits no longer on it.
			-- Only that target's settle frees it: an earlier fetch settling after the next claim must not let
			-- a claim past a fetch that has not started. A host with neither a concurrency nor a start awaited
			-- from this target is left alone: every settle locking the row of a one-host job's host made the
			-- claims that met the lock come back empty.
			UPDATE hosts h SET
				starting_until = CASE WHEN h.starting_target = s.target_id THEN NULL ELSE h.starting_until END,
				starting_target = CASE WHEN h.starting_target = s.target_id THEN NULL ELSE h.starting_target END,
				in_flight = CASE WHEN h.max_in_flight IS NULL THEN h.in_flight ELSE greatest(h.in_flight - 1, 0) END
			FROM settled s WHERE h.run_id = $1 AND h.host = s.host
				AND (h.max_in_flight IS NOT NULL OR h.starting_target = s.target_id)
		), budget AS (
			-- A page settled fresh was read, not fetched: it leaves \`max_pages\`'s count, as in a local crawl
			-- (one found fresh as it entered the frontier was never in it).
			UPDATE runs r SET spent = r.spent + $5, reserved = r.reserved - s.reserved,
				pages = r.pages - CASE WHEN $4 = 'fresh' AND NOT s.uncounted THEN 1 ELSE 0 END
			FROM settled s WHERE r.id = $1 AND ($5 <> 0 OR s.reserved <> 0 OR ($4 = 'fresh' AND NOT s.uncounted))
		)
		SELECT count(*)::int AS n FROM settled`,
		[
			lease.runId,
			lease.targetId,
			lease.epoch,
			state,
			what.credits,
			what.error,
			what.record === undefined ? null : JSON.stringify(what.record),
			what.breaker ?? null,
			what.links ?? null,
			what.landing ?? null,
		],
		"fleet_settle",
	);
	return row?.n === 1;
}
