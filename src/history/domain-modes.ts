import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Database } from "better-sqlite3";
import { HISTORY_FILE } from "./job-history.js";
import { openReader } from "./open-store.js";

/**
 * What `mode: adaptive` learned of a domain (table `domain_modes`): the mode and proxy its next run
 * starts with, and whether that rung gave useful records (false: every rung was tried and none did).
 */
export interface DomainMode {
	readonly domain: string;
	readonly mode: string;
	readonly proxyType: string;
	readonly useful: boolean;
}

/**
 * What one run's records of one host cost (table `host_costs`): targets, and sums and sums of squares of
 * credits per target — all its fetches, its first fetch only, and its last fetch only (under `mode: adaptive`:
 * what it pays from the rung its domain's next run starts on, src/run/economics/host-costs.ts). The forecast reads them
 * (src/run/economics/forecast.ts).
 */
export interface HostCost {
	readonly host: string;
	/** The targets' price class (their mode and proxy, src/common/scrape-params.ts); '' in a row kept before classes were. */
	readonly price: string;
	readonly targets: number;
	readonly credits: number;
	readonly creditsSq: number;
	readonly first: number;
	readonly firstSq: number;
	readonly last: number;
	readonly lastSq: number;
}

/** Every domain's remembered mode. */
export function readDomainModes(db: Database): DomainMode[] {
	const rows = db.prepare("SELECT domain, mode, proxy_type, useful FROM domain_modes").raw().all() as Array<
		[string, string, string, number]
	>;
	return rows.map(([domain, mode, proxyType, useful]) => ({ domain, mode, proxyType, useful: useful === 1 }));
}

/** Remember these domains' modes (one transaction; a domain not named keeps what it had). */
export function writeDomainModes(db: Database, runId: string, at: string, modes: readonly DomainMode[]): void {
	if (modes.length === 0) return;
	const upsert = db.prepare(
		`INSERT INTO domain_modes (domain, mode, proxy_type, useful, run, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (domain) DO UPDATE SET mode = excluded.mode, proxy_type = excluded.proxy_type,
			useful = excluded.useful, run = excluded.run, updated_at = excluded.updated_at`,
	);
	db.transaction(() => {
		for (const mode of modes) upsert.run(mode.domain, mode.mode, mode.proxyType, mode.useful ? 1 : 0, runId, at);
	}).immediate();
}

/**
 * Each host's costs per price class in the latest run that fetched it so (run ids sort by start time).
 * A resumed run's sessions add to its rows, so a run's figures are its every session's.
 */
export function readLatestHostCosts(db: Database): HostCost[] {
	// A store of layout 3 (read without writing, by a dry run, before a run migrates it) has no classes.
	const price = (db.pragma("user_version", { simple: true }) as number) < 4 ? "''" : "price";
	const rows = db
		.prepare(
			// SQLite's bare columns beside max(): the row of the latest run, in one pass over the table.
			`SELECT host, ${price}, targets, credits, credits_sq, first, first_sq, last, last_sq, max(run) FROM host_costs GROUP BY host, ${price}`,
		)
		.raw()
		.all() as Array<[string, string, number, number, number, number, number, number, number, string]>;
	return rows.map(([host, price, targets, credits, creditsSq, first, firstSq, last, lastSq]) => ({
		host,
		price,
		targets,
		credits,
		creditsSq,
		first,
		firstSq,
		last,
		lastSq,
	}));
}

/**
 * Add one session's costs per host and price class to its run's rows (one transaction). The rows of
 * earlier runs of that host and class go, with the host's row kept before classes were: the forecast
 * reads only the latest, and the table stays one row a host and class. With `newHostsOnly` (a
 * `--retry-failed` run: its targets are the failures, a sample of nothing but them), a host and class that
 * an earlier run already costed keep that run's row, so the next full run is not forecast from its failures.
 * So do those whose every fetch in the session failed for free: no price was seen.
 */
export function addHostCosts(
	db: Database,
	runId: string,
	costs: readonly HostCost[],
	options: { readonly newHostsOnly?: boolean } = {},
): void {
	if (costs.length === 0) return;
	const costedBefore = db
		.prepare("SELECT 1 FROM host_costs WHERE host = ? AND price IN (?, '') AND run <> ? LIMIT 1")
		.pluck();
	const upsert = db.prepare(
		`INSERT INTO host_costs (run, host, price, targets, credits, credits_sq, first, first_sq, last, last_sq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run, host, price) DO UPDATE SET targets = targets + excluded.targets,
			credits = credits + excluded.credits, credits_sq = credits_sq + excluded.credits_sq,
			first = first + excluded.first, first_sq = first_sq + excluded.first_sq,
			last = last + excluded.last, last_sq = last_sq + excluded.last_sq`,
	);
	const older = db.prepare("DELETE FROM host_costs WHERE host = ? AND price IN (?, '') AND run < ?");
	db.transaction(() => {
		for (const c of costs) {
			// Every fetch failed for free (the site or the service down): no price was seen, and a row of
			// zeros would forecast the host's next run at nothing. What an earlier run paid stays.
			const keepEarlier = options.newHostsOnly === true || c.credits === 0;
			if (keepEarlier && costedBefore.get(c.host, c.price, runId) !== undefined) continue;
			upsert.run(runId, c.host, c.price, c.targets, c.credits, c.creditsSq, c.first, c.firstSq, c.last, c.lastSq);
			older.run(c.host, c.price, runId);
		}
	}).immediate();
}

/**
 * What the job's store at `jobDir` remembers of modes and costs, read without writing (`run --dry-run`);
 * null when there is no store, or one of an older layout (the next run rebuilds it).
 */
export function readStoredEconomics(jobDir: string): { modes: DomainMode[]; costs: HostCost[] } | null {
	const path = join(jobDir, HISTORY_FILE);
	if (!existsSync(path)) return null;
	let db: Database | null = null;
	try {
		db = openReader(path);
		return { modes: readDomainModes(db), costs: readLatestHostCosts(db) };
	} catch {
		return null;
	} finally {
		db?.close();
	}
}
