import type { Fleet } from "./connect.js";
import { hostOf } from "./hosts.js";
import type { FleetTargetInput } from "./types.js";

/** Targets inserted per statement while loading. */
export const LOAD_BATCH = 1000;

/** What must still hold for targets to enter: a finder's lease, or a worker's loader role. */
export type TargetsFence = { readonly targetId: string; readonly epoch: number } | { readonly loader: string };

/**
 * Insert targets of `runId` (and rows for their hosts, with the run's politeness), each URL key once:
 * a key already in the run is skipped (`ON CONFLICT DO NOTHING`), or, still queued, takes a shallower
 * depth (and that finder's parent) found now. `fence` is what must still hold for anything to enter: the
 * leased target that found these (under that epoch), or the loader role of the worker loading the run.
 * The run's page count (`runs.pages`) rises with the new ones in the same statement. Returns how many
 * were new.
 */
export async function insertTargets(
	query: Fleet["query"],
	runId: number,
	targets: readonly FleetTargetInput[],
	fence: TargetsFence,
): Promise<number> {
	if (targets.length === 0) return 0;
	const ids: string[] = [];
	const keys: string[] = [];
	const urls: string[] = [];
	const hosts: string[] = [];
	const depths: number[] = [];
	const inputs: (string | null)[] = [];
	const parents: (string | null)[] = [];
	const found: (boolean | null)[] = [];
	// In URL key order: workers inserting overlapping keys at once meet each other's uncommitted rows in
	// one order, so none can wait on another that waits on it.
	const sorted = targets
		.map((target) => ({ target, key: target.urlKey ?? target.url }))
		.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
	for (const { target, key } of sorted) {
		ids.push(target.targetId ?? key);
		keys.push(key);
		urls.push(target.url);
		hosts.push(target.host ?? hostOf(target.url));
		depths.push(target.depth ?? 0);
		inputs.push(target.input === undefined ? null : JSON.stringify(target.input));
		parents.push(target.parent ?? null);
		found.push(target.freshFound ?? null);
	}
	// A discovered link enters only while the page that found it is still leased under the finder's
	// epoch (a worker whose lease passed to another adds nothing); a loaded batch, while its worker loads.
	const [fenced, fenceValues, name] =
		"loader" in fence
			? [
					"EXISTS (SELECT 1 FROM runs r WHERE r.id = $1 AND r.state = 'loading' AND r.loader = $10)",
					[fence.loader],
					"fleet_load_targets",
				]
			: [
					"EXISTS (SELECT 1 FROM targets p WHERE p.run_id = $1 AND p.target_id = $10 AND p.lease_epoch = $11 AND p.state = 'leased')",
					[fence.targetId, fence.epoch],
					"fleet_insert_links",
				];
	const rows = await query<{ n: number }>(
		`WITH input AS (
			-- One row per URL key (a statement may update a row once): the shallowest.
			SELECT DISTINCT ON (i.url_key) * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::jsonb[], $8::text[],
				$9::boolean[]) AS i(target_id, url_key, url, host, depth, input, parent, fresh_found)
			WHERE ${fenced}
			ORDER BY i.url_key, i.depth
		), new_hosts AS (
			INSERT INTO hosts (run_id, host, delay_ms, max_in_flight)
			SELECT DISTINCT $1::bigint, i.host, r.host_delay_ms, r.host_concurrency FROM input i, runs r WHERE r.id = $1
			ORDER BY i.host
			ON CONFLICT DO NOTHING
			RETURNING 1
		), inserted AS (
			INSERT INTO targets (run_id, target_id, url_key, url, host, depth, parent, input, fresh_found)
			SELECT $1, i.target_id, i.url_key, i.url, i.host, i.depth, i.parent, i.input, i.fresh_found FROM input i
			ON CONFLICT DO NOTHING
			RETURNING depth
		), shallower AS (
			-- Found again shallower while still queued (or waiting as a spare): the shallowest finder's depth
			-- (depth-exact crawls). Rows locked in URL key order, as inserts meet them: two finders never wait
			-- on each other in a cycle.
			-- Each of the batch's keys looked up in the run's key index (a lateral probe): the batch's rows,
			-- whatever the plan (a prepared statement's generic one included), not every target of the run.
			SELECT q.target_id, i.depth, i.parent FROM input i
			CROSS JOIN LATERAL (
				SELECT t.target_id, t.url_key FROM targets t
				WHERE t.run_id = $1 AND t.url_key = i.url_key AND t.state IN ('queued', 'spare') AND t.depth > i.depth
				-- One row at most (a run's URL keys are unique); the limit keeps the probe a probe: a plain
				-- subquery would be flattened into a join the planner may run the other way round.
				LIMIT 1
			) q
			ORDER BY q.url_key
			FOR UPDATE OF q
		), deepened AS (
			UPDATE targets t SET depth = s.depth, parent = s.parent
			FROM shallower s WHERE t.run_id = $1 AND t.target_id = s.target_id
			RETURNING 1
		), counted AS (
			-- The run's pages (a sitemap task is none), raised with the rows that make them: max_pages reads
			-- this row. Locked last (it reads every write above): as in the budget's statements, a target's or
			-- host's row before the run's, so no two writers can wait on each other in a cycle.
			UPDATE runs SET pages = pages + c.n
			FROM (SELECT count(*) AS n FROM inserted WHERE depth >= 0) c,
				(SELECT count(*) FROM deepened) d, (SELECT count(*) FROM new_hosts) h
			WHERE runs.id = $1 AND c.n > 0
		)
		SELECT count(*)::int AS n FROM inserted`,
		[runId, ids, keys, urls, hosts, depths, inputs, parents, found, ...fenceValues],
		name,
	);
	return rows[0]?.n ?? 0;
}
