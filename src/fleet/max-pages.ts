import type { Fleet } from "./connect.js";
import type { FleetLease, FleetTargetInput } from "./types.js";

/**
 * A crawl's `max_pages` over the fleet's frontier: which pages may enter, and which of them never count
 * (fresh in the job's fleet runs, read rather than fetched).
 */
export interface PagesRoom {
	readonly maxPages: number;
	/**
	 * `freshness`: the URL keys of `pages` fresh in the job's fleet runs, each true when it will not be fetched
	 * (its links kept, or none wanted): those take no room. Null without freshness.
	 */
	readonly fresh:
		| ((query: Fleet["query"], pages: readonly FleetTargetInput[]) => Promise<ReadonlyMap<string, boolean>>)
		| null;
}

const keyOf = (page: FleetTargetInput) => page.urlKey ?? page.url;

/**
 * Insert `pages` of run `runId` within `room.maxPages`, inside the caller's transaction: pages the frontier
 * holds already cost no room (one found shallower still moves up), nor do those never to be fetched (marked
 * `uncounted`, they stay out of `runs.pages`), nor a sitemap task (depth -1); the room left goes to new
 * pages in the order given. The count and the insert hold the run's frontier lock, so pages settling at
 * once, or a loader and a settling page, never both take the last room. Not the run's row lock: the insert
 * locks target rows, which the budget's statements lock before the run's row.
 */
export async function insertWithinMaxPages<T>(
	query: Fleet["query"],
	runId: number,
	pages: readonly FleetTargetInput[],
	room: PagesRoom,
	insert: (within: readonly FleetTargetInput[]) => Promise<T>,
): Promise<T> {
	await query("SELECT pg_advisory_xact_lock(hashtext($1))", [`scrapejob fleet frontier ${runId}`]);
	const held = new Set(
		(
			await query<{ url_key: string }>("SELECT url_key FROM targets WHERE run_id = $1 AND url_key = ANY($2::text[])", [
				runId,
				pages.map(keyOf),
			])
		).map((row) => row.url_key),
	);
	const added = pages.filter((page) => !held.has(keyOf(page)) && (page.depth ?? 0) >= 0);
	const fresh = room.fresh === null ? null : await room.fresh(query, added);
	const uncounted: string[] = [];
	const [row] = await query<{ n: number }>("SELECT pages::int AS n FROM runs WHERE id = $1", [runId]);
	let left = Math.max(0, room.maxPages - (row?.n ?? 0));
	const within = pages.filter((page) => {
		if (held.has(keyOf(page)) || (page.depth ?? 0) < 0) return true;
		if (fresh?.get(keyOf(page)) === true) {
			uncounted.push(keyOf(page));
			return true;
		}
		if (left === 0) return false;
		left -= 1;
		return true;
	});
	// What was found goes in with each page: its claim asks again only about a page found fresh.
	const result = await insert(
		fresh === null
			? within
			: within.map((page) => ((page.depth ?? 0) < 0 ? page : { ...page, freshFound: fresh.has(keyOf(page)) })),
	);
	// The never-fetched ones this insert added leave the count it raised. One fresh here and stale when
	// claimed, or moved shallower where its links are wanted and none were kept, takes room then
	// (`countLeasedPage`), or is not fetched.
	if (uncounted.length > 0)
		await query(
			`WITH marked AS (
				UPDATE targets SET uncounted = true
				WHERE run_id = $1 AND url_key = ANY($2::text[]) AND state = 'queued' AND depth >= 0 AND NOT uncounted
				RETURNING 1
			)
			UPDATE runs SET pages = pages - (SELECT count(*) FROM marked) WHERE id = $1`,
			[runId, uncounted],
		);
	return result;
}

/**
 * A leased page that entered uncounted (fresh then) is to be fetched after all (stale by its claim, or its
 * links wanted and none kept): it takes a room under `maxPages` first, under the run's frontier lock as
 * every insert does. False when none is left (it is not fetched) or the lease passed on; true when it took
 * one or was counted already.
 */
export async function countLeasedPage(
	fleet: Pick<Fleet, "transaction">,
	lease: Pick<FleetLease, "runId" | "targetId" | "epoch" | "uncounted">,
	maxPages: number,
): Promise<boolean> {
	if (!lease.uncounted) return true;
	return fleet.transaction(async (query) => {
		await query("SELECT pg_advisory_xact_lock(hashtext($1))", [`scrapejob fleet frontier ${lease.runId}`]);
		const rows = await query(
			`WITH counted AS (
				UPDATE targets SET uncounted = false
				WHERE run_id = $1 AND target_id = $2 AND lease_epoch = $3 AND state = 'leased' AND uncounted
					AND (SELECT pages FROM runs WHERE id = $1) < $4
				RETURNING 1
			)
			UPDATE runs SET pages = pages + 1 WHERE id = $1 AND EXISTS (SELECT 1 FROM counted) RETURNING 1`,
			[lease.runId, lease.targetId, lease.epoch, maxPages],
		);
		return rows.length === 1;
	});
}
