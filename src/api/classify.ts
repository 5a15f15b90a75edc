import { NetworkError, RequestAbortedError, ServiceError, UnexpectedResponseError } from "./errors.js";

/**
 * What the runner should do about one failed attempt (spec 7.3):
 * - `retry`: try again after exponential backoff, spending an attempt (5xx, network errors);
 * - `wait`: pause the whole queue for `resetMs`, then try again without spending an attempt (429);
 * - `fail`: record this target as failed, do not retry (400, 422, DNS, navigation errors, odd answers);
 * - `abort`: stop starting new work; the account cannot go on (401, 402, 403).
 */
export type FailureAction =
	| { readonly action: "retry"; readonly kind: string }
	| { readonly action: "wait"; readonly kind: "rate_limited"; readonly resetMs: number }
	| { readonly action: "fail"; readonly kind: string }
	| { readonly action: "abort"; readonly kind: "unauthorized" | "insufficient_credits" | "forbidden" };

/** Seconds the service usually asks for after a 429 when the body does not say (spec 8). */
export const DEFAULT_RESET_SECONDS = 60;

// Scraping errors the service already retried inside, or that a retry cannot fix (spec 7.3 "Not retried").
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
			return { action: "wait", kind: "rate_limited", resetMs: seconds * 1000 };
		}
		if (status === 401) return { action: "abort", kind: "unauthorized" };
		if (status === 402) return { action: "abort", kind: "insufficient_credits" };
		if (status === 403) return { action: "abort", kind: "forbidden" };
		if (status >= 500 || status === 408) {
			const text = `${error.errorType} ${error.detail}`;
			if (NOT_RETRIED_MESSAGES.some((pattern) => pattern.test(text))) {
				return { action: "fail", kind: /dns|name/i.test(text) ? "dns_failed" : "navigation_error" };
			}
			// A scraping error names what went wrong at the target ("Page crashed"): a more useful kind than the status.
			if (/scraping/i.test(error.errorType) && error.detail && error.detail !== error.errorType) {
				return { action: "retry", kind: snake(error.detail) || `http_${status}` };
			}
			return { action: "retry", kind: status === 408 ? "timeout" : `http_${status}` };
		}
		if (status === 422) return { action: "fail", kind: "invalid_parameters" };
		return { action: "fail", kind: `http_${status}` };
	}
	if (error instanceof NetworkError) {
		// A name that does not resolve will not resolve on the next try either (spec 7.3).
		if (error.failure === "dns") return { action: "fail", kind: "dns_failed" };
		return { action: "retry", kind: `network_${error.failure}` };
	}
	if (error instanceof UnexpectedResponseError) return { action: "fail", kind: "unexpected_response" };
	if (error instanceof RequestAbortedError) return { action: "fail", kind: "aborted" };
	return { action: "fail", kind: error instanceof Error ? snake(error.name) || "error" : "error" };
}

/** A short, stable name for the error kind of a failure, for records and summaries. */
export function errorKind(error: unknown): string {
	return classifyFailure(error).kind;
}
