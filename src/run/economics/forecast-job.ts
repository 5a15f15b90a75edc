import { creditCostRange } from "../../common/index.js";
import { readStoredEconomics } from "../../history/index.js";
import { type Job, streamTargetBatches } from "../../job/index.js";
import { type Forecast, forecastCredits } from "./forecast.js";
import { createHostCosts } from "./host-costs.js";

/**
 * `run --dry-run`'s forecast (docs/behaviour.md, "Forecast"): the job's targets counted per host (one more
 * pass over its sources, only when the job's store at `jobDir` has costs), forecast from the store; null
 * without a store, or when it knows none of the targets' domains. Reads the store, writes nothing.
 */
export async function forecastJob(job: Job, jobDir: string, signal?: AbortSignal): Promise<Forecast | null> {
	const stored = readStoredEconomics(jobDir);
	if (stored === null || stored.costs.length === 0) return null;
	const tally = createHostCosts();
	let adaptive = false;
	for await (const batch of streamTargetBatches(job)) {
		if (signal?.aborted) break;
		for (const target of batch) {
			// Browser sessions are paid in browser credits: not the scraper's forecast.
			if (target.browserSession) continue;
			if (target.params.mode === "adaptive") adaptive = true;
			tally.add(target.url, 0, 0, 0, creditCostRange(target.params));
		}
	}
	return forecastCredits(tally.targets(), stored.costs, stored.modes, adaptive);
}
