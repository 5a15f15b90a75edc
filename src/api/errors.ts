import { errorMessage, ScrapejobError } from "../common/index.js";

/** Fields of the service's error record (docs/service.md, "Errors") that a caller may act on. */
export interface ServiceErrorFields {
	/** HTTP status the service answered with. */
	readonly status: number;
	/** Short error type (`error`), e.g. "Invalid API key", "Concurrency limit exceeded (5/5)". */
	readonly errorType: string;
	/** Human-readable detail (`message`); may repeat `errorType` when the body had none. */
	readonly detail: string;
	/** Present on 402, and on a scraper answer that says it (body `credits_remaining` or `X-Credits-Remaining`). */
	readonly creditsRemaining?: number;
	/** The mode the scraper answer says the failed fetch used (body `mode_used` or `X-Mode-Used`). */
	readonly modeUsed?: string;
	/** Present on 429: the concurrency limit. */
	readonly limit?: number;
	/** Present on 429: seconds to wait before sending again. */
	readonly resetSeconds?: number;
	/** Present on 500 scraping errors: the target URL. */
	readonly url?: string;
	/** Present on 500 scraping errors. */
	readonly creditsUsed?: number;
	/** Present on 422: one `<parameter>: <problem>` entry per problem. */
	readonly validationErrors?: readonly string[];
	/** Which endpoint answered, e.g. "GET /public/scraper" (never with a key in it). */
	readonly endpoint: string;
}

/**
 * The service answered with an error status and (usually) an error record. Kept apart from network
 * failures and from shape errors because each is handled differently by the runner.
 */
export class ServiceError extends ScrapejobError implements ServiceErrorFields {
	readonly status: number;
	readonly errorType: string;
	readonly detail: string;
	readonly creditsRemaining?: number;
	readonly modeUsed?: string;
	readonly limit?: number;
	readonly resetSeconds?: number;
	readonly url?: string;
	readonly creditsUsed?: number;
	readonly validationErrors?: readonly string[];
	readonly endpoint: string;

	constructor(fields: ServiceErrorFields) {
		const details = fields.validationErrors?.length ? ` (${fields.validationErrors.join("; ")})` : "";
		// A body with no error type of its own is typed "HTTP <status>": say the status once.
		const status = fields.errorType === `HTTP ${fields.status}` ? "" : `${fields.status} `;
		super(
			"SCRAPEJOB_SERVICE_ERROR",
			`${fields.endpoint} answered ${status}${typeAndDetail(fields.errorType, fields.detail)}${details}`,
		);
		this.status = fields.status;
		this.errorType = fields.errorType;
		this.detail = fields.detail;
		this.endpoint = fields.endpoint;
		if (fields.creditsRemaining !== undefined) this.creditsRemaining = fields.creditsRemaining;
		if (fields.modeUsed !== undefined) this.modeUsed = fields.modeUsed;
		if (fields.limit !== undefined) this.limit = fields.limit;
		if (fields.resetSeconds !== undefined) this.resetSeconds = fields.resetSeconds;
		if (fields.url !== undefined) this.url = fields.url;
		if (fields.creditsUsed !== undefined) this.creditsUsed = fields.creditsUsed;
		if (fields.validationErrors !== undefined) this.validationErrors = fields.validationErrors;
	}
}

/**
 * A 401 names the key that was refused and where it came from (`SCRAPEJOB_ACCOUNT_KEY`, …): the service's
 * own words ("Invalid API key") do not say which of the product's keys it was.
 */
export function namingRefusedKey(error: unknown, key: string): unknown {
	if (!(error instanceof ServiceError) || error.status !== 401) return error;
	const fields: ServiceErrorFields = { ...error, detail: `${error.detail}; the key refused is ${key}` };
	return new ServiceError(fields);
}

export const NETWORK_FAILURES = ["dns", "refused", "reset", "timeout", "tls", "other"] as const;
export type NetworkFailure = (typeof NETWORK_FAILURES)[number];

/** The request never got an HTTP answer: the connection failed, was dropped, or timed out. */
export class NetworkError extends ScrapejobError {
	readonly failure: NetworkFailure;
	readonly endpoint: string;
	/**
	 * The service's status line and headers had arrived when the connection failed: the service answered
	 * (it is not down), and the fetch was made — `creditsUsed` is what its `X-Credits-Used` said it cost.
	 */
	readonly answeredStatus: number | null;
	readonly creditsUsed?: number;
	/** The balance and mode those headers reported (`X-Credits-Remaining`, `X-Mode-Used`), for the failed record. */
	readonly creditsRemaining?: number;
	readonly modeUsed?: string;

	constructor(
		failure: NetworkFailure,
		endpoint: string,
		message: string,
		options?: {
			cause?: unknown;
			host?: string;
			answeredStatus?: number;
			creditsUsed?: number | undefined;
			creditsRemaining?: number | undefined;
			modeUsed?: string | undefined;
		},
	) {
		super(
			"SCRAPEJOB_NETWORK",
			`${endpoint}${options?.host ? ` at ${options.host}` : ""} failed: ${message}${options?.answeredStatus ? ` (after the service answered ${options.answeredStatus})` : ""}`,
			options,
		);
		this.failure = failure;
		this.endpoint = endpoint;
		this.answeredStatus = options?.answeredStatus ?? null;
		if (options?.creditsUsed !== undefined) this.creditsUsed = options.creditsUsed;
		if (options?.creditsRemaining !== undefined) this.creditsRemaining = options.creditsRemaining;
		if (options?.modeUsed !== undefined) this.modeUsed = options.modeUsed;
	}
}

