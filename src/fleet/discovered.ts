import type { Fleet } from "./connect.js";
import { hostOf } from "./hosts.js";
import { insertTargets } from "./load-targets.js";
import { lockFrontier } from "./max-pages.js";
import type { FleetLease, FleetTargetInput } from "./types.js";

/**
 * Crawl links found on the leased page enter the run's frontier, each URL key once for the whole fleet
 * (a key already there, loaded or found by any worker, is skipped). Fenced by the page's lease. Call it
 * before completing the page: the run is complete only when nothing is queued or leased, so links added
 * while their page is still leased can never be missed. Returns how many were new.
 */
export async function addDiscovered(
	fleet: Pick<Fleet, "query">,
	page: Pick<FleetLease, "runId" | "targetId" | "epoch" | "depth">,
	links: readonly FleetTargetInput[],
): Promise<number> {
	const withDepth = links.map((link) => ({ ...link, depth: link.depth ?? page.depth + 1, parent: page.targetId }));
	return insertTargets(fleet.query, page.runId, withDepth, { targetId: page.targetId, epoch: page.epoch });
}

/**
 * Where a leased page's redirects ended (an address other than its own): fetched and paid as that page,
 * so it enters the run's targets as done — at depth -2, not a page: no record, not counted by
 * `fleet status` or `max_pages` — and no worker fetches it under its own address. An address already
 * queued no shallower than the page, and never claimed, is taken out of the queue the same way (the
 * page's links, followed from here, reach what it would; it leaves the run's page count, `runs.pages`,
 * and a spare takes the room when a claim comes up short, `fillFreedRoom`); so is one waiting as a spare;
 * one leased or fetched, queued shallower, or back in the queue after a holder that may have sent it, is
 * left as it is (its next holder polls a stored task; its room stays taken). Fenced by the page's lease,
 * as its links are; under the run's frontier lock, as every other change of its page count.
 */
export async function addLanding(
	fleet: Fleet,
	page: Pick<FleetLease, "runId" | "targetId" | "epoch" | "depth">,
	landing: { readonly url: string; readonly targetId: string },
): Promise<boolean> {
	const rows = await fleet.transaction(async (query) => {
		await lockFrontier(query, page.runId);
		return query(
			`WITH was AS (
				-- A spare becomes queued only under the frontier lock: what it was before this statement stays true.
				SELECT state = 'spare' AS spare FROM targets WHERE run_id = $1 AND url_key = $5
			), landed AS (
				INSERT INTO targets (run_id, target_id, url_key, url, host, depth, parent, state)
				SELECT $1, $4, $5, $5, $6, -2, $2, 'done'
				WHERE EXISTS (SELECT 1 FROM targets p WHERE p.run_id = $1 AND p.target_id = $2 AND p.lease_epoch = $3 AND p.state = 'leased')
				-- Never claimed: one an earlier holder may have sent (and paid, its task perhaps stored) stays queued
				-- and counted, so its room in max_pages is not handed to another page on top of that payment.
				ON CONFLICT (run_id, url_key) DO UPDATE SET state = 'done', depth = -2, parent = $2
					WHERE targets.state IN ('queued', 'spare') AND targets.depth >= $7 AND targets.attempts = 0
				-- xmax is 0 on a row this statement inserted, not on a queued page it took (one of the run's pages).
				RETURNING xmax <> 0 AS taken, uncounted
			), counted AS (
				-- A page taken out of the queue leaves the run's page count (unless it was never in it: found
				-- fresh, or a spare); the run's row locked after the target's.
				UPDATE runs SET pages = pages - CASE WHEN (SELECT spare FROM was) THEN 0 ELSE 1 END,
					spares = spares - CASE WHEN (SELECT spare FROM was) THEN 1 ELSE 0 END
				WHERE id = $1 AND EXISTS (SELECT 1 FROM landed WHERE taken AND NOT uncounted)
			)
			SELECT 1 FROM landed`,
			[page.runId, page.targetId, page.epoch, landing.targetId, landing.url, hostOf(landing.url), page.depth],
			"fleet_add_landing",
		);
	});
	return rows.length === 1;
}
