import { withSession } from "./normalize.js";
import { createListedTargetKey, createTargetKey, identityOptionsJson } from "./target-id.js";
import type { Job } from "./types.js";

/**
 * The job as a run of a version before URL identity numbered it: ids derived from each URL as written
 * (an id the job names stays). Only for resuming such a run, whose records and journal hold those ids.
 */
export function withLiteralTargetIds(job: Job): Job {
	const targets = job.targets.map((target) => {
		const optionsJson = identityOptionsJson(withSession(target.params, target.browserSession ?? null));
		if (target.id !== createListedTargetKey(target.url, optionsJson).id) return target;
		return { ...target, id: createTargetKey(target.url, optionsJson).id };
	});
	return { ...job, targets, literalTargetIds: true };
}
