import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../common/index.js";
import { RUN_FILES, type RunSummary } from "../output/index.js";

/**
 * Whether a run's records may be "latest" (docs/guides/extraction.md, "Re-extraction and data contracts"): `contract.json` in the run folder,
 * written only for runs of a job with a contract (and for re-extractions). A run folder without one is
 * promoted as its records are written (every run before contracts existed included).
 *
 * - `pending`: the run has not completed yet; its records are kept out of the store until it does.
 * - `passed`: it completed within its contract: promoted.
 * - `held`: it completed and broke its contract: its records stay in its folder, never in "latest".
 * - `accepted`: held, then promoted by hand (`--accept RUN_ID`).
 *
 * The store (history.sqlite) is a cache of the run folders: this file is what a rebuild reads, so a
 * held run stays held whatever happens to the store.
 */
export const CONTRACT_FILE = "contract.json";

export const CONTRACT_STATES = ["pending", "passed", "held", "accepted"] as const;
export type ContractStateName = (typeof CONTRACT_STATES)[number];

export interface ContractState {
	readonly state: ContractStateName;
	/** When this state was written (ISO). */
	readonly at: string;
	/** With `held`: every broken rule, as `summary.contract.broken` lists them. */
	readonly broken?: readonly unknown[];
}

/** The run folder's contract state; null when it has none (promoted as written). */
export function readContractState(runDir: string): ContractState | null {
	const path = join(runDir, CONTRACT_FILE);
	if (!existsSync(path)) return null;
	try {
		const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<ContractState>;
		if (typeof parsed.state === "string" && (CONTRACT_STATES as readonly string[]).includes(parsed.state))
			return parsed as ContractState;
	} catch {
		// unreadable: read as pending below (a damaged file never promotes a run by accident)
	}
	return { state: "pending", at: new Date(0).toISOString() };
}

/** Write the run folder's contract state atomically (temp file + rename). */
export function writeContractState(runDir: string, state: ContractStateName, broken?: readonly unknown[]): void {
	const path = join(runDir, CONTRACT_FILE);
	const value: ContractState = { state, at: new Date().toISOString(), ...(broken ? { broken } : {}) };
	writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Whether a run folder's records are kept out of "latest": pending or held. */
export function isHeldBack(runDir: string): boolean {
	const state = readContractState(runDir)?.state;
	return state === "pending" || state === "held";
}

/** A run folder's name ends in its shard layout (`-shard-2-of-3`), or in nothing for an unsharded run. */
const SHARD_TAIL = /-shard-\d+-of-\d+$/;

/**
 * The summaries of the job's last `count` complete runs that were promoted (held ones would lower the
 * bar they are measured against), newest first, of the same shard layout as `runId` (a shard is
 * compared with the same shard), leaving `runId` itself out: the baseline of `max_fill_drop` and
 * `max_rows_drop`. Reads one summary.json per run folder, from the newest, until it has `count`;
 * a run `counts` turns down is passed over, not counted.
 */
export function promotedSummaries(
	jobDir: string,
	runId: string,
	count: number,
	counts: (summary: RunSummary) => boolean = () => true,
): RunSummary[] {
	if (!existsSync(jobDir)) return [];
	const tail = SHARD_TAIL.exec(runId)?.[0] ?? "";
	const names = readdirSync(jobDir, { withFileTypes: true })
		.filter((entry) => entry.isDirectory() && entry.name !== runId)
		.map((entry) => entry.name)
		.filter((name) => (SHARD_TAIL.exec(name)?.[0] ?? "") === tail)
		.sort()
		.reverse();
	const found: RunSummary[] = [];
	for (const name of names) {
		if (found.length >= count) break;
		const dir = join(jobDir, name);
		let summary: RunSummary;
		try {
			summary = JSON.parse(readFileSync(join(dir, RUN_FILES.summary), "utf8")) as RunSummary;
		} catch {
			continue;
		}
		if (summary.complete !== true || isHeldBack(dir) || !counts(summary)) continue;
		found.push(summary);
	}
	return found;
}
