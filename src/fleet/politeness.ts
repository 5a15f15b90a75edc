import type { Fleet } from "./connect.js";

/**
 * Pause every worker of the run until `until` (a 429's reset): no target is claimed and no slot handed
 * out before then. A pause never shortens one already set.
 */
export async function pauseFleet(fleet: Fleet, runId: number, until: Date): Promise<void> {
	await fleet.query("UPDATE runs SET paused_until = greatest(coalesce(paused_until, $2), $2) WHERE id = $1", [
		runId,
		until,
	]);
}

/**
 * Set a host's politeness for the whole fleet (robots.txt `Crawl-delay` raising the job's delay, a
 * per-host concurrency). Creates the host's row when no target of it arrived yet. A host's in-flight
 * count is kept only while it has a concurrency: it is counted afresh from its leased targets here.
 */
export async function setHostPoliteness(
	fleet: Fleet,
	runId: number,
	host: string,
	politeness: { readonly delayMs: number; readonly maxInFlight?: number | null },
): Promise<void> {
	await fleet.query(
		`INSERT INTO hosts (run_id, host, delay_ms, max_in_flight, in_flight)
		VALUES ($1, $2, $3, $4,
			(SELECT count(*)::int FROM targets t WHERE t.run_id = $1 AND t.host = $2 AND t.state = 'leased'))
		ON CONFLICT (run_id, host) DO UPDATE
		SET delay_ms = EXCLUDED.delay_ms, max_in_flight = EXCLUDED.max_in_flight, in_flight = EXCLUDED.in_flight`,
		[runId, host, politeness.delayMs, politeness.maxInFlight ?? null],
	);
}
