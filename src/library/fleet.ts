import { randomBytes } from "node:crypto";
import { closeSync, openSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { jsonlLines, parseJsonLine, UsageError, writeAll } from "../common/index.js";
import {
	connectFleet,
	DEFAULT_FLEET_SCHEMA,
	type FleetStatus,
	fleetStatus,
	latestFleetRecords,
	listFleetRuns,
} from "../fleet/index.js";
import { type ExportFormat, exportLatest } from "../history/index.js";
import { RECORD_COLUMNS, type ResultRecord } from "../output/index.js";

export { type FleetStatus, fleetUrlSecrets, targetCounts } from "../fleet/index.js";

/** Where the fleet's tables are: its database (a secret) and schema. */
export interface FleetAddress {
	readonly url: string;
	/** @default "scrapejob" */
	readonly schema?: string;
}

/** Runs `fleet status` shows at most, newest first. */
const STATUS_RUNS = 10;

/** What `fleetStatusOf` reads. */
export interface FleetStatusOptions {
	/** Only the run of this name (`--fleet-run`), however old; a name the job has no run of is a `UsageError`. */
	readonly runName?: string;
}

/**
 * `scrapejob fleet status`: the job's fleet runs, newest first (at most ten), each with its targets by
 * state, its workers and their last beat, its slots in flight against the limit, its credits against the
 * budget and its pause. Reads only; sends nothing to the service.
 */
export async function fleetStatusOf(
	jobName: string,
	address: FleetAddress,
	options: FleetStatusOptions = {},
): Promise<FleetStatus[]> {
	const fleet = await connectFleet({
		url: address.url,
		schema: address.schema ?? DEFAULT_FLEET_SCHEMA,
		readOnly: true,
	});
	try {
		const all = await listFleetRuns(fleet, jobName);
		const { runName } = options;
		const runs = runName === undefined ? all.slice(0, STATUS_RUNS) : all.filter((run) => run.runName === runName);
		if (runName !== undefined && runs.length === 0) {
			const names = all.slice(0, STATUS_RUNS).map((run) => run.runName);
			throw new UsageError(
				`no fleet run ${runName} of job ${jobName} in ${fleet.maskedUrl}${names.length > 0 ? `; its newest: ${names.join(", ")}` : ": the job has no fleet runs"}`,
			);
		}
		const statuses: FleetStatus[] = [];
		for (const run of runs) {
			const status = await fleetStatus(fleet, run.id);
			if (status) statuses.push(status);
		}
		return statuses;
	} finally {
		await fleet.close();
	}
}

/**
 * A record as a run writes it: its keys in the record's order, `data` last with the job's fields in their
 * declared order (PostgreSQL's jsonb keeps keys sorted by length, which a JSONL export would show).
 */
function inRecordOrder(record: unknown, csvColumns: readonly string[]): unknown {
	if (record === null || typeof record !== "object" || Array.isArray(record)) return record;
	const fields = record as Record<string, unknown>;
	const ordered: Record<string, unknown> = {};
	for (const key of RECORD_COLUMNS) if (key in fields) ordered[key] = fields[key];
	for (const key of Object.keys(fields)) if (!(key in ordered) && key !== "data") ordered[key] = fields[key];
	const data = fields.data;
	if (data !== null && typeof data === "object" && !Array.isArray(data)) {
		const values = data as Record<string, unknown>;
		const inOrder: Record<string, unknown> = {};
		for (const key of csvColumns) if (key in values) inOrder[key] = values[key];
		for (const key of Object.keys(values)) if (!(key in inOrder)) inOrder[key] = values[key];
		ordered.data = inOrder;
	} else if ("data" in fields) ordered.data = data;
	return ordered;
}

/**
 * `export --latest --fleet`: the newest ok record of every target across the job's fleet runs, in the
 * format `export` writes from the job's store. The records come from PostgreSQL a page at a time into a
 * spool file beside `outFile` (removed at the end), which the export then reads like the store's: memory
 * stays bounded whatever the number of targets. Returns the records written.
 */
export async function exportFleetLatest(
	jobName: string,
	address: FleetAddress,
	format: ExportFormat,
	outFile: string,
	csvColumns: readonly string[],
	csvMaxCell?: number,
): Promise<number> {
	const spool = join(dirname(outFile), `.${randomBytes(6).toString("hex")}.fleet-spool.jsonl`);
	const fleet = await connectFleet({
		url: address.url,
		schema: address.schema ?? DEFAULT_FLEET_SCHEMA,
		readOnly: true,
	});
	try {
		// A job the fleet never ran (a typo, another schema) is an error, as a local export without runs is.
		const runs = await fleet.query("SELECT 1 FROM runs WHERE job_name = $1 LIMIT 1", [jobName]);
		if (runs.length === 0)
			throw new UsageError(
				`no fleet runs of job ${jobName} in ${fleet.maskedUrl} (schema ${fleet.schema}): nothing to export`,
			);
		const fd = openSync(spool, "wx", 0o600);
		try {
			let pending = "";
			for await (const record of latestFleetRecords(fleet, jobName)) {
				pending += `${JSON.stringify(inRecordOrder(record, csvColumns))}\n`;
				if (pending.length >= 1 << 20) {
					writeAll(fd, pending);
					pending = "";
				}
			}
			if (pending) writeAll(fd, pending);
		} finally {
			closeSync(fd);
		}
		const spooled = {
			*latestOkRecords(): Generator<ResultRecord> {
				for (const { text } of jsonlLines(spool)) {
					const record = parseJsonLine(text);
					if (record !== undefined) yield record as ResultRecord;
				}
			},
		};
		return await exportLatest(spooled, format, outFile, csvColumns, csvMaxCell);
	} finally {
		await fleet.close();
		rmSync(spool, { force: true });
	}
}
