import {
	AccountApiNotFoundError,
	createSavedItemsClient,
	DEFAULT_API_URL,
	DEFAULT_SCRAPER_URL,
	isNotTheService,
	namingRefusedKey,
	type SavedItemsClient,
	type ScraperAccess,
	type ScraperClient,
} from "../api/index.js";
import { maskSecret, ScrapejobError } from "../common/index.js";
import { keyHeaderProblem } from "../config/index.js";
import { type ConnectContext, noKeyError, type ServiceConnection } from "./service-connection.js";

/** The account has no scraper access (`has_access: false`, `api_key: null`, docs/service.md, "Account endpoints"). Exit 3, like a refused key. */
export class NoScraperAccessError extends ScrapejobError {
	constructor(message: string) {
		super("SCRAPEJOB_NO_ACCESS", message);
	}
}

/** A scraper client and where its key and address came from (never the key itself). */
export interface ScraperAccessPoint {
	readonly client: ScraperClient;
	/** The same key and address on at most `connections` sockets: what a run at that concurrency fetches with. */
	clientFor(connections: number): ScraperClient;
	readonly endpoint: string;
	readonly keySource: "SCRAPEJOB_SCRAPER_KEY" | "account";
	/** Masked (`ab…yz`), for display. */
	readonly maskedKey: string;
	/** The key itself: only for scrubbing it from logs, never for display. */
	readonly secret: string;
	/** The account's scraper access record (credits, concurrency), when the key was learned from it. */
	readonly access: ScraperAccess | null;
}

/**
 * The scraper key from SCRAPEJOB_SCRAPER_KEY, else learned from the account's GET /public/scraper
 * (`api_key` and `endpoint_url`) — the same order `run` uses, so `health` checks what a run would use.
 */
const CONFIGURED_KEY = "the scraper key (SCRAPEJOB_SCRAPER_KEY)";
const ACCOUNT_HANDED_KEY = "the scraper key the account handed out (GET /public/scraper api_key)";

export async function connectScraper(ctx: ConnectContext, connection: ServiceConnection): Promise<ScraperAccessPoint> {
	const configured = connection.config.scraperKey;
	if (configured) {
		const endpoint = connection.config.scraperUrl ?? DEFAULT_SCRAPER_URL;
		return {
			client: connection.scraper(configured, endpoint, { keyName: CONFIGURED_KEY }),
			clientFor: (connections) => connection.scraper(configured, endpoint, { connections, keyName: CONFIGURED_KEY }),
			endpoint,
			keySource: "SCRAPEJOB_SCRAPER_KEY",
			maskedKey: maskSecret(configured),
			secret: configured,
			access: null,
		};
	}
	if (!connection.account) throw noKeyError(ctx.words);
	const access = await connection.account.scraperAccess(ctx.signal).catch((error: unknown) => {
		// A 404 or a web page's 200 at the account address said exit 1, as if targets had failed: no
		// fetch can succeed there, so it ends the run as an unreachable service does (exit 3).
		if (isNotTheService(error)) {
			throw new AccountApiNotFoundError(new URL(connection.config.apiUrl ?? DEFAULT_API_URL).href, error);
		}
		throw namingRefusedKey(error, "the account key (SCRAPEJOB_ACCOUNT_KEY)");
	});
	if (!access.has_access || !access.api_key) {
		throw new NoScraperAccessError(
			"the account has no scraper access (GET /public/scraper: has_access false); add scraper access to the account first",
		);
	}
	const key = access.api_key;
	const problem = keyHeaderProblem(key);
	// Sent as it came, every fetch would fail on this machine and the run would wait out an "outage".
	if (problem !== null)
		throw new NoScraperAccessError(
			`the scraper key the account handed out (GET /public/scraper api_key) ${problem}: set SCRAPEJOB_SCRAPER_KEY to the key shown in the service's dashboard`,
		);
	// A configured address wins over the account's, as it does everywhere (flags > env > config).
	const endpoint = connection.config.scraperUrl ?? access.endpoint_url;
	return {
		client: connection.scraper(key, endpoint, { keyName: ACCOUNT_HANDED_KEY }),
		clientFor: (connections) => connection.scraper(key, endpoint, { connections, keyName: ACCOUNT_HANDED_KEY }),
		endpoint,
		keySource: "account",
		maskedKey: maskSecret(access.api_key),
		secret: access.api_key,
		access,
	};
}

/** The account's saved-item listings, read with the key and address the run fetches with. */
export function savedItemsFor(scraper: ScraperAccessPoint): SavedItemsClient {
	return createSavedItemsClient({ scraperKey: scraper.secret, baseUrl: scraper.endpoint });
}
