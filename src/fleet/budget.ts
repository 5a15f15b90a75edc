import { randomUUID } from "node:crypto";
import type { Fleet } from "./connect.js";
import type { FleetLease } from "./types.js";

type LeaseRef = Pick<FleetLease, "runId" | "targetId" | "epoch">;

/**
 * Book `worstCase` credits of the run's budget for the leased target's fetch, if they still fit under
 * `max_credits` with everything spent and reserved fleet-wide: one conditional update of the run's row,
 * so concurrent reservers queue on it and the last one to fit is the last one booked. The booking sits
 * on the target too, so a lapsed lease gives it back. False (nothing booked) when it does not fit or the
 * lease is no longer this worker's.
 *
 * `token` names this one reservation: sent again with the same token (its answer was lost with the
 * connection, the statement committed) it is not booked twice, and answers true.
 */
export async function reserveCredits(
	fleet: Fleet,
	lease: LeaseRef,
	worstCase: number,
	token: string = randomUUID(),
): Promise<boolean> {
	const rows = await fleet.query(
		`WITH target AS (
			SELECT target_id, $5::text = ANY(reservations) AS booked FROM targets
			WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased'
			FOR UPDATE
		), booked AS (
			UPDATE runs SET reserved = reserved + $4
			WHERE id = $1 AND EXISTS (SELECT 1 FROM target WHERE NOT booked)
				AND (max_credits IS NULL OR spent + reserved + $4 <= max_credits)
			RETURNING id
		), noted AS (
			UPDATE targets t SET reserved = t.reserved + $4, reservations = array_append(t.reservations, $5::text)
			FROM booked WHERE t.run_id = $1 AND t.target_id = $2
			RETURNING 1
		)
		SELECT 1 FROM noted UNION ALL SELECT 1 FROM target WHERE booked`,
		[lease.runId, lease.targetId, lease.epoch, worstCase, token],
		"fleet_reserve",
	);
	return rows.length === 1;
}

/**
 * Replace the target's reservation with what its fetch really cost (a fetch that cost credits without
 * ending the target: a retry follows). completeTarget does this itself for the last fetch. Fenced.
 */
export async function commitCredits(fleet: Fleet, lease: LeaseRef, actual: number): Promise<boolean> {
	return settleReservation(fleet, lease, actual);
}

/** Drop the target's reservation unspent (the fetch failed before costing anything, or never ran). Fenced. */
export async function releaseCredits(fleet: Fleet, lease: LeaseRef): Promise<boolean> {
	return settleReservation(fleet, lease, 0);
}

async function settleReservation(fleet: Fleet, lease: LeaseRef, actual: number): Promise<boolean> {
	const rows = await fleet.query(
		`WITH current AS (
			SELECT target_id, reserved FROM targets
			WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased'
			FOR UPDATE
		), settled AS (
			UPDATE targets t SET reserved = 0, credits = t.credits + $4
			FROM current c WHERE t.run_id = $1 AND t.target_id = c.target_id
			RETURNING c.reserved
		)
		UPDATE runs r SET spent = r.spent + $4, reserved = r.reserved - s.reserved
		FROM settled s WHERE r.id = $1
		RETURNING 1`,
		[lease.runId, lease.targetId, lease.epoch, actual],
		"fleet_commit",
	);
	return rows.length === 1;
}

/**
 * A fetch booked on a lease beyond the target's own (a crawl's robots.txt or sitemap file, a re-fetch in
 * a stronger mode) is over: `reserved` leaves the target's and the run's reservations (unless the lease
 * lapsed meanwhile: the reaper gave them back already) and `actual` joins the run's spending. One statement.
 */
export async function settleExtraCredits(
	fleet: Fleet,
	lease: LeaseRef,
	reserved: number,
	actual: number,
): Promise<void> {
	await fleet.query(
		`WITH held AS (
			UPDATE targets SET reserved = greatest(reserved - $4, 0)
			WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased'
			RETURNING 1
		)
		UPDATE runs SET spent = spent + $5,
			reserved = reserved - CASE WHEN EXISTS (SELECT 1 FROM held) THEN $4 ELSE 0 END
		WHERE id = $1`,
		[lease.runId, lease.targetId, lease.epoch, reserved, actual],
		"fleet_extra_credits",
	);
}
