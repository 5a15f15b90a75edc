import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Fleet } from "./connect.js";
import type { FleetWorker } from "./types.js";

export interface WorkerIdentity {
	/** @default os.hostname() */
	readonly hostname?: string;
	/** @default process.pid */
	readonly pid?: number;
}

/** Register this process as a worker of the run: its id owns its leases and slots. */
export async function registerWorker(
	query: Fleet["query"],
	runId: number,
	identity: WorkerIdentity = {},
): Promise<FleetWorker> {
	const id = randomUUID();
	await query("INSERT INTO workers (id, run_id, hostname, pid) VALUES ($1, $2, $3, $4)", [
		id,
		runId,
		identity.hostname ?? hostname(),
		identity.pid ?? process.pid,
	]);
	return { id, runId };
}

/**
 * The worker stopped cleanly: it leaves the run's live workers now, so the others' part of the limit
 * grows at once instead of a lease after its last beat. A later beat does not bring it back.
 */
export async function endWorker(fleet: Fleet, worker: FleetWorker): Promise<void> {
	await fleet.query(
		"UPDATE workers SET ended_at = now() WHERE id = $1 AND ended_at IS NULL",
		[worker.id],
		"fleet_end_worker",
	);
}
