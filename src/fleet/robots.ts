import type { Fleet } from "./connect.js";

/** One robots.txt of a fleet run: fetched by one worker, read by all. */
export type FleetRobots =
	/** Another worker is fetching it (its claim lasts until `until`). */
	| { readonly state: "fetching" }
	/** Fetched: its body (null: missing or failed, which allows everything). */
	| { readonly state: "done"; readonly body: string | null };

/**
 * Claim the fetch of `url`'s robots.txt for the run, or read what the worker that claimed it stored.
 * "mine": this worker fetches it now (then `storeRobots`); a claim left by a worker that died passes on
 * once it is `leaseMs` old. A body another fleet run of the job stored less than a day ago is the run's
 * at once, unpaid (RFC 9309 §2.4: a cached copy is used up to 24 hours).
 */
export async function claimRobots(
	fleet: Fleet,
	runId: number,
	url: string,
	worker: string,
	leaseMs: number,
): Promise<"mine" | FleetRobots> {
	await fleet.query(
		`INSERT INTO robots (run_id, url, state, body, stored_at)
		SELECT $1, $2, 'done', earlier.body, earlier.stored_at
		FROM robots earlier JOIN runs other ON other.id = earlier.run_id
		WHERE earlier.url = $2 AND earlier.state = 'done' AND earlier.body IS NOT NULL
			AND earlier.stored_at > now() - interval '24 hours' AND earlier.run_id <> $1
			AND other.job_name = (SELECT job_name FROM runs WHERE id = $1)
		ORDER BY earlier.stored_at DESC LIMIT 1
		ON CONFLICT (run_id, url) DO NOTHING`,
		[runId, url],
		"fleet_robots_reuse",
	);
	const [row] = await fleet.query<{ mine: boolean; state: string; body: string | null }>(
		`INSERT INTO robots (run_id, url, fetcher, fetching_until) VALUES ($1, $2, $3, now() + make_interval(secs => $4::float8 / 1000))
		ON CONFLICT (run_id, url) DO UPDATE SET fetcher = EXCLUDED.fetcher, fetching_until = EXCLUDED.fetching_until
			WHERE robots.state = 'fetching' AND robots.fetching_until < now()
		RETURNING true AS mine, state, body`,
		[runId, url, worker, leaseMs],
		"fleet_robots_claim",
	);
	if (row) return "mine";
	const [current] = await fleet.query<{ state: string; body: string | null }>(
		"SELECT state, body FROM robots WHERE run_id = $1 AND url = $2",
		[runId, url],
		"fleet_robots_read",
	);
	return current?.state === "done" ? { state: "done", body: current.body } : { state: "fetching" };
}

/** The robots.txt this worker fetched (null: missing), for every worker of the run. */
export async function storeRobots(fleet: Fleet, runId: number, url: string, body: string | null): Promise<void> {
	await fleet.query(
		"UPDATE robots SET state = 'done', body = $3, fetcher = NULL, fetching_until = NULL, stored_at = now() WHERE run_id = $1 AND url = $2",
		[runId, url, body],
		"fleet_robots_store",
	);
}
