import type { Fleet } from "./connect.js";
import { insertTargets } from "./load-targets.js";
import type { FleetLease, FleetTargetInput } from "./types.js";

/**
 * Crawl links found on the leased page enter the run's frontier, each URL key once for the whole fleet
 * (a key already there, loaded or found by any worker, is skipped). Fenced by the page's lease. Call it
 * before completing the page: the run is complete only when nothing is queued or leased, so links added
 * while their page is still leased can never be missed. Returns how many were new.
 */
export async function addDiscovered(
	fleet: Fleet,
	page: Pick<FleetLease, "runId" | "targetId" | "epoch" | "depth">,
	links: readonly FleetTargetInput[],
): Promise<number> {
	const withDepth = links.map((link) => ({ ...link, depth: link.depth ?? page.depth + 1, parent: page.targetId }));
	return insertTargets(fleet.query, page.runId, withDepth, { targetId: page.targetId, epoch: page.epoch });
}
