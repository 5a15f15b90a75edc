import type { FleetBreakerState } from "./breakers.js";
import { BREAKER_WATCHED } from "./breakers.js";
import type { Fleet } from "./connect.js";
import type { FleetLimit } from "./slots.js";

/** What each worker of a run reads four times a second. */
export interface FleetRunWatch {
	/** What is left of the fleet's pause (a 429), ms; null when it is not paused. */
	readonly pauseMs: number | null;
	readonly limit: FleetLimit;
	/** Workers of the run that have not ended and whose last beat is younger than a lease. */
	readonly liveWorkers: number;
	/** The breakers' watch list (as `breakerWatchList` reads it): empty for a job without breakers. */
	readonly breakers: ReadonlyArray<{ readonly domain: string; readonly state: FleetBreakerState }>;
}

/**
 * The fleet's pause, its limit, its live workers and its breakers' watch list, in one statement: a
 * worker polls them all on one timer, one round trip a poll. Null when the run is gone.
 */
export async function watchFleetRun(fleet: Fleet, runId: number, leaseMs: number): Promise<FleetRunWatch | null> {
	const [row] = await fleet.query<{
		ms: number | null;
		limit: number;
		epoch: string;
		workers: number;
		breakers: Array<{ domain: string; state: FleetBreakerState }> | null;
	}>(
		`SELECT CASE WHEN paused_until > now() THEN (extract(epoch FROM paused_until - now()) * 1000)::int END AS ms,
			concurrency_limit AS limit, limit_epoch AS epoch,
			(SELECT count(*)::int FROM workers w
			WHERE w.run_id = r.id AND w.ended_at IS NULL
				AND w.last_beat > now() - make_interval(secs => $2::float8 / 1000)) AS workers,
			(SELECT jsonb_agg(jsonb_build_object('domain', b.domain, 'state', b.state)) FROM breakers b
			WHERE b.run_id = r.id AND ${BREAKER_WATCHED}) AS breakers
		FROM runs r WHERE id = $1`,
		[runId, leaseMs],
		"fleet_watch_run",
	);
	if (!row) return null;
	return {
		pauseMs: row.ms,
		limit: { limit: row.limit, epoch: Number(row.epoch) },
		liveWorkers: row.workers,
		breakers: row.breakers ?? [],
	};
}
