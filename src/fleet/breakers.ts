import type { Fleet } from "./connect.js";
import { parkLeasedTarget } from "./leases.js";
import type { FleetLease } from "./types.js";

/**
 * The per-domain paid-failure breakers of a fleet run, one row per domain shared by every worker: the
 * latest charged outcomes, the state (closed, open, or probing with its one probe target), and the
 * targets an open breaker parked (state `parked`, `breaker` naming it), which no claim takes until the
 * breaker closes. Rows exist only for domains where a charged fetch went wrong.
 */

export type FleetBreakerState = "closed" | "open" | "probing";

/** A breaker that is not closed, as the summary and `fleet status` name it. */
export interface FleetBreaker {
	readonly domain: string;
	readonly state: Exclude<FleetBreakerState, "closed">;
	readonly reason: string;
	readonly openedAt: Date;
	/** Targets parked behind it now. */
	readonly parked: number;
	readonly creditsSaved: number;
}

/** What a claimed target of a domain whose breaker is not closed may do. */
export type FleetAdmission = "fetch" | "probe" | "park";

/** The cool-down parameter (ms) as an interval, `$n` in the statement. */
const coolDown = (n: number) => `make_interval(secs => $${n}::float8 / 1000)`;

/** A breaker row `b` on the watch list: not closed, or closed with wrong outcomes in its window. */
export const BREAKER_WATCHED = "(b.state <> 'closed' OR true = ANY(b.outcomes))";

/**
 * The domains a worker must ask about before fetching (a breaker not closed) or must report good
 * outcomes of (a closed breaker with wrong outcomes in its window). A worker's polls read them with the
 * fleet's limit (`watchFleetRun`); this is its first read.
 */
export async function breakerWatchList(
	fleet: Fleet,
	runId: number,
): Promise<Array<{ domain: string; state: FleetBreakerState }>> {
	return fleet.query<{ domain: string; state: FleetBreakerState }>(
		`SELECT domain, state FROM breakers b WHERE run_id = $1 AND ${BREAKER_WATCHED}`,
		[runId],
		"fleet_breakers_watch",
	);
}

/**
 * A charged outcome of `domain` (true: useless or failed) joins its window; when `trip` of the latest
 * `window` are wrong the breaker opens. Outcomes of a breaker already open change nothing (their fetches
 * were sent before it opened). Returns the reason when this outcome opened it, else null.
 */
export async function recordBreakerOutcome(
	fleet: Fleet,
	runId: number,
	domain: string,
	outcome: { readonly bad: boolean; readonly why: string },
	spec: { readonly window: number; readonly trip: number },
): Promise<string | null> {
	return fleet.transaction(async (query) => {
		await query("INSERT INTO breakers (run_id, domain) VALUES ($1, $2) ON CONFLICT DO NOTHING", [runId, domain]);
		const [row] = await query<{ state: FleetBreakerState; outcomes: boolean[] }>(
			"SELECT state, outcomes FROM breakers WHERE run_id = $1 AND domain = $2 FOR UPDATE",
			[runId, domain],
		);
		if (row?.state !== "closed") return null;
		const outcomes = [...row.outcomes, outcome.bad].slice(-spec.window);
		const bad = outcomes.filter(Boolean).length;
		const reason =
			bad >= spec.trip
				? `${bad} of the last ${outcomes.length} charged fetches were useless or failed (last: ${outcome.why})`
				: null;
		await query(
			`UPDATE breakers SET outcomes = $3,
				state = CASE WHEN $4::text IS NULL THEN state ELSE 'open' END,
				opened_at = CASE WHEN $4::text IS NULL THEN opened_at ELSE now() END,
				reason = coalesce($4, reason)
			WHERE run_id = $1 AND domain = $2`,
			[runId, domain, outcomes, reason],
		);
		return reason;
	});
}

