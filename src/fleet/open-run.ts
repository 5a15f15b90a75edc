import { randomBytes } from "node:crypto";
import type { Fleet } from "./connect.js";
import { insertTargets, LOAD_BATCH } from "./load-targets.js";
import { fillFreedRoomIn, insertWithinMaxPages, lockFrontier } from "./max-pages.js";
import type { FleetRun, FleetTargetInput, FleetTargetSource, FleetWorker } from "./types.js";
import { registerWorker, type WorkerIdentity } from "./workers.js";

export interface OpenFleetRunOptions {
	readonly jobName: string;
	/** Join or open the run of this name; without it, the job's newest unfinished run or a new one. */
	readonly runName?: string;
	/** The job's targets, streamed: read only by the worker that loads them. */
	readonly source: () => FleetTargetSource;
	/** The settings a new run starts with; a joined run keeps those it was opened with. */
	readonly maxCredits?: number | null;
	readonly concurrencyLimit: number;
	/** Least time between two fetch starts to one host, ms. @default 0 */
	readonly hostDelayMs?: number;
	/** Fetches in flight per host at most. @default no limit */
	readonly hostConcurrency?: number | null;
	/** A new run is a `--retry-failed` one (`FleetRun.retryFailed`). @default false */
	readonly retryFailed?: boolean;
	/**
	 * What decides the job's fetches (`Job.fingerprint`): kept by a run this worker opens; a run opened
	 * with another is not joined (`changed`). @default none: any run is joined
	 */
	readonly jobFingerprint?: string;
	/** How long the loader role lasts without a sign of life (renewed each batch), ms. @default 60,000 */
	readonly loaderLeaseMs?: number;
	/** Targets written per statement while loading (the other workers see them batch by batch). @default 1,000 */
	readonly loadBatchSize?: number;
	readonly worker?: WorkerIdentity;
}

export type OpenFleetRunResult =
	/** A named run that is already complete: nothing to do, nothing registered. */
	| { readonly outcome: "complete"; readonly run: FleetRun }
	/** The run to join was opened with another version of the job (its targets or options): not joined. */
	| { readonly outcome: "changed"; readonly run: FleetRun }
	| {
			readonly outcome: "opened" | "joined";
			readonly run: FleetRun;
			readonly worker: FleetWorker;
			/** This worker streamed the targets in (and the run is now running). */
			readonly loaded: boolean;
	  };

interface RunRow {
	id: string;
	job_name: string;
	run_name: string;
	state: FleetRun["state"];
	created_at: Date;
	retry_failed?: boolean;
	job_fingerprint?: string | null;
}

export function toRun(row: RunRow): FleetRun {
	return {
		id: Number(row.id),
		jobName: row.job_name,
		runName: row.run_name,
		state: row.state,
		createdAt: row.created_at,
		retryFailed: row.retry_failed === true,
	};
}

const RUN_COLUMNS = "id, job_name, run_name, state, created_at, retry_failed";

/**
 * Join the job's fleet run or open one. The worker that opens a run (or finds a loader gone past its
 * lease) streams the targets in before this returns; a worker arriving while another loads returns at
 * once and may claim what is loaded so far. A complete run of the given name is reported, never reopened.
 */
export async function openFleetRun(fleet: Fleet, options: OpenFleetRunOptions): Promise<OpenFleetRunResult> {
	const loaderLeaseMs = options.loaderLeaseMs ?? 60_000;
	const opened = await fleet.transaction(async (query) => {
		// One opener per job at a time: two workers starting together find the same run.
		await query("SELECT pg_advisory_xact_lock(hashtext($1))", [`scrapejob fleet job ${options.jobName}`]);
		const found =
			options.runName === undefined
				? await query<RunRow>(
						`SELECT ${RUN_COLUMNS}, job_fingerprint FROM runs WHERE job_name = $1 AND state <> 'complete' ORDER BY created_at DESC, id DESC LIMIT 1`,
						[options.jobName],
					)
				: await query<RunRow>(
						`SELECT ${RUN_COLUMNS}, job_fingerprint FROM runs WHERE job_name = $1 AND run_name = $2`,
						[options.jobName, options.runName],
					);
		let row = found[0];
		if (row?.state === "complete") return { outcome: "complete" as const, run: toRun(row) };
		const opener = row?.job_fingerprint ?? null;
		if (opener !== null && options.jobFingerprint !== undefined && opener !== options.jobFingerprint)
			return { outcome: "changed" as const, run: toRun(row!) };
		const outcome = row === undefined ? ("opened" as const) : ("joined" as const);
		if (row === undefined) {
			const runName = options.runName ?? `${new Date().toISOString()}-${randomBytes(3).toString("hex")}`;
			const limit = options.concurrencyLimit;
			[row] = await query<RunRow>(
				`INSERT INTO runs (job_name, run_name, max_credits, concurrency_limit, host_delay_ms, host_concurrency, retry_failed, job_fingerprint)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${RUN_COLUMNS}`,
				[
					options.jobName,
					runName,
					options.maxCredits ?? null,
					limit,
					options.hostDelayMs ?? 0,
					options.hostConcurrency ?? null,
					options.retryFailed === true,
					options.jobFingerprint ?? null,
				],
			);
			await query("INSERT INTO slots (run_id, slot) SELECT $1, generate_series(0, $2 - 1)", [row!.id, limit]);
		}
		const run = toRun(row!);
		const worker = await registerWorker(query, run.id, options.worker);
		// The loader role: a new run's, or one whose loader stopped renewing it.
		const [loader] = await query<RunRow>(
			`UPDATE runs SET state = 'loading', loader = $2, loader_until = now() + make_interval(secs => $3::float8 / 1000)
			WHERE id = $1 AND (state = 'opening' OR (state = 'loading' AND loader_until < now()))
			RETURNING ${RUN_COLUMNS}`,
			[run.id, worker.id, loaderLeaseMs],
		);
		return { outcome, run: loader ? toRun(loader) : run, worker, loads: loader !== undefined };
	});
	if (opened.outcome === "complete" || opened.outcome === "changed") return opened;
	const { outcome, worker } = opened;
	if (!opened.loads) return { outcome, run: opened.run, worker, loaded: false };
	const run = await loadTargets(fleet, worker, options.source(), loaderLeaseMs, options.loadBatchSize);
	return { outcome, run, worker, loaded: true };
}