/**
 * The service answered 2xx with something that is not what the interface promises. Never retried:
 * asking again would not change the answer, and a client that guesses would charge for nothing.
 */
export class UnexpectedResponseError extends ScrapejobError {
	readonly endpoint: string;
	readonly status: number;

	constructor(endpoint: string, status: number, problem: string, options?: { cause?: unknown }) {
		super(
			"SCRAPEJOB_UNEXPECTED_RESPONSE",
			`${endpoint} answered ${status} with an unexpected body: ${problem}`,
			options,
		);
		this.endpoint = endpoint;
		this.status = status;
	}
}

/**
 * The scraper address answers, but not as the service (a 404 for its health check, a redirect, some other
 * server's 200): every fetch would fail the same way, so the run ends before it starts (exit 3).
 */
export class ScraperNotFoundError extends ScrapejobError {
	readonly baseUrl: string;
	constructor(baseUrl: string, cause: unknown) {
		super(
			"SCRAPEJOB_NOT_THE_SERVICE",
			`the scraper service is not at ${baseUrl}: ${errorMessage(cause)}. Check the scraper address (--scraper-url, or SCRAPEJOB_SCRAPER_URL in the environment or the config file): the scraper API's address ends in /api/v1`,
			{ cause },
		);
		this.baseUrl = baseUrl;
	}
}

/**
 * The account API address answers, but not as the service (a 404 for GET /public/scraper, some other
 * server's 200 page): like a scraper address that is not the service, the run ends before it starts (exit 3).
 * Thrown by `runJobFile` (a wrong `SCRAPEJOB_API_URL`); code `SCRAPEJOB_NOT_THE_SERVICE`.
 */
export class AccountApiNotFoundError extends ScrapejobError {
	readonly baseUrl: string;
	constructor(baseUrl: string, cause: unknown) {
		super(
			"SCRAPEJOB_NOT_THE_SERVICE",
			`the account API is not at ${baseUrl}: ${errorMessage(cause)}. Check the account API's address (--api-url, or SCRAPEJOB_API_URL in the environment or the config file)`,
			{ cause },
		);
		this.baseUrl = baseUrl;
	}
}

/**
 * An answer that says the address is some other server: a 2xx that is not the service's shape, or a
 * 4xx that is neither a refused key (401/402/403) nor a busy one (408/429).
 */
export function isNotTheService(error: unknown): boolean {
	if (error instanceof UnexpectedResponseError) return true;
	return error instanceof ServiceError && error.status < 500 && ![401, 402, 403, 408, 429].includes(error.status);
}

/**
 * The caller's AbortSignal fired before the answer came. Thrown by the clients' calls (`createScraperClient`,
 * `createAccountClient`) given a `signal`; `runJobFile` turns one before its first fetch into
 * `SourceScanStoppedError`. Code `SCRAPEJOB_ABORTED`.
 */
export class RequestAbortedError extends ScrapejobError {
	constructor(endpoint: string, options?: { cause?: unknown }) {
		super("SCRAPEJOB_ABORTED", `${endpoint} was aborted`, options);
	}
}

/**
 * "Insufficient credits: required 2, available 0" — the service's `message` often starts with its
 * `error` already (e.g. 402), so the type is said once, not "Insufficient credits: Insufficient credits: …".
 */
export function typeAndDetail(errorType: string, detail: string): string {
	if (!detail || detail === errorType) return errorType;
	if (detail.toLowerCase().startsWith(errorType.toLowerCase())) return detail;
	return `${errorType}: ${detail}`;
}

/**
 * The caller's body sink (`SendOptions.spill`) failed to open, take a chunk or end: the disk is full,
 * the folder read-only. Not the network's doing and never retried; `cause` is the sink's own error
 * (the page store's `OutputError`), and the runner stops as for any output failure. Thrown by the scraper
 * client's `realtime` given a `spill`; code `SCRAPEJOB_OUTPUT`.
 */
export class BodySinkError extends ScrapejobError {
	/** Which endpoint's answer it was. */
	readonly endpoint: string;
	/** `X-Credits-Used` of the answer whose body it was, when it said: the answer was paid all the same. */
	creditsUsed?: number;
	constructor(endpoint: string, cause: unknown) {
		super("SCRAPEJOB_OUTPUT", `${endpoint}: the body could not be stored: ${errorMessage(cause)}`, { cause });
		this.endpoint = endpoint;
	}
}

/**
 * The answer's body was larger than the caller's cap (`max_body_mb`): reading stopped there, so memory
 * stays bounded whatever the service sends. The fetch was made (and may have been charged): the
 * target fails with `body_too_large`, not retried. Thrown by the scraper client's `realtime` given
 * `maxBodyBytes`; code `SCRAPEJOB_BODY_TOO_LARGE`.
 */
export class BodyTooLargeError extends ScrapejobError {
	/** Which endpoint's answer it was. */
	readonly endpoint: string;
	/** The cap, bytes. */
	readonly maxBytes: number;
	/** `X-Credits-Used` of the answer, when it said. */
	readonly creditsUsed?: number;
	constructor(endpoint: string, maxBytes: number, creditsUsed?: number) {
		super(
			"SCRAPEJOB_BODY_TOO_LARGE",
			`${endpoint} answered with a body over ${Math.round(maxBytes / 1024 / 1024)} MB (max_body_mb); reading stopped there`,
		);
		this.endpoint = endpoint;
		this.maxBytes = maxBytes;
		if (creditsUsed !== undefined) this.creditsUsed = creditsUsed;
	}
}
