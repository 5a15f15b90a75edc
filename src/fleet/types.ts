import type { PagesRoom } from "./max-pages.js";
/** A fleet run as its row says. */
export interface FleetRun {
	readonly id: number;
	readonly jobName: string;
	readonly runName: string;
	readonly state: "opening" | "loading" | "running" | "complete";
	readonly createdAt: Date;
	/** Opened by `--retry-failed`: it holds only the job's targets whose newest fleet record failed. */
	readonly retryFailed: boolean;
}

/** A target as the job gives it to the frontier. */
export interface FleetTargetInput {
	readonly url: string;
	/** The URL as the job deduplicates it (normalized): each key enters a run once. @default url */
	readonly urlKey?: string;
	/** The job's id for the target. @default urlKey */
	readonly targetId?: string;
	/** @default the URL's host */
	readonly host?: string;
	/** @default 0 */
	readonly depth?: number;
	/** The target whose page linked this one (a crawl's). @default null */
	readonly parent?: string | null;
	/** The target's own fields (params, metadata), handed back with its claim. */
	readonly input?: unknown;
	/** Whether a crawled page was fresh as it entered (`freshness`), handed back with its claim. @default not asked */
	readonly freshFound?: boolean;
}

/**
 * The targets a run's loading reads, streamed. `fresh`, read once they are all read, counts the job's
 * targets the stream left out because their newest record was fresh (`freshness`): `fleet status` shows
 * them, as they are in no state of the run. @default 0
 */
export interface FleetTargetSource extends AsyncIterable<FleetTargetInput> {
	readonly fresh?: number;
	/** A crawl with `max_pages`: its seeds enter within it, as a local crawl hands out no more. @default no limit */
	readonly room?: PagesRoom;
}

/**
 * A claimed target: the lease a worker holds until `leaseUntil`. Every write about the target carries
 * `epoch`, so a worker whose lease passed to another writes nothing.
 */
export interface FleetLease {
	readonly runId: number;
	readonly targetId: string;
	readonly epoch: number;
	readonly url: string;
	readonly urlKey: string;
	readonly host: string;
	readonly depth: number;
	readonly parent: string | null;
	/** A task an earlier holder started: poll it instead of paying again. */
	readonly taskId: string | null;
	readonly attempts: number;
	readonly input: unknown;
	/** The database's clock when the claim was made: a fetch to the host may start from then. */
	readonly claimedAt: Date;
	readonly leaseUntil: Date;
	/** The target's newest ok record in the job's earlier fleet runs, when the claim asked (change tracking). */
	readonly previousOk: FleetPreviousRecord | null;
	/** Whether the page was fresh as it entered the frontier (`freshness`); null when that was not asked. */
	readonly freshFound: boolean | null;
	/** Found fresh as it entered the frontier, so outside `runs.pages`: fetched, it must take room first. */
	readonly uncounted: boolean;
}

/** What change tracking compares a new record with. */
export interface FleetPreviousRecord {
	readonly contentHash: string | null;
	readonly finishedAt: string;
	readonly data: unknown;
}

export interface FleetWorker {
	readonly id: string;
	readonly runId: number;
}
