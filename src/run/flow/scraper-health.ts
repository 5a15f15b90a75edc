import {
	classifyFailure,
	isNotTheService,
	NetworkError,
	type ScraperClient,
	ScraperNotFoundError,
} from "../../api/index.js";
import { errorMessage } from "../../common/index.js";

export interface HealthReading {
	/** Free slots of the key (`X-RateLimit-Remaining`), when the answer said. */
	readonly rateLimitRemaining: number | undefined;
	/** Why the check failed when the run may still start (e.g. the endpoint is down); null when it passed. */
	readonly failure: string | null;
}

/** Network failures that say the service cannot be reached at all, not that it is slow or busy. */
const UNREACHABLE: ReadonlySet<NetworkError["failure"]> = new Set(["dns", "refused", "tls"]);

/**
 * The free health check before the run folder exists (docs/behaviour.md, "Start-up"). It throws — so
 * nothing is left to resume — when no fetch could succeed: a refused key (401/402/403), a stop request,
 * a service that cannot be reached (DNS, refused, TLS), or an address that is not the service (any other
 * 4xx, a redirect, a 200 that is not the service's answer: a scraper URL without `/api/v1` made every
 * target a failed `http_404` record). A busy or failing service (429, 5xx, a dropped or slow
 * connection) is reported and the run starts: the outage rules handle it.
 */
export async function checkScraperHealth(client: ScraperClient, signal: AbortSignal): Promise<HealthReading> {
	try {
		const health = await client.health(signal);
		return { rateLimitRemaining: health.headers.rateLimitRemaining, failure: null };
	} catch (error) {
		if (classifyFailure(error).action === "abort" || signal.aborted) throw error;
		if (error instanceof NetworkError && UNREACHABLE.has(error.failure)) throw error;
		if (isNotTheService(error)) throw new ScraperNotFoundError(client.baseUrl, error);
		return { rateLimitRemaining: undefined, failure: errorMessage(error) };
	}
}