/**
 * A claimed target of `domain`, whose breaker this worker saw not closed: fetched (the breaker closed
 * meanwhile), sent as the half-open probe (the cool-down passed and no other probe is alive, or it is
 * already the probe: a probe whose worker died is claimed again), or parked.
 */
export async function admitTarget(
	fleet: Fleet,
	lease: Pick<FleetLease, "runId" | "targetId">,
	domain: string,
	coolDownMs: number,
): Promise<FleetAdmission> {
	const [row] = await fleet.query<{ state: FleetBreakerState | null; probe: boolean }>(
		`WITH before AS (
			SELECT state FROM breakers WHERE run_id = $1 AND domain = $2
		), probe AS (
			UPDATE breakers b SET state = 'probing', probe_target = $4
			WHERE b.run_id = $1 AND b.domain = $2 AND (
				b.probe_target = $4
				OR (b.state = 'open' AND b.opened_at + ${coolDown(3)} <= now())
				OR (b.state = 'probing' AND NOT EXISTS (
					SELECT 1 FROM targets t
					WHERE t.run_id = $1 AND t.target_id = b.probe_target AND t.state IN ('queued', 'leased')
				))
			)
			RETURNING 1
		)
		SELECT (SELECT state FROM before) AS state, EXISTS (SELECT 1 FROM probe) AS probe`,
		[lease.runId, domain, coolDownMs, lease.targetId],
		"fleet_breaker_admit",
	);
	if (row?.probe) return "probe";
	return row?.state === "open" || row?.state === "probing" ? "park" : "fetch";
}

/**
 * The target waits behind its domain's open breaker: no record, no credit, its reservation and its
 * host's in-flight place given back, its worst case counted as saved (and kept on its row, for the
 * breaker to take back out should the target go as its probe). Fenced by the lease. One transaction: no
 * worker sees the target parked and its worst case not yet saved.
 */
export async function parkTarget(
	fleet: Fleet,
	lease: Pick<FleetLease, "runId" | "targetId" | "epoch">,
	domain: string,
	worstCase: number,
): Promise<boolean> {
	return fleet.transaction(async (query) => {
		if (!(await parkLeasedTarget({ query }, lease, domain))) return false;
		await query(
			`WITH kept AS (
				UPDATE targets SET saved = $4 WHERE run_id = $1 AND target_id = $3
			)
			UPDATE breakers SET credits_saved = credits_saved + $4 WHERE run_id = $1 AND domain = $2`,
			[lease.runId, domain, lease.targetId, worstCase],
			"fleet_breaker_saved",
		);
		return true;
	});
}

/**
 * The probe's answer: useful closes the breaker and puts its parked targets back in the queue; anything
 * else charged opens it again for another cool-down. Only the probe named in the row settles it.
 */
export async function settleProbe(
	fleet: Fleet,
	runId: number,
	domain: string,
	targetId: string,
	answer: { readonly useful: true } | { readonly useful: false; readonly reason: string },
): Promise<boolean> {
	if (!answer.useful) {
		const rows = await fleet.query(
			`UPDATE breakers SET state = 'open', opened_at = now(), reason = $4, probe_target = NULL
			WHERE run_id = $1 AND domain = $2 AND state = 'probing' AND probe_target = $3 RETURNING 1`,
			[runId, domain, targetId, answer.reason],
			"fleet_probe_reopen",
		);
		return rows.length === 1;
	}
	const [row] = await fleet.query<{ closed: number }>(
		`WITH closed AS (
			UPDATE breakers SET state = 'closed', outcomes = '{}', opened_at = NULL, reason = NULL, probe_target = NULL,
				credits_saved = 0
			WHERE run_id = $1 AND domain = $2 AND state = 'probing' AND probe_target = $3
			RETURNING domain
		), unparked AS (
			UPDATE targets SET state = 'queued', breaker = NULL, saved = 0
			WHERE run_id = $1 AND state = 'parked' AND breaker = $2 AND EXISTS (SELECT 1 FROM closed)
		)
		SELECT count(*)::int AS closed FROM closed`,
		[runId, domain, targetId],
		"fleet_probe_close",
	);
	return row?.closed === 1;
}

