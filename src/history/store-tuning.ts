/**
 * How each connection to the job's store is set up: shared by the run's connection (open-store.ts) and
 * the writer thread's (store-worker.ts), which loads this and not the rest of the store's modules.
 */
import type { Database } from "better-sqlite3";

/**
 * How long a write waits on another process's transaction (shards of one job share the store; each of
 * their batches holds the lock for milliseconds). The wait blocks the event loop — the lock's heartbeat
 * included — so it is short: a store held for longer (a sqlite3 shell left in a transaction) costs the
 * run its store writes, said once, and the next run folds its records in; it added 30 s to a run.
 */
export const BUSY_TIMEOUT_MS = 5_000;

/**
 * The run's connection's page cache, KiB (`PRAGMA cache_size` = -this): SQLite's own default. better-sqlite3
 * builds SQLite with 16 MiB, which a run fills once its store passes ~100,000 targets, so peak memory
 * would grow with the job (docs/behaviour.md, "Bounded memory and time"); the smaller cache costs a few
 * µs a target (bench/README.md).
 * @default 2,000 KiB
 */
export const STORE_CACHE_KIB = 2_000;

/**
 * The page size of a store made now (`PRAGMA page_size`; a store keeps the size it was made with). Ids are
 * random, so each record of a batch lands on its own page of the id index once the index outgrows the
 * cache: larger pages hold more of the index per page read and per page written to the WAL (the store
 * alone, 200,000 records: ~20 % less CPU a record than 4 KiB pages; bench/README.md).
 * @default 16,384 bytes
 */
export const STORE_PAGE_BYTES = 16_384;

/**
 * WAL bytes a commit may leave before it copies them back into the store (`PRAGMA wal_autocheckpoint`,
 * in pages of the store's size). SQLite's 1,000 pages (4 MB) is less than a batch of a large job writes
 * (ids are random: a 2,000-record batch dirties ~2,000 pages of the id index past ~100,000 targets), so
 * every batch ended in a checkpoint and its fsync, on the event loop. At 40 MB of WAL on disk at most a
 * page rewritten by several batches is copied back once: ~25 % less CPU a record. Larger batches would
 * save more but hold the run's event loop longer per batch (bench/README.md).
 * @default 40,960,000 bytes
 */
export const STORE_CHECKPOINT_BYTES = 10_000 * 4096;

/** A connection's settings (the store is in WAL already, or set so by the caller). */
export function tuneConnection(db: Database): void {
	// A cache of the run folders: a commit lost to a power cut is folded in again from them.
	db.pragma("synchronous = NORMAL");
	db.pragma(`cache_size = -${STORE_CACHE_KIB}`);
	const pageBytes = db.pragma("page_size", { simple: true }) as number;
	db.pragma(`wal_autocheckpoint = ${Math.ceil(STORE_CHECKPOINT_BYTES / pageBytes)}`);
}
