import { type FleetBreaker, openBreakers } from "./breakers.js";
import type { Fleet } from "./connect.js";
import { toRun } from "./open-run.js";
import type { FleetRun } from "./types.js";

/**
 * A crawl's room under `max_pages` came free (a queued page taken out as a redirect's landing, a page
 * settled fresh) and a spare waits for it: not complete, the next claim queues it (`fillFreedRoom`). In
 * the same statement as the settled targets it reads with: a room freed as the last page settles is seen.
 */
const SPARE_ROOM = "coalesce(r.spares > 0 AND r.pages < r.max_pages, false)";

/**
 * True when the run has all its targets (loading ended) and none is queued, leased or parked: a leased page
 * may still add links, and a parked one waits for its breaker, so each holds the run open, as does room
 * a spare could take. One statement.
 */
export async function isComplete(fleet: Fleet, runId: number): Promise<boolean> {
	const [row] = await fleet.query<{ complete: boolean }>(
		`SELECT r.state IN ('running', 'complete')
			AND NOT EXISTS (SELECT 1 FROM targets t WHERE t.run_id = r.id AND t.state IN ('queued', 'leased', 'parked'))
			AND NOT ${SPARE_ROOM} AS complete
		FROM runs r WHERE r.id = $1`,
		[runId],
	);
	return row?.complete ?? false;
}

/** True when the run's only unsettled targets are parked behind breakers (none queued, none leased). */
export async function onlyParkedLeft(fleet: Fleet, runId: number): Promise<boolean> {
	const [row] = await fleet.query<{ parked: boolean }>(
		`SELECT r.state IN ('running', 'complete')
			AND NOT EXISTS (SELECT 1 FROM targets t WHERE t.run_id = r.id AND t.state IN ('queued', 'leased'))
			AND EXISTS (SELECT 1 FROM targets t WHERE t.run_id = r.id AND t.state = 'parked') AS parked
		FROM runs r WHERE r.id = $1`,
		[runId],
		"fleet_only_parked",
	);
	return row?.parked ?? false;
}

/** Mark the run complete if it is (as isComplete, in the same statement); true when it is complete now. */
export async function finishFleetRun(fleet: Fleet, runId: number): Promise<boolean> {
	const [row] = await fleet.query<{ state: string }>(
		`UPDATE runs r SET state = 'complete', completed_at = coalesce(r.completed_at, now())
		WHERE r.id = $1 AND r.state IN ('running', 'complete')
			AND NOT EXISTS (SELECT 1 FROM targets t WHERE t.run_id = r.id AND t.state IN ('queued', 'leased', 'parked'))
			AND NOT ${SPARE_ROOM}
		RETURNING r.state`,
		[runId],
	);
	return row !== undefined;
}

export interface FleetStatus {
	readonly run: FleetRun;
	/** The run's pages by state (a crawl's sitemap reading, depth -1, is not one of them). */
	readonly targets: {
		readonly queued: number;
		readonly leased: number;
		readonly done: number;
		readonly failed: number;
		/** Waiting behind an open breaker. */
		readonly parked: number;
	};
	readonly workers: ReadonlyArray<{
		readonly id: string;
		readonly hostname: string;
		readonly pid: number;
		readonly startedAt: Date;
		readonly lastBeat: Date;
		/** When it stopped cleanly (it no longer counts among the live workers); null while it runs or once killed. */
		readonly endedAt: Date | null;
	}>;
	/**
	 * The job's targets left out as fresh (`freshness`: their newest record ok and recent): never fetched in
	 * this run, and in none of `targets`' states — those the run's loading left out, and a crawl's pages
	 * whose links were followed from their last fetch (settled `fresh`).
	 */
	readonly fresh: number;
	/** Of `fresh`: a crawl's pages settled fresh, their links followed from their last fetch. */
	readonly freshPages: number;
	/**
	 * Slots held now (not lapsed) against the run's limit; 0 once the run is complete (a killed worker's
	 * slots stay held until they lapse, with nothing left to fetch).
	 */
	readonly inFlight: number;
	readonly concurrencyLimit: number;
	readonly credits: { readonly spent: number; readonly reserved: number; readonly max: number | null };
	/** Null when the fleet is not paused now. */
	readonly pausedUntil: Date | null;
	/** Breakers not closed now, in the order they opened. */
	readonly breakers: readonly FleetBreaker[];
	/** The database's clock when this was read. */
	readonly at: Date;
}