/**
 * The loader of the worker's run stopped renewing its role mid-load (killed, cut off): take the role and
 * load the targets again (idempotent per URL key). A worker that joined while the loader was alive asks
 * this when it finds nothing to claim; without it the run stayed `loading` — never complete — until some
 * other worker happened to join. The function returned is true when this worker took the role (and
 * loaded); once it has seen the run past loading it asks the database no more (a run never goes back).
 */
export function loadingTakeOver(
	fleet: Fleet,
	worker: FleetWorker,
	source: () => FleetTargetSource,
	loaderLeaseMs = 60_000,
	batchSize = LOAD_BATCH,
): () => Promise<boolean> {
	let loading = true;
	return async () => {
		if (!loading) return false;
		const [row] = await fleet.query<{ state: string; taken: boolean }>(
			`WITH taken AS (
				UPDATE runs SET loader = $2, loader_until = now() + make_interval(secs => $3::float8 / 1000)
				WHERE id = $1 AND state = 'loading' AND loader_until < now() RETURNING id
			)
			SELECT state, EXISTS (SELECT 1 FROM taken) AS taken FROM runs WHERE id = $1`,
			[worker.runId, worker.id, loaderLeaseMs],
			"fleet_take_over_loading",
		);
		if (row?.state !== "loading") loading = false;
		if (!row?.taken) return false;
		await loadTargets(fleet, worker, source(), loaderLeaseMs, batchSize);
		loading = false;
		return true;
	};
}

/**
 * Stream targets into the run in batches, renewing the loader role with each; then mark the run running,
 * with the count of targets the source left out as fresh (a loader taking over reads them all again, and
 * sets it again). Stops early (returning the run as it is) when the role passed to another worker:
 * loading is idempotent per URL key, so the one that took over loads everything again without duplicates.
 */
export async function loadTargets(
	fleet: Fleet,
	worker: FleetWorker,
	source: FleetTargetSource,
	loaderLeaseMs = 60_000,
	batchSize = LOAD_BATCH,
): Promise<FleetRun> {
	let batch: FleetTargetInput[] = [];
	const flush = async (): Promise<boolean> => {
		const items = batch;
		batch = [];
		return fleet.transaction(async (query) => {
			// The batch goes in only under the role, which it then renews: the targets' rows locked before the
			// run's, as every writer of both does. A role lost in between leaves rows the next loader writes too.
			const insert = (within: readonly FleetTargetInput[]) =>
				insertTargets(query, worker.runId, within, { loader: worker.id });
			if (source.room) await insertWithinMaxPages(query, worker.runId, items, source.room, insert, true);
			else await insert(items);
			const [held] = await query(
				`UPDATE runs SET loader_until = now() + make_interval(secs => $3::float8 / 1000)
				WHERE id = $1 AND state = 'loading' AND loader = $2 RETURNING id`,
				[worker.runId, worker.id, loaderLeaseMs],
			);
			return held !== undefined;
		});
	};
	let held = true;
	for await (const target of source) {
		batch.push(target);
		if (batch.length < batchSize) continue;
		held = await flush();
		if (!held) break;
	}
	if (held && batch.length > 0) held = await flush();
	if (held) {
		const room = source.room;
		await fleet.transaction(async (query) => {
			// The seeds are in: the links found while they loaded, spares until now, take the room they left.
			// The frontier lock first, as every writer of the run's page count takes it before the run's row.
			if (room) await lockFrontier(query, worker.runId);
			await query(
				"UPDATE runs SET state = 'running', loader = NULL, loader_until = NULL, fresh = $3 WHERE id = $1 AND state = 'loading' AND loader = $2",
				[worker.runId, worker.id, source.fresh ?? 0],
			);
			if (room) await fillFreedRoomIn(query, worker.runId, room.maxPages);
		});
		// Fresh statistics before the claims: freshly loaded tables planned without them made a claim over
		// 20,000 hosts take ~100 ms instead of ~0.5 ms.
		await fleet.query("ANALYZE targets, hosts");
	}
	const [row] = await fleet.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1`, [worker.runId]);
	return toRun(row!);
}
