import {
	BodyTooLargeError,
	NetworkError,
	RequestAbortedError,
	ServiceError,
	UnexpectedResponseError,
} from "./errors.js";

/**
 * What the runner should do about one failed attempt (docs/service.md, "Retries"):
 * - `retry`: try again after exponential backoff, spending an attempt (5xx, network errors);
 * - `wait`: pause the whole queue for `resetMs`, then try again without spending an attempt (429);
 * - `fail`: record this target as failed, do not retry (400, 422, DNS, navigation errors, odd answers);
 * - `abort`: stop starting new work; the account cannot go on (401, 402, 403).
 */
export type FailureAction =
	| {
			readonly action: "retry";
			readonly kind: string;
			/**
			 * The service itself looks unreachable or down (no answer, a gateway's 502/503/504, a 500 that is not
			 * a scraping error): many of these in a row across targets are an outage, which pauses the queue.
			 */
			readonly serviceDown?: true;
			/** The service advises a longer `wait_seconds` after a navigation timeout: the retry asks for one. */
			readonly raiseWaitSeconds?: true;
	  }
	| {
			readonly action: "wait";
			readonly kind: "rate_limited";
			readonly resetMs: number;
			/** The service asked for more than `MAX_RESET_SECONDS`; `resetMs` is the cap. */
			readonly capped?: true;
	  }
	| { readonly action: "fail"; readonly kind: string }
	| { readonly action: "abort"; readonly kind: "unauthorized" | "insufficient_credits" | "forbidden" };

/** Seconds the service usually asks for after a 429 when the body does not say (docs/service.md, "Concurrency and 429"). */
export const DEFAULT_RESET_SECONDS = 60;
/** Longest 429 pause honoured, seconds: a `reset` of 10⁹ would otherwise stall a run for ever. */
export const MAX_RESET_SECONDS = 3600;

// The service's advice after a navigation timeout is a longer wait_seconds: worth a retry that asks for it.
const NAVIGATION_TIMEOUT = /navigation timeout/i;
// Scraping errors the service already retried inside, or that a retry cannot fix (docs/service.md, "Retries": not retried).
const NOT_RETRIED_MESSAGES = [/dns resolution/i, /navigation/i, /name not resolved/i, /ERR_NAME_NOT_RESOLVED/i];

function snake(text: string): string {
	return text
		.toLowerCase()
		.replace(/[^a-z0-9]+/g, "_")
		.replace(/^_+|_+$/g, "")
		.slice(0, 40);
}

/** One pure function decides retrying, so the rules live in exactly one place. */
export function classifyFailure(error: unknown): FailureAction {
	if (error instanceof ServiceError) {
		const { status } = error;
		if (status === 429) {
			const seconds =
				error.resetSeconds !== undefined && error.resetSeconds >= 0 ? error.resetSeconds : DEFAULT_RESET_SECONDS;
			if (seconds > MAX_RESET_SECONDS) {
				return { action: "wait", kind: "rate_limited", resetMs: MAX_RESET_SECONDS * 1000, capped: true };
			}
			return { action: "wait", kind: "rate_limited", resetMs: seconds * 1000 };
		}
		if (status === 401) return { action: "abort", kind: "unauthorized" };
		if (status === 402) return { action: "abort", kind: "insufficient_credits" };
		if (status === 403) return { action: "abort", kind: "forbidden" };
		if (status >= 500 || status === 408) return classifyScrapingError(status, error.errorType, error.detail);
		if (status === 422) return { action: "fail", kind: "invalid_parameters" };
		return { action: "fail", kind: `http_${status}` };
	}
	if (error instanceof NetworkError) {
		// Cut after the service answered: it is up, and the attempt was made (and maybe paid): retried as a
		// failure of this target, never taken for an outage (an outage's retries are free and unbounded).
		if (error.answeredStatus !== null) return { action: "retry", kind: `network_${error.failure}` };
		// The service's own host not resolving is our network (or its DNS) being down: an outage sign.
		if (error.failure === "dns") return { action: "retry", kind: "network_dns", serviceDown: true };
		return { action: "retry", kind: `network_${error.failure}`, serviceDown: true };
	}
	if (error instanceof UnexpectedResponseError) return { action: "fail", kind: "unexpected_response" };
	if (error instanceof BodyTooLargeError) return { action: "fail", kind: "body_too_large" };
	if (error instanceof RequestAbortedError) return { action: "fail", kind: "aborted" };
	return { action: "fail", kind: error instanceof Error ? snake(error.name) || "error" : "error" };
}

/**
 * A 5xx (or 408) from the service, or a failed task's error: the rules for scraping errors in one place.
 * A scraping error names what went wrong at the target ("Page crashed"): a more useful kind than the status.
 */
export function classifyScrapingError(status: number, errorType: string, detail: string): FailureAction {
	const text = `${errorType} ${detail}`;
	if (NAVIGATION_TIMEOUT.test(text)) return { action: "retry", kind: "navigation_timeout", raiseWaitSeconds: true };
	if (NOT_RETRIED_MESSAGES.some((pattern) => pattern.test(text))) {
		return { action: "fail", kind: /dns|name/i.test(text) ? "dns_failed" : "navigation_error" };
	}
	if (/scraping|task failed/i.test(errorType) && detail && detail !== errorType) {
		return { action: "retry", kind: snake(detail) || `http_${status}` };
	}
	if (status === 408) return { action: "retry", kind: "timeout" };
	// Not a scraping error: the service (or a gateway in front of it) is failing, whatever the target.
	return { action: "retry", kind: `http_${status}`, serviceDown: true };
}

/**
 * Kinds that say the service (or the address configured for it) failed, not the target: its own error
 * statuses, no answer, an answer that is not the service's. A run whose every target failed so says
 * nothing about the targets (docs/behaviour.md, "Start-up").
 */
const SERVICE_SIDE_KIND = /^(?:http_\d{3}|network_[a-z]+|unexpected_response)$/;

export function isServiceSideKind(kind: string): boolean {
	return SERVICE_SIDE_KIND.test(kind);
}

/** A short, stable name for the error kind of a failure, for records and summaries. */
export function errorKind(error: unknown): string {
	return classifyFailure(error).kind;
}
