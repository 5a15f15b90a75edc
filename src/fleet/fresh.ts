import type { Fleet } from "./connect.js";

/**
 * Which of `targetIds` are fresh in the job's fleet runs: their newest record (any run of the job) is ok
 * and younger than `freshnessMs`. A target whose newest record failed is never fresh: the failure is the
 * newer news about the page.
 */
export async function freshTargetIds(
	fleet: Fleet,
	jobName: string,
	targetIds: readonly string[],
	freshnessMs: number,
): Promise<Set<string>> {
	if (targetIds.length === 0 || freshnessMs <= 0) return new Set();
	const rows = await fleet.query<{ target_id: string }>(
		`SELECT newest.target_id FROM (
			SELECT DISTINCT ON (rec.target_id) rec.target_id, rec.record->>'status' AS status, rec.written_at
			FROM records rec JOIN runs r ON r.id = rec.run_id
			WHERE r.job_name = $1 AND rec.target_id = ANY($2::text[])
			ORDER BY rec.target_id, rec.written_at DESC
		) newest
		WHERE newest.status = 'ok' AND newest.written_at > now() - make_interval(secs => $3::float8 / 1000)`,
		[jobName, targetIds, freshnessMs],
		"fleet_fresh",
	);
	return new Set(rows.map((row) => row.target_id));
}

/**
 * Which of `targetIds` last failed in the job's fleet runs (`--retry-failed` with `--fleet`): their
 * newest record, in any run of the job, is a failed one.
 */
export async function failedTargetIds(
	fleet: Fleet,
	jobName: string,
	targetIds: readonly string[],
): Promise<Set<string>> {
	if (targetIds.length === 0) return new Set();
	const rows = await fleet.query<{ target_id: string }>(
		`SELECT newest.target_id FROM (
			SELECT DISTINCT ON (rec.target_id) rec.target_id, rec.record->>'status' AS status
			FROM records rec JOIN runs r ON r.id = rec.run_id
			WHERE r.job_name = $1 AND rec.target_id = ANY($2::text[])
			ORDER BY rec.target_id, rec.written_at DESC
		) newest
		WHERE newest.status = 'failed'`,
		[jobName, targetIds],
		"fleet_failed",
	);
	return new Set(rows.map((row) => row.target_id));
}
