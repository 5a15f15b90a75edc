import { ScrapejobError } from "../common/index.js";

/**
 * What went wrong with a browser session, as the runner decides on it:
 * `refused` — the service refused the browser key (401/403): the run stops (exit 3);
 * `busy` — over the account's session limit (429): wait and try again without using an attempt;
 * `lost` — the session died or could not be reached (closed, reset, cut at its length): retried;
 * `navigation` — the page did not load (DNS, TLS, refused by the site): final, like the scraper's;
 * `step` — a step failed (a selector never appeared, an evaluate threw): final, named;
 * `session_length` — the steps did not fit in the session's length: final.
 */
export const BROWSER_FAILURE_KINDS = ["refused", "busy", "lost", "navigation", "step", "session_length"] as const;
export type BrowserFailureKind = (typeof BROWSER_FAILURE_KINDS)[number];

export class BrowserSessionError extends ScrapejobError {
	readonly kind: BrowserFailureKind;
	constructor(kind: BrowserFailureKind, message: string, options?: { cause?: unknown }) {
		super(`SCRAPEJOB_BROWSER_${uppercase(kind)}`, message, options);
		this.kind = kind;
	}
}

function uppercase<Kind extends BrowserFailureKind>(kind: Kind): Uppercase<Kind> {
	return kind.toUpperCase() as Uppercase<Kind>;
}

/** A Playwright error's message, first line only, with the browser key (and any `key=` query) removed. */
export function sessionMessage(error: unknown, key: string): string {
	const text = error instanceof Error ? error.message : String(error);
	const first = text.split("\n").find((line) => line.trim() !== "") ?? text;
	return first
		.split(key)
		.join("[redacted]")
		.replace(/([?&]key=)[^&\s]*/g, "$1[redacted]")
		.slice(0, 500);
}

/** Which kind a failure to connect is: the upgrade's HTTP status decides, else the session was not reached. */
export function connectFailureKind(message: string): BrowserFailureKind {
	if (/\b(401|403)\b/.test(message)) return "refused";
	if (/\b429\b/.test(message)) return "busy";
	return "lost";
}

/** Whether an error inside a session means the session itself ended (rather than the page or a step failing). */
export function isSessionLost(message: string): boolean {
	return /has been closed|Target closed|browser has disconnected|Connection closed|WebSocket|ECONNRESET|socket hang up/i.test(
		message,
	);
}
