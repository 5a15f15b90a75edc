import type { Fleet } from "./connect.js";

/** Records read per statement: a page of the job's latest ok records, in target id order. */
const PAGE = 1000;

/**
 * The newest ok record of every target across the job's fleet runs, in target id order, a page at a
 * time (keyset pagination: memory holds one page, whatever the number of targets).
 */
export async function* latestFleetRecords(fleet: Fleet, jobName: string, page = PAGE): AsyncGenerator<unknown> {
	let after = "";
	for (;;) {
		const rows = await fleet.query<{ target_id: string; record: unknown }>(
			`SELECT DISTINCT ON (rec.target_id) rec.target_id, rec.record
			FROM records rec JOIN runs r ON r.id = rec.run_id
			WHERE r.job_name = $1 AND rec.target_id > $2 AND rec.record->>'status' = 'ok'
			ORDER BY rec.target_id, rec.written_at DESC
			LIMIT $3`,
			[jobName, after, page],
			"fleet_latest_records",
		);
		for (const row of rows) yield row.record;
		if (rows.length < page) return;
		after = rows.at(-1)!.target_id;
	}
}