/** The probe ended without an answer (a stop, a lost lease): the breaker is due a probe again at once. */
export async function probeLost(
	fleet: Fleet,
	runId: number,
	domain: string,
	targetId: string,
	coolDownMs: number,
): Promise<void> {
	await fleet.query(
		`UPDATE breakers SET state = 'open', probe_target = NULL, opened_at = now() - ${coolDown(3)}
		WHERE run_id = $1 AND domain = $2 AND state = 'probing' AND probe_target = $4`,
		[runId, domain, coolDownMs, targetId],
		"fleet_probe_lost",
	);
}

/**
 * With nothing queued and nothing leased, the one breaker whose probe is due (its cool-down passed, or its
 * probe was lost) sends one of its parked targets back to the queue as the probe, its worst case out of
 * the breaker's credits saved (it is fetched). Returns how many were sent back (0 or 1): 0 with parked
 * targets left means every open breaker is still cooling down.
 */
export async function releaseDueProbe(fleet: Fleet, runId: number, coolDownMs: number): Promise<number> {
	const [row] = await fleet.query<{ n: number }>(
		`WITH due AS (
			SELECT b.domain FROM breakers b
			WHERE b.run_id = $1 AND (
				(b.state = 'open' AND b.opened_at + ${coolDown(2)} <= now())
				OR (b.state = 'probing' AND NOT EXISTS (
					SELECT 1 FROM targets t
					WHERE t.run_id = $1 AND t.target_id = b.probe_target AND t.state IN ('queued', 'leased')
				))
			) AND EXISTS (SELECT 1 FROM targets p WHERE p.run_id = $1 AND p.state = 'parked' AND p.breaker = b.domain)
			ORDER BY b.opened_at
			LIMIT 1
			FOR UPDATE OF b SKIP LOCKED
		), pick AS (
			SELECT t.target_id, t.saved, d.domain FROM due d
			CROSS JOIN LATERAL (
				SELECT target_id, saved FROM targets
				WHERE run_id = $1 AND state = 'parked' AND breaker = d.domain
				ORDER BY seq LIMIT 1
				FOR UPDATE SKIP LOCKED
			) t
		), probing AS (
			UPDATE breakers b SET state = 'probing', probe_target = p.target_id,
				credits_saved = greatest(b.credits_saved - p.saved, 0)
			FROM pick p WHERE b.run_id = $1 AND b.domain = p.domain
		), queued AS (
			UPDATE targets t SET state = 'queued', breaker = NULL, saved = 0
			FROM pick p WHERE t.run_id = $1 AND t.target_id = p.target_id
		)
		SELECT count(*)::int AS n FROM pick`,
		[runId, coolDownMs],
		"fleet_release_probe",
	);
	return row?.n ?? 0;
}

/** The breakers not closed now, in the order they opened, each with the targets parked behind it. */
export async function openBreakers(fleet: Fleet, runId: number): Promise<FleetBreaker[]> {
	const rows = await fleet.query<{
		domain: string;
		state: "open" | "probing";
		reason: string | null;
		opened_at: Date | null;
		credits_saved: string;
		parked: number;
	}>(
		`SELECT b.domain, b.state, b.reason, b.opened_at, b.credits_saved,
			(SELECT count(*)::int FROM targets t WHERE t.run_id = $1 AND t.state = 'parked' AND t.breaker = b.domain) AS parked
		FROM breakers b WHERE b.run_id = $1 AND b.state <> 'closed'
		ORDER BY b.opened_at, b.domain`,
		[runId],
		"fleet_breakers_open",
	);
	return rows.map((row) => ({
		domain: row.domain,
		state: row.state,
		reason: row.reason ?? "",
		openedAt: row.opened_at ?? new Date(0),
		parked: row.parked,
		creditsSaved: Number(row.credits_saved),
	}));
}
