import { type BodySinkError, NetworkError, type ScraperHeaders, type SpilledBody } from "../../api/index.js";
import type { ScrapeParams } from "../../common/index.js";
import { OutputError } from "../../output/index.js";

/** What one target's fetch came to. Only `ok` and `failed` become records. */
export type FetchResult =
	| {
			readonly kind: "ok";
			readonly body: Buffer;
			readonly contentType: string | undefined;
			readonly httpStatus: number;
			/** As the service reported it; null when it did not, or reported nonsense (the budget then books the worst case). */
			readonly creditsUsed: number | null;
			readonly creditsRemaining: number | null;
			readonly modeUsed: string | null;
			readonly attempts: number;
			readonly taskId: string | null;
			/** The page title the service reported (`delivery: json`). */
			readonly title?: string;
			/** The JSON delivery object (`delivery: json`): service-side extraction and AI output are read from it. */
			readonly json?: Record<string, unknown>;
			/** Where the target's redirects ended, when the service named it (`X-Final-Url`). */
			readonly finalUrl?: string;
			/** The page went to the page store's file (or was only counted and hashed) on its way in; `body` is empty. */
			readonly spilled?: SpilledBody;
			/** Of `creditsUsed`, what earlier failed attempts were charged (journalled as they came). */
			readonly chargedBefore?: number;
	  }
	| {
			readonly kind: "failed";
			readonly error: string;
			readonly message: string;
			readonly httpStatus: number | null;
			readonly creditsUsed: number | null;
			readonly creditsRemaining: number | null;
			readonly modeUsed: string | null;
			readonly attempts: number;
			readonly taskId: string | null;
			/** Of `creditsUsed`, what earlier failed attempts were charged (journalled as they came). */
			readonly chargedBefore?: number;
	  }
	/** The account cannot go on (401/402/403): no record, the run stops, the target is left for `--resume`. */
	| {
			readonly kind: "aborted";
			readonly reason: "unauthorized" | "insufficient_credits" | "forbidden";
			readonly message: string;
			/** Credits earlier attempts of this target were charged (booked though no record is written). */
			readonly charged: number;
	  }
	/** The run stopped (signal, outage, abort) before this target finished: no record, left for `--resume`. */
	| {
			readonly kind: "abandoned";
			readonly taskId: string | null;
			readonly attempts: number;
			/** Credits earlier attempts of this target were charged (booked though no record is written). */
			readonly charged: number;
			/** A fleet worker's lease on the target lapsed before a send: nothing was in flight, another worker has it. */
			readonly leaseLapsed?: true;
			/** Left between two attempts (a backoff, an outage, a 429's reset): nothing of it was out at the service. */
			readonly betweenAttempts?: true;
	  }
	/** The page could not be written to its file (disk full, read-only): the run stops as for any output failure. */
	| {
			readonly kind: "output_failed";
			readonly path: string;
			readonly cause: unknown;
			/** Credits earlier attempts of this target were charged (journalled as they came). */
			readonly charged: number;
			/** What the answer whose body could not be stored cost, as the service reported it; null: it did not say. */
			readonly answer: number | null;
	  };

/**
 * The most one fetch can plausibly cost: the dearest mode with every option is a few dozen credits. A
 * larger figure (`X-Credits-Used: 1e308`) is garbage, and would turn the run's sums into Infinity.
 */
export const MAX_CREDITS_PER_FETCH = 1000;

/** A credit figure as the budget may trust it: a plausible non-negative number, else null (unknown: the worst case). */
export function trustedCredits(value: number | undefined): number | null {
	return value !== undefined && value >= 0 && value <= MAX_CREDITS_PER_FETCH ? value : null;
}

/** A target's failure as its record says it: the kind, the words, what the service reported of the attempt. */
export function failedResult(
	failure: { readonly error: string; readonly message: string; readonly httpStatus: number | null },
	headers: ScraperHeaders,
	attempts: number,
	taskId: string | null,
	reported?: number,
	sentMode?: string,
): FetchResult {
	return {
		kind: "failed",
		...failure,
		// A scraping error's body (or a cut-off answer's header) may say what the failed fetch cost.
		// A body cut off at max_body_mb was paid for whatever it cost: unknown, the caller books the worst case.
		creditsUsed:
			trustedCredits(reported) ??
			trustedCredits(headers.creditsUsed) ??
			(failure.error === "body_too_large" ? null : 0),
		creditsRemaining: headers.creditsRemaining ?? null,
		// As an ok record: the service's word; else the mode the request named, when it named one.
		modeUsed: headers.modeUsed ?? sentMode ?? null,
		attempts: Math.max(attempts, 1),
		taskId,
	};
}

/** A body the sink could not store: the page store's `OutputError` names the file and the disk's error. */
export function outputFailed(error: BodySinkError, charged: number): FetchResult {
	const { cause } = error;
	const answer = trustedCredits(error.creditsUsed);
	return cause instanceof OutputError
		? { kind: "output_failed", path: cause.path, cause: cause.cause, charged, answer }
		: { kind: "output_failed", path: `the body of ${error.endpoint}`, cause, charged, answer };
}

/** A realtime call this client gave up on at its deadline, before the service's status line came. */
export function outlivedDeadline(error: unknown): boolean {
	return error instanceof NetworkError && error.failure === "timeout" && error.answeredStatus === null;
}

/** The service gave no answer at all (no status line): nothing says the target was the trouble. */
export function isNoAnswer(error: unknown): boolean {
	return error instanceof NetworkError && error.answeredStatus === null;
}

export function creditsOf(error: unknown): number | undefined {
	const credits = (error as { creditsUsed?: unknown } | null)?.creditsUsed;
	return typeof credits === "number" ? credits : undefined;
}

/** The balance and mode a failed answer reported (a `ServiceError`, a failed task's error), as headers. */
export function answerOf(error: unknown): ScraperHeaders {
	const { creditsRemaining, modeUsed } = (error ?? {}) as { creditsRemaining?: unknown; modeUsed?: unknown };
	return {
		...(typeof creditsRemaining === "number" ? { creditsRemaining } : {}),
		...(typeof modeUsed === "string" ? { modeUsed } : {}),
	};
}

/** The mode a request named (`request`, `browser`); undefined for `auto`, where only the service knows. */
export function namedMode(params: ScrapeParams): string | undefined {
	return params.mode === "request" || params.mode === "browser" ? params.mode : undefined;
}

export function statusOf(error: unknown): number | null {
	const status = (error as { status?: unknown } | null)?.status;
	return typeof status === "number" ? status : null;
}

/** `title` of a JSON delivery body, when it holds one. */
export function titleOf(json: Record<string, unknown> | undefined): string | undefined {
	const title = json?.title;
	return typeof title === "string" ? title : undefined;
}
