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
	return new Set((await freshPages(fleet, jobName, targetIds, freshnessMs)).keys());
}

/** What a fresh crawled page's newest record kept: its links, and where its redirects ended. */
export interface FreshPage {
	/** Null: none kept (a record of a run without freshness): the page is fetched again when they are wanted. */
	readonly links: readonly string[] | null;
	/** The address its redirects ended at, when elsewhere than its own; null otherwise. */
	readonly landing: string | null;
}

/** A crawl's claimed pages (or links) that are fresh in the job's fleet runs (as `freshTargetIds`), with what each one's newest record kept. */
export async function freshPages(
	fleet: Pick<Fleet, "query">,
	jobName: string,
	targetIds: readonly string[],
	freshnessMs: number,
): Promise<Map<string, FreshPage>> {
	if (targetIds.length === 0 || freshnessMs <= 0) return new Map();
	const rows = await fleet.query<{ target_id: string; links: string[] | null; landing: string | null }>(
		`SELECT newest.target_id, newest.links, newest.landing FROM (
			SELECT DISTINCT ON (rec.target_id) rec.target_id, rec.record->>'status' AS status, rec.written_at, rec.links,
				rec.landing
			FROM records rec JOIN runs r ON r.id = rec.run_id
			WHERE r.job_name = $1 AND rec.target_id = ANY($2::text[])
			ORDER BY rec.target_id, rec.written_at DESC
		) newest
		WHERE newest.status = 'ok' AND newest.written_at > now() - make_interval(secs => $3::float8 / 1000)`,
		[jobName, targetIds, freshnessMs],
		"fleet_fresh_pages",
	);
	return new Map(rows.map((row) => [row.target_id, { links: row.links, landing: row.landing }]));
}

/**
 * Which of `targetIds` last failed in the job's fleet runs (`--retry-failed` with `--fleet`): their
 * newest record, in any run of the job, is a failed one.
 */
export function failedTargetIds(fleet: Fleet, jobName: string, targetIds: readonly string[]): Promise<Set<string>> {
	return newestRecordIs(fleet, jobName, targetIds, "failed");
}

/** Which of `targetIds` have an ok newest record in the job's fleet runs (a retried crawl follows no link to them). */
export function okTargetIds(fleet: Fleet, jobName: string, targetIds: readonly string[]): Promise<Set<string>> {
	return newestRecordIs(fleet, jobName, targetIds, "ok");
}

async function newestRecordIs(
	fleet: Fleet,
	jobName: string,
	targetIds: readonly string[],
	status: "ok" | "failed",
): Promise<Set<string>> {
	if (targetIds.length === 0) return new Set();
	const rows = await fleet.query<{ target_id: string }>(
		`SELECT newest.target_id FROM (
			SELECT DISTINCT ON (rec.target_id) rec.target_id, rec.record->>'status' AS status
			FROM records rec JOIN runs r ON r.id = rec.run_id
			WHERE r.job_name = $1 AND rec.target_id = ANY($2::text[])
			ORDER BY rec.target_id, rec.written_at DESC
		) newest
		WHERE newest.status = $3`,
		[jobName, targetIds, status],
		`fleet_newest_${status}`,
	);
	return new Set(rows.map((row) => row.target_id));
}

/** A crawled page whose newest record in the job's fleet runs failed, as its run's frontier held it. */
export interface FailedCrawlPage {
	readonly targetId: string;
	readonly url: string;
	readonly urlKey: string;
	readonly host: string;
	readonly depth: number;
	readonly parent: string | null;
	readonly input: unknown;
}

/**
 * `--retry-failed` of a crawl: the job's crawled pages whose newest fleet record failed, with the depth,
 * parent and fields their run's frontier gave them, `limit` at a time in target id order after `after`
 * (null: from the first), so any number of them streams in bounded memory.
 */
export async function failedCrawlPages(
	fleet: Fleet,
	jobName: string,
	after: string | null,
	limit: number,
): Promise<FailedCrawlPage[]> {
	const rows = await fleet.query<{
		target_id: string;
		url: string;
		url_key: string;
		host: string;
		depth: number;
		parent: string | null;
		input: unknown;
	}>(
		`SELECT t.target_id, t.url, t.url_key, t.host, t.depth, t.parent, t.input FROM (
			SELECT DISTINCT ON (rec.target_id) rec.run_id, rec.target_id, rec.record->>'status' AS status
			FROM records rec JOIN runs r ON r.id = rec.run_id
			WHERE r.job_name = $1 AND ($2::text IS NULL OR rec.target_id > $2)
			ORDER BY rec.target_id, rec.written_at DESC
		) newest
		JOIN targets t ON t.run_id = newest.run_id AND t.target_id = newest.target_id
		WHERE newest.status = 'failed' AND t.depth >= 0
		ORDER BY newest.target_id
		LIMIT $3`,
		[jobName, after, limit],
		"fleet_failed_pages",
	);
	return rows.map((row) => ({
		targetId: row.target_id,
		url: row.url,
		urlKey: row.url_key,
		host: row.host,
		depth: row.depth,
		parent: row.parent,
		input: row.input,
	}));
}
