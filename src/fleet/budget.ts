import type { Fleet } from "./connect.js";
import type { FleetLease } from "./types.js";

type LeaseRef = Pick<FleetLease, "runId" | "targetId" | "epoch">;

/**
 * Book `worstCase` credits of the run's budget for the leased target's fetch, if they still fit under
 * `max_credits` with everything spent and reserved fleet-wide: one conditional update of the run's row,
 * so concurrent reservers queue on it and the last one to fit is the last one booked. The booking sits
 * on the target too, so a lapsed lease gives it back. False (nothing booked) when it does not fit or the
 * lease is no longer this worker's.
 */
export async function reserveCredits(fleet: Fleet, lease: LeaseRef, worstCase: number): Promise<boolean> {
	const rows = await fleet.query(
		`WITH target AS (
			SELECT target_id FROM targets
			WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased'
			FOR UPDATE
		), booked AS (
			UPDATE runs SET reserved = reserved + $4
			WHERE id = $1 AND EXISTS (SELECT 1 FROM target)
				AND (max_credits IS NULL OR spent + reserved + $4 <= max_credits)
			RETURNING id
		)
		UPDATE targets t SET reserved = t.reserved + $4
		FROM booked WHERE t.run_id = $1 AND t.target_id = $2
		RETURNING 1`,
		[lease.runId, lease.targetId, lease.epoch, worstCase],
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
