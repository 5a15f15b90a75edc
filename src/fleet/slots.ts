import type { Fleet } from "./connect.js";
import type { FleetWorker } from "./types.js";

/** One of the fleet's concurrency slots, held by a worker for one fetch. */
export interface FleetSlot {
	readonly runId: number;
	readonly slot: number;
	/** Raised on every acquisition: a release only frees the acquisition it came from. */
	readonly epoch: number;
}

/**
 * The free slots a worker may take: below the run's limit, while the fleet is not paused, and no more
 * than the limit less every slot held now. After the limit was lowered, the slots above it still finish
 * their fetches: counted here, they keep the fleet at the limit instead of the limit plus them. Two
 * workers taking slots in the same instant may each see the same room (each statement reads its own
 * snapshot); they still take distinct slots below the limit, so the fleet passes the limit only while
 * fetches that started above it are in flight. `$4` is how many are wanted; `$5` a slot not to count
 * (one being exchanged, -1 for none).
 */
const FREE_SLOTS = `
	SELECT f.slot FROM slots f JOIN runs r ON r.id = f.run_id
	WHERE f.run_id = $1 AND f.slot < r.concurrency_limit
		AND (r.paused_until IS NULL OR r.paused_until <= now())
		AND (f.holder IS NULL OR f.held_until < now())
	ORDER BY f.slot
	LIMIT GREATEST(0, LEAST($4::int, (
		SELECT r.concurrency_limit - count(*) FILTER (WHERE h.holder IS NOT NULL AND h.held_until >= now() AND h.slot <> $5::int)
		FROM runs r JOIN slots h ON h.run_id = r.id WHERE r.id = $1 GROUP BY r.concurrency_limit
	)))
	FOR UPDATE OF f SKIP LOCKED`;

const TAKE_SLOTS = `UPDATE slots s SET holder = $2, epoch = s.epoch + 1, held_until = now() + make_interval(secs => $3::float8 / 1000)
	WHERE s.run_id = $1 AND s.slot IN (${FREE_SLOTS})
	RETURNING s.slot, s.epoch`;

/**
 * Take a free slot for one fetch, or null when the run's `concurrency_limit` slots are held (or the
 * fleet is paused). A slot whose holder stopped renewing it (renewLeases) is free again once its time
 * passes, so a dead worker's fetches stop counting against the limit.
 */
export async function acquireSlot(fleet: Fleet, worker: FleetWorker, holdMs: number): Promise<FleetSlot | null> {
	const [slot] = await acquireSlots(fleet, worker, 1, holdMs);
	return slot ?? null;
}

/**
 * Take up to `n` free slots in one statement (as `acquireSlot`, for a worker filling several places of its
 * queue at once): fewer, or none, when the others hold the rest or the fleet is paused.
 */
export async function acquireSlots(fleet: Fleet, worker: FleetWorker, n: number, holdMs: number): Promise<FleetSlot[]> {
	if (n <= 0) return [];
	const rows = await fleet.query<{ slot: number; epoch: string }>(
		TAKE_SLOTS,
		[worker.runId, worker.id, holdMs, n, -1],
		"fleet_acquire_slots",
	);
	return rows.map((row) => ({ runId: worker.runId, slot: row.slot, epoch: Number(row.epoch) }));
}

/**
 * A slot at or above a lowered limit exchanged for one below it, in one statement: the one given up is
 * not counted against the limit (two targets waiting to exchange would otherwise wait for each other).
 * Null, and nothing changed, while no slot below the limit may be taken.
 */
export async function exchangeSlot(
	fleet: Fleet,
	worker: FleetWorker,
	above: FleetSlot,
	holdMs: number,
): Promise<FleetSlot | null> {
	const [row] = await fleet.query<{ slot: number; epoch: string }>(
		`WITH taken AS (${TAKE_SLOTS}),
		given_back AS (
			UPDATE slots SET holder = NULL, held_until = NULL
			WHERE run_id = $1 AND slot = $5 AND epoch = $6 AND holder IS NOT NULL AND EXISTS (SELECT 1 FROM taken)
		)
		SELECT slot, epoch FROM taken`,
		[worker.runId, worker.id, holdMs, 1, above.slot, above.epoch],
		"fleet_exchange_slot",
	);
	return row ? { runId: worker.runId, slot: row.slot, epoch: Number(row.epoch) } : null;
}

/** Give the slot back; false when it had already lapsed and passed to another fetch. */
export async function releaseSlot(fleet: Fleet, slot: FleetSlot): Promise<boolean> {
	const rows = await fleet.query(
		"UPDATE slots SET holder = NULL, held_until = NULL WHERE run_id = $1 AND slot = $2 AND epoch = $3 AND holder IS NOT NULL RETURNING 1",
		[slot.runId, slot.slot, slot.epoch],
		"fleet_release_slot",
	);
	return rows.length === 1;
}

/** The fleet's in-flight ceiling and how many times it changed (a worker's view of it, read at once). */
export interface FleetLimit {
	readonly limit: number;
	readonly epoch: number;
}

/** Read the fleet's limit and its change count. */
export async function readConcurrencyLimit(fleet: Fleet, runId: number): Promise<FleetLimit | null> {
	const [row] = await fleet.query<{ limit: number; epoch: string }>(
		"SELECT concurrency_limit AS limit, limit_epoch AS epoch FROM runs WHERE id = $1",
		[runId],
		"fleet_read_limit",
	);
	return row ? { limit: row.limit, epoch: Number(row.epoch) } : null;
}

/**
 * Change the fleet's in-flight ceiling (a lower `X-RateLimit-Limit`, the account's concurrency), only
 * while it is still at change `sinceEpoch`: the answer that asks for the change was sent after it, so it
 * is newer than the one that set the limit there. Null when the limit changed since (or already is
 * `limit`). Slots above a lowered limit are no longer handed out; those held finish their fetch first.
 */
export async function setConcurrencyLimit(
	fleet: Fleet,
	runId: number,
	limit: number,
	sinceEpoch: number,
): Promise<FleetLimit | null> {
	return await fleet.transaction(async (query) => {
		const [row] = await query<{ epoch: string }>(
			`UPDATE runs SET concurrency_limit = $2, limit_epoch = limit_epoch + 1
			WHERE id = $1 AND limit_epoch = $3 AND concurrency_limit <> $2
			RETURNING limit_epoch AS epoch`,
			[runId, limit, sinceEpoch],
		);
		if (!row) return null;
		await query("INSERT INTO slots (run_id, slot) SELECT $1, generate_series(0, $2 - 1) ON CONFLICT DO NOTHING", [
			runId,
			limit,
		]);
		return { limit, epoch: Number(row.epoch) };
	});
}
