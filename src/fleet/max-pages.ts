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
 * pages in the order given, and to pages waiting as spares. A new page with no room, or a finder's link
 * while the run's seeds still load (`seeds` false: they take the room first, as a local crawl hands out
 * every seed before any link), enters as a `spare`: neither claimed nor counted until room comes free
 * (`fillFreedRoom`), at most `maxPages` of them. The count and the insert hold the run's frontier lock, so
 * pages settling at once, or a loader and a settling page, never both take the last room. Not the run's row
 * lock: the insert locks target rows, which the budget's statements lock before the run's row.
 */
export async function insertWithinMaxPages<T>(
	query: Fleet["query"],
	runId: number,
	pages: readonly FleetTargetInput[],
	room: PagesRoom,
	insert: (within: readonly FleetTargetInput[]) => Promise<T>,
	seeds = false,
): Promise<T> {
	await lockFrontier(query, runId);
	const held = new Map(
		(
			await query<{ url_key: string; state: string }>(
				"SELECT url_key, state FROM targets WHERE run_id = $1 AND url_key = ANY($2::text[])",
				[runId, pages.map(keyOf)],
			)
		).map((row) => [row.url_key, row.state]),
	);
	const added = pages.filter((page) => !held.has(keyOf(page)) && (page.depth ?? 0) >= 0);
	const fresh = room.fresh === null ? null : await room.fresh(query, added);
	const uncounted: string[] = [];
	const spares: string[] = [];
	const revived: string[] = [];
	const [row] = await query<{ pages: number; spares: number; loading: boolean }>(
		"SELECT pages::int, spares::int, state = 'loading' AS loading FROM runs WHERE id = $1",
		[runId],
	);
	let left = Math.max(0, room.maxPages - (row?.pages ?? 0));
	let spareRoom = Math.max(0, room.maxPages - (row?.spares ?? 0));
	const waits = (page: FleetTargetInput) => !seeds && row?.loading === true && (page.depth ?? 0) > 0;
	const within = pages.filter((page) => {
		const key = keyOf(page);
		if ((page.depth ?? 0) < 0) return true;
		const state = held.get(key);
		if (state === "spare") {
			// Found again: it takes room now if there is some (it stays a spare otherwise, moved up if shallower).
			if (left > 0 && !waits(page) && !revived.includes(key)) {
				left -= 1;
				revived.push(key);
			}
			return true;
		}
		if (state !== undefined) return true;
		if (fresh?.get(key) === true) {
			uncounted.push(key);
			return true;
		}
		if (left > 0 && !waits(page)) {
			left -= 1;
			return true;
		}
		if (spareRoom === 0) return false;
		spareRoom -= 1;
		spares.push(key);
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
	// The spares this insert added leave the count too (invisible to claims until the commit, they are
	// never claimed as queued). The run's row notes max_pages: it is not complete while a spare could take
	// room left under it (`finishFleetRun`).
	if (spares.length > 0)
		await query(
			`WITH marked AS (
				UPDATE targets SET state = 'spare'
				WHERE run_id = $1 AND url_key = ANY($2::text[]) AND state = 'queued' AND depth >= 0 AND NOT uncounted
				RETURNING 1
			)
			UPDATE runs SET pages = pages - (SELECT count(*) FROM marked), spares = spares + (SELECT count(*) FROM marked),
				max_pages = $3
			WHERE id = $1`,
			[runId, spares, room.maxPages],
		);
	if (revived.length > 0) await unspare(query, runId, revived);
	return result;
}

/** Under the run's frontier lock, held to the end of the caller's transaction: every change of `runs.pages` or `runs.spares` but a settlement's. */
export async function lockFrontier(query: Fleet["query"], runId: number): Promise<void> {
	await query("SELECT pg_advisory_xact_lock(hashtext($1))", [`scrapejob fleet frontier ${runId}`]);
}

/** Spares of `keys` become queued pages, each taking its room (the caller counted it); how many did. */
async function unspare(
	query: Fleet["query"],
	runId: number,
	keys: readonly string[] | null,
	limit = 0,
): Promise<number> {
	// Lowest depth first, then in the order they were found, as a local crawl's frontier hands them out.
	const [row] = await query<{ n: number }>(
		`WITH chosen AS (
			SELECT target_id FROM targets
			WHERE run_id = $1 AND state = 'spare' AND ($2::text[] IS NULL OR url_key = ANY($2::text[]))
			ORDER BY depth, seq
			LIMIT CASE WHEN $2::text[] IS NULL THEN $3::int END
			FOR UPDATE
		), queued AS (
			UPDATE targets t SET state = 'queued' FROM chosen c WHERE t.run_id = $1 AND t.target_id = c.target_id
			RETURNING 1
		), counted AS (
			UPDATE runs SET pages = pages + (SELECT count(*) FROM queued), spares = spares - (SELECT count(*) FROM queued)
			WHERE id = $1 AND EXISTS (SELECT 1 FROM queued)
		)
		SELECT count(*)::int AS n FROM queued`,
		[runId, keys === null ? null : [...keys], limit],
	);
	return row?.n ?? 0;
}

/**
 * Room under `maxPages` that came free (a queued page taken out as a redirect's landing, a page settled
 * fresh) goes to the spares, lowest depth first: a link turned away for lack of room would have left it
 * empty, the run a page short of a local crawl's. Nothing while the seeds still load (they take the room
 * first). Returns how many spares were queued; one read of the run's row when none can be.
 */
export async function fillFreedRoom(
	fleet: Pick<Fleet, "query" | "transaction">,
	runId: number,
	maxPages: number,
): Promise<number> {
	if ((await freeRoom(fleet.query, runId, maxPages)).room === 0) return 0;
	return fleet.transaction((query) => fillFreedRoomIn(query, runId, maxPages));
}

/** As `fillFreedRoom`, inside the caller's transaction (the loader's, as the run leaves loading). */
export async function fillFreedRoomIn(query: Fleet["query"], runId: number, maxPages: number): Promise<number> {
	await lockFrontier(query, runId);
	const { room, spares } = await freeRoom(query, runId, maxPages);
	if (room === 0) return 0;
	const queued = await unspare(query, runId, null, room);
	// Fewer spares than the count says: the count follows the rows, or the run would wait on it for ever.
	if (queued < Math.min(room, spares))
		await query(
			"UPDATE runs SET spares = (SELECT count(*) FROM targets WHERE run_id = $1 AND state = 'spare') WHERE id = $1",
			[runId],
		);
	return queued;
}

/** How many spares may be queued now (none while loading or when none wait), and how many wait. */
async function freeRoom(
	query: Fleet["query"],
	runId: number,
	maxPages: number,
): Promise<{ room: number; spares: number }> {
	const [row] = await query<{ room: number; spares: number }>(
		`SELECT CASE WHEN state = 'loading' OR spares = 0 THEN 0 ELSE greatest($2 - pages, 0)::int END AS room,
			spares::int FROM runs WHERE id = $1`,
		[runId, maxPages],
	);
	return { room: row?.room ?? 0, spares: row?.spares ?? 0 };
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
		await lockFrontier(query, lease.runId);
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
