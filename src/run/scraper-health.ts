import { classifyFailure, NetworkError, type ScraperClient } from "../api/index.js";
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
 * behind to resume (so does a stop request during the check), and so does a service that cannot be
 * reached at all — its host name does not resolve, nothing listens, its certificate is refused (exit 3,
 * as the account look-up unreachable at start-up): every fetch would fail the same way, and with only
 * a scraper key there was no look-up to find it first (the first target spent its attempts, got a
 * failed record a plain `--resume` does not retry, and the run waited out `outage_timeout`). Any other
 * failure (an error answer, a dropped or slow connection) is reported and the run starts anyway.
 */
/** Network failures that say the service cannot be reached at all, not that it is slow or busy. */
const UNREACHABLE: ReadonlySet<NetworkError["failure"]> = new Set(["dns", "refused", "tls"]);

export async function checkScraperHealth(client: ScraperClient, signal: AbortSignal): Promise<HealthReading> {
	try {
		const health = await client.health(signal);
		return { rateLimitRemaining: health.headers.rateLimitRemaining, failure: null };
	} catch (error) {
		// A refused key, or Ctrl-C while checking: nothing was started, so nothing is left behind.
		if (classifyFailure(error).action === "abort" || signal.aborted) throw error;
		if (error instanceof NetworkError && UNREACHABLE.has(error.failure)) throw error;
		return { rateLimitRemaining: undefined, failure: errorMessage(error) };
	}
}
