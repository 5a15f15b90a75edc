import { classifyFailure, type ScraperClient } from "../api/index.js";
import { errorMessage } from "../shared/index.js";

export interface HealthReading {
	/** Free slots of the key (`X-RateLimit-Remaining`), when the answer said. */
	readonly rateLimitRemaining: number | undefined;
	/** Why the check failed when the run may still start (e.g. the endpoint is down); null when it passed. */
	readonly failure: string | null;
}

/**
 * The service's own advice: read X-RateLimit-Remaining before a batch. The health check is free, so
 * it runs before the run folder exists: a refused key (401/402/403) throws here, leaving nothing
 * behind to resume (so does a stop request during the check). Any other failure is reported and the
 * run starts anyway.
 */
export async function checkScraperHealth(client: ScraperClient, signal: AbortSignal): Promise<HealthReading> {
	try {
		const health = await client.health(signal);
		return { rateLimitRemaining: health.headers.rateLimitRemaining, failure: null };
	} catch (error) {
		// A refused key, or Ctrl-C while checking: nothing was started, so nothing is left behind.
		if (classifyFailure(error).action === "abort" || signal.aborted) throw error;
		return { rateLimitRemaining: undefined, failure: errorMessage(error) };
	}
}
