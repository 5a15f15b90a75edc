import type { ExtractPlan } from "../../extract/index.js";
import { type Job, streamTargetBatches } from "../../job/index.js";
import { createIdSet, type IdSet } from "../records/compact-id-set.js";

/** Which fields read each target's page: the job's own, or the target's or its source's override. */
export interface ExtractPlans {
	/** The plan a target's page is read with (re-extraction: by the record's id). */
	planOf(id: string): ExtractPlan;
	/**
	 * A crawl's seeds with an override of their own: the pages found from them were read with it, but a
	 * record does not say which seed it came from, so re-extraction reads those with the job's fields.
	 */
	readonly crawledPagesUnmatched: boolean;
}

/**
 * The `extract:` overrides of a job (on a target, on a source: docs/guides/extraction.md) as a lookup by
 * target id, for reading stored pages again with the fields each page was meant to be read with. The
 * job's targets are streamed only when some target or source has an override; the ids are kept in a
 * compact set per distinct plan (8 bytes an id), so a million overridden rows stay a few megabytes.
 */
export async function extractPlansOf(job: Job, jobPlan: ExtractPlan, signal?: AbortSignal): Promise<ExtractPlans> {
	const overrides =
		job.targets.some((target) => overridden(target.extract, jobPlan)) ||
		job.sources.some((source) => overridden(source.extract, jobPlan));
	if (!overrides) return { planOf: () => jobPlan, crawledPagesUnmatched: false };
	const byPlan = new Map<ExtractPlan, IdSet>();
	// Every shard's targets: a re-extraction reads the job's records, whichever shard fetched them.
	const { shard: _shard, ...everyShard } = job;
	for await (const batch of streamTargetBatches(everyShard)) {
		if (signal?.aborted) break;
		for (const target of batch) {
			const plan = target.extract;
			if (!plan || !overridden(plan, jobPlan)) continue;
			let ids = byPlan.get(plan);
			if (!ids) {
				ids = createIdSet();
				byPlan.set(plan, ids);
			}
			ids.add(target.id);
		}
	}
	const sets = [...byPlan];
	return {
		planOf(id) {
			for (const [plan, ids] of sets) if (ids.has(id)) return plan;
			return jobPlan;
		},
		crawledPagesUnmatched: job.crawl !== undefined && sets.length > 0,
	};
}

function overridden(plan: ExtractPlan | null | undefined, jobPlan: ExtractPlan): boolean {
	return plan !== undefined && plan !== null && plan !== jobPlan && plan.fields.length > 0;
}
