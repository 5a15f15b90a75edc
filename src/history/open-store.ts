import { existsSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import type { Database } from "better-sqlite3";
import {
	errorMessage,
	isNativeLoadFailure,
	lazyModule,
	makeDirectory,
	NativeModuleError,
	NODE_TOO_OLD,
	UsageError,
} from "../common/index.js";
import { STORE_APPLICATION_ID, STORE_LAYOUT, STORE_MIGRATIONS, STORE_SCHEMA, STORE_TABLES } from "./store-schema.js";
import { BUSY_TIMEOUT_MS, STORE_PAGE_BYTES, tuneConnection } from "./store-tuning.js";

/** Loaded when a store is opened: `validate` and the other commands that import this folder need none. */
const sqlite = lazyModule<typeof BetterSqlite3>("better-sqlite3");

export interface OpenedStore {
	readonly db: Database;
	/** Why the file found could not be used (it was set aside and a new one made), or null. */
	readonly unusable: string | null;
	/** Whether the store was made anew (missing, or unusable): every run folder is to be folded in. */
	readonly created: boolean;
}

/**
 * Open the job's store at `path`: the integrity check (`PRAGMA quick_check`), then its layout (application
 * id, version, tables; an older layout with migrations is brought up to date in place). A file that fails either is removed (it is a cache of the run folders) and a new
 * one made. Throws only when no store can be made at all (an unwritable folder, a full disk).
 */
export function openStore(path: string): OpenedStore {
	let unusable: string | null = null;
	if (existsSync(path)) {
		let db: Database | null = null;
		let blank = false;
		try {
			db = connect(path, false);
			// A file with no table yet is one another process has just made and not filled (shards of one
			// job start together): its tables are made or found below, under the write lock. Removed as
			// "not a scrapejob store", it took the other process's open file with it (disk I/O error there).
			blank = isBlank(db);
			if (!blank) {
				unusable = damageProblem(db);
				if (unusable === null) {
					migrate(db);
					unusable = layoutProblem(db);
				}
				if (unusable === null) return { db, unusable: null, created: false };
			}
		} catch (error) {
			// Held by another process (shards of one job open it together) is not damaged: removed, it took
			// the others' open file with it (disk I/O error there).
			if (error instanceof NativeModuleError || isBusy(error)) {
				db?.close();
				throw error;
			}
			unusable = `it cannot be read (${errorMessage(error)})`;
		}
		try {
			db?.close();
		} catch {
			// Closing a damaged file may fail too: it is removed below either way.
		}
		if (!blank) removeStore(path);
	}
	makeDirectory(dirname(path));
	const db = connect(path, true);
	let created = false;
	try {
		// Shards of one job start together: the first to take the write lock makes the tables, the others
		// find them made (inside the same lock) and use that store — never one made twice or removed.
		db.exec("BEGIN IMMEDIATE");
		const made = db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'runs'").pluck().get();
		if (made === 0) {
			db.exec(STORE_SCHEMA);
			created = true;
		}
		db.exec("COMMIT");
		if (!created) {
			const problem = damageProblem(db) ?? layoutProblem(db);
			if (problem !== null) throw new Error(`the store another run made ${problem}`);
		}
	} catch (error) {
		if (db.inTransaction) db.exec("ROLLBACK");
		db.close();
		if (created) removeStore(path);
		throw error;
	}
	return { db, unusable, created };
}

/** A second, read-only connection to an open store: it may iterate while the first one looks up and writes. */
/** Load the job store's native addon now: a run checks it before anything is sent (NativeModuleError). */
export function assertStoreLoads(): void {
	connect(":memory:", true).close();
}

export function openReader(path: string): Database {
	const Sqlite = sqlite();
	return new Sqlite(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
}

function connect(path: string, create: boolean): Database {
	// On an older Node the addon does not fail, it crashes the process: said first, as a usage error.
	if (NODE_TOO_OLD !== null) throw new UsageError(NODE_TOO_OLD);
	const Sqlite = sqlite();
	let db: Database;
	try {
		db = new Sqlite(path, { fileMustExist: !create, timeout: BUSY_TIMEOUT_MS });
	} catch (error) {
		// The addon, not the file: the store must not be taken for damaged (and removed) over it.
		if (isNativeLoadFailure(error)) throw new NativeModuleError("better-sqlite3", error);
		throw error;
	}
	try {
		// Before the first page is written (a no-op on a store that exists).
		if (create) db.pragma(`page_size = ${STORE_PAGE_BYTES}`);
		// WAL: a run's batches do not block readers (another shard's lookups, an export), and commit cheaply.
		setWal(db);
		tuneConnection(db);
		return db;
	} catch (error) {
		db.close();
		throw error;
	}
}

/**
 * Switch to WAL. The switch takes the file's exclusive lock in one try: while another connection holds
 * the write lock (a shard making the store's tables) SQLite answers SQLITE_BUSY at once, not after the
 * busy timeout. Three shards opening a new store together met it about one start in twenty.
 */
function setWal(db: Database): void {
	const deadline = Date.now() + BUSY_TIMEOUT_MS;
	for (let pause = 2; ; pause = Math.min(pause * 2, 100)) {
		try {
			if (db.pragma("journal_mode", { simple: true }) !== "wal") db.pragma("journal_mode = WAL");
			return;
		} catch (error) {
			if (!isBusy(error) || Date.now() >= deadline) throw error;
			Atomics.wait(PAUSE, 0, 0, pause);
		}
	}
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** SQLITE_BUSY and its extended codes: another connection holds the lock. */
function isBusy(error: unknown): boolean {
	return (
		typeof (error as { code?: unknown })?.code === "string" &&
		(error as { code: string }).code.startsWith("SQLITE_BUSY")
	);
}

/**
 * Bring a store of an older layout up to date in place when every step from its layout has a migration
 * (store-schema.ts); otherwise leave it for `layoutProblem` (it is rebuilt). Under the write lock, the
 * layout read again inside it: shards opening one store together migrate it once.
 */
function migrate(db: Database): void {
	const layoutNow = () => db.pragma("user_version", { simple: true }) as number;
	const migratable = (layout: number) => {
		for (let step = layout; step < STORE_LAYOUT; step++) if (STORE_MIGRATIONS[step] === undefined) return false;
		return layout < STORE_LAYOUT;
	};
	if ((db.pragma("application_id", { simple: true }) as number) !== STORE_APPLICATION_ID) return;
	if (!migratable(layoutNow())) return;
	db.exec("BEGIN IMMEDIATE");
	try {
		for (let layout = layoutNow(); migratable(layout); layout = layoutNow()) db.exec(STORE_MIGRATIONS[layout]!);
		db.exec("COMMIT");
	} catch (error) {
		if (db.inTransaction) db.exec("ROLLBACK");
		throw error;
	}
}

/** A database with no schema and no application id: made by `connect`, its tables not yet. */
function isBlank(db: Database): boolean {
	const objects = db.prepare("SELECT count(*) FROM sqlite_schema").pluck().get() as number;
	return objects === 0 && (db.pragma("application_id", { simple: true }) as number) === 0;
}

/** Why an opened file is damaged, or null when SQLite's quick check finds it whole. */
function damageProblem(db: Database): string | null {
	// SQLite writes whole pages: a file a few bytes short was cut (its last page's tail is gone, and the
	// quick check may not read that far). The write-ahead log is a file of its own.
	const size = statSync(db.name).size;
	const pageSize = db.pragma("page_size", { simple: true }) as number;
	if (size % pageSize !== 0) return `it is damaged (${size} bytes is not a whole number of its ${pageSize}-byte pages)`;
	const check = db.pragma("quick_check", { simple: false }) as Array<Record<string, unknown>>;
	const verdict = check
		.map((row) => String(Object.values(row)[0]))
		.join("; ")
		.replace(/\s*\n\s*/g, "; ");
	if (verdict !== "ok") return `it is damaged (${verdict.slice(0, 200)})`;
	return null;
}

/** Why a whole file is not a store of the current layout, or null when it is one. */
function layoutProblem(db: Database): string | null {
	const application = db.pragma("application_id", { simple: true }) as number;
	const layout = db.pragma("user_version", { simple: true }) as number;
	if (application !== STORE_APPLICATION_ID) return "it is not a scrapejob store";
	if (layout !== STORE_LAYOUT) return `it is of an older layout (${layout}, now ${STORE_LAYOUT})`;
	const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[];
	const missing = STORE_TABLES.filter((name) => !tables.includes(name));
	if (missing.length) return `it lacks the table${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`;
	return null;
}

/** The store's file and SQLite's side files (a damaged write-ahead log goes with it). */
export function removeStore(path: string): void {
	for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(`${path}${suffix}`, { force: true });
}
