import type { BrowserServiceAccess } from "../browser/index.js";
import { ScrapejobError } from "../common/index.js";
import type { ConnectContext, ServiceConnection } from "./service-connection.js";

/** The account has no browser access, or no way to ask (no account key). Exit 3 before anything starts. */
export class NoBrowserAccessError extends ScrapejobError {
	constructor(message: string) {
		super("SCRAPEJOB_NO_ACCESS", message);
	}
}

export type RunBrowserAccess = BrowserServiceAccess & {
	readonly creditsBefore: number | null;
	readCredits(): Promise<number | null>;
};

/**
 * The browser key, address and limits from GET /public/browser (docs/service.md, "Account endpoints"), for jobs with
 * `browser_session:` targets. The key is only ever handed to the CDP client (and to log scrubbing).
 */
export async function connectBrowser(ctx: ConnectContext, connection: ServiceConnection): Promise<RunBrowserAccess> {
	const account = connection.account;
	if (!account) {
		throw new NoBrowserAccessError(
			"browser_session targets need the account key (SCRAPEJOB_ACCOUNT_KEY): the browser key is read from GET /public/browser",
		);
	}
	const access = await account.browserAccess(ctx.signal);
	if (!access.has_access || !access.api_key || access.concurrency < 1) {
		throw new NoBrowserAccessError(
			"the account has no browser access (GET /public/browser: has_access false or concurrency 0); nothing was sent",
		);
	}
	return {
		endpointUrl: access.endpoint_url,
		key: access.api_key,
		concurrency: access.concurrency,
		maxSessionSeconds: access.max_session_length_seconds > 0 ? access.max_session_length_seconds : 60,
		creditsBefore: typeof access.credits === "number" ? access.credits : null,
		readCredits: async () => {
			const after = await account.browserAccess();
			return typeof after.credits === "number" ? after.credits : null;
		},
	};
}