/** What `fleet status` shows of one run. */
export async function fleetStatus(fleet: Fleet, runId: number): Promise<FleetStatus | null> {
	const [row] = await fleet.query<{
		id: string;
		job_name: string;
		run_name: string;
		state: FleetRun["state"];
		created_at: Date;
		spent: string;
		reserved: string;
		max_credits: string | null;
		concurrency_limit: number;
		paused_until: Date | null;
		at: Date;
		counts: Record<string, number> | null;
		in_flight: number;
		fresh: number;
		workers: Array<{
			id: string;
			hostname: string;
			pid: number;
			started_at: string;
			last_beat: string;
			ended_at: string | null;
		}> | null;
	}>(
		`SELECT r.id, r.job_name, r.run_name, r.state, r.created_at, r.retry_failed, r.spent, r.reserved, r.max_credits,
			r.concurrency_limit, CASE WHEN r.paused_until > now() THEN r.paused_until END AS paused_until, now() AS at, r.fresh,
			(SELECT jsonb_object_agg(state, n) FROM (SELECT state, count(*)::int AS n FROM targets WHERE run_id = r.id AND depth >= 0 GROUP BY state) c) AS counts,
			CASE WHEN r.state = 'complete' THEN 0 ELSE
				(SELECT count(*)::int FROM slots s WHERE s.run_id = r.id AND s.holder IS NOT NULL AND s.held_until >= now()) END AS in_flight,
			(SELECT jsonb_agg(w ORDER BY w.started_at) FROM (SELECT id, hostname, pid, started_at, last_beat, ended_at FROM workers WHERE run_id = r.id) w) AS workers
		FROM runs r WHERE r.id = $1`,
		[runId],
	);
	if (!row) return null;
	const count = (state: string) => row.counts?.[state] ?? 0;
	return {
		run: toRun(row),
		targets: {
			queued: count("queued"),
			leased: count("leased"),
			done: count("done"),
			failed: count("failed"),
			parked: count("parked"),
		},
		workers: (row.workers ?? []).map((worker) => ({
			id: worker.id,
			hostname: worker.hostname,
			pid: worker.pid,
			startedAt: new Date(worker.started_at),
			lastBeat: new Date(worker.last_beat),
			endedAt: worker.ended_at === null ? null : new Date(worker.ended_at),
		})),
		fresh: row.fresh + count("fresh"),
		freshPages: count("fresh"),
		inFlight: row.in_flight,
		concurrencyLimit: row.concurrency_limit,
		credits: {
			spent: Number(row.spent),
			reserved: Number(row.reserved),
			max: row.max_credits === null ? null : Number(row.max_credits),
		},
		pausedUntil: row.paused_until,
		breakers: await openBreakers(fleet, runId),
		at: row.at,
	};
}

/** The job's fleet runs, newest first. */
export async function listFleetRuns(fleet: Fleet, jobName: string): Promise<FleetRun[]> {
	const rows = await fleet.query<Parameters<typeof toRun>[0]>(
		"SELECT id, job_name, run_name, state, created_at, retry_failed FROM runs WHERE job_name = $1 ORDER BY created_at DESC, id DESC",
		[jobName],
	);
	return rows.map(toRun);
}

/**
 * A run's targets by state as summaries and `fleet status --json` print them: `parked` (behind an open
 * breaker) only when some are, so the usual four states keep their shape.
 */
export function targetCounts(targets: FleetStatus["targets"]): {
	queued: number;
	leased: number;
	done: number;
	failed: number;
	parked?: number;
} {
	const { parked, ...states } = targets;
	return parked > 0 ? { ...states, parked } : states;
}
