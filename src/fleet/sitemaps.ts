import type { Fleet } from "./connect.js";
import { insertTargets } from "./load-targets.js";
import type { FleetLease, FleetTargetInput } from "./types.js";

type LeaseRef = Pick<FleetLease, "runId" | "targetId" | "epoch">;

/**
 * What the earlier holders of a leased long task (a seed origin's sitemaps) noted of their work, oldest
 * first: the one taking it over goes on from there instead of paying for it again.
 */
export async function readProgress(fleet: Fleet, lease: LeaseRef): Promise<unknown[]> {
	const [row] = await fleet.query<{ progress: unknown[] | null }>(
		"SELECT progress FROM targets WHERE run_id = $1 AND target_id = $2",
		[lease.runId, lease.targetId],
		"fleet_progress_read",
	);
	return Array.isArray(row?.progress) ? row.progress : [];
}

/** Note steps done on the leased task, for whoever takes it over. Fenced: false once the lease is another's. */
export async function addProgress(fleet: Fleet, lease: LeaseRef, steps: readonly unknown[]): Promise<boolean> {
	if (steps.length === 0) return true;
	const rows = await fleet.query(
		`UPDATE targets SET progress = coalesce(progress, '[]'::jsonb) || $4::jsonb
		WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased' RETURNING 1`,
		[lease.runId, lease.targetId, lease.epoch, JSON.stringify(steps)],
		"fleet_progress_add",
	);
	return rows.length === 1;
}

/**
 * Pages a sitemap lists enter the frontier as seeds do (no parent, each URL key once, a queued one found
 * deeper taking their depth), fenced by the lease of the task reading it. Returns how many were new, or
 * null when the lease is no longer this epoch's.
 */
export async function addListedPages(
	fleet: Pick<Fleet, "query">,
	lease: LeaseRef,
	pages: readonly FleetTargetInput[],
): Promise<number | null> {
	const held = await fleet.query(
		"SELECT 1 FROM targets WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased'",
		[lease.runId, lease.targetId, lease.epoch],
		"fleet_lease_held",
	);
	if (held.length === 0) return null;
	const unparented = pages.map((page) => ({ ...page, parent: null }));
	return insertTargets(fleet.query, lease.runId, unparented, { targetId: lease.targetId, epoch: lease.epoch });
}
