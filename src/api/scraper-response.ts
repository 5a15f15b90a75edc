import { parseJson } from "./error-body.js";
import { type HttpResponse, headerValue, numberHeader } from "./transport.js";

/** The X- headers every scraper response carries (docs/service.md, "Answers and headers"), typed. */
export interface ScraperHeaders {
	readonly creditsUsed?: number;
	readonly creditsRemaining?: number;
	/** As the service reports it, e.g. "request", "browser", "auto (browser)". */
	readonly modeUsed?: string;
	readonly rateLimitLimit?: number;
	readonly rateLimitRemaining?: number;
	/** The target's own status when the service passed a non-2xx target answer through. */
	readonly targetStatus?: number;
	/**
	 * `X-Final-Url`: where the target's redirects ended, when the service names it (the emulator does;
	 * the public service documents no such header). Only an absolute http(s) address is taken.
	 */
	readonly finalUrl?: string;
}

/** Longer than any address a browser keeps: a longer header is nonsense, not an address. */
const MAX_FINAL_URL_LENGTH = 8192;

export function readScraperHeaders(headers: HttpResponse["headers"]): ScraperHeaders {
	const result: { -readonly [K in keyof ScraperHeaders]: ScraperHeaders[K] } = {};
	const creditsUsed = numberHeader(headers, "x-credits-used");
	if (creditsUsed !== undefined) result.creditsUsed = creditsUsed;
	const creditsRemaining = numberHeader(headers, "x-credits-remaining");
	if (creditsRemaining !== undefined) result.creditsRemaining = creditsRemaining;
	const modeUsed = headerValue(headers, "x-mode-used");
	if (modeUsed !== undefined && modeUsed !== "") result.modeUsed = modeUsed;
	const limit = numberHeader(headers, "x-ratelimit-limit");
	if (limit !== undefined) result.rateLimitLimit = limit;
	const remaining = numberHeader(headers, "x-ratelimit-remaining");
	if (remaining !== undefined) result.rateLimitRemaining = remaining;
	const targetStatus = numberHeader(headers, "x-target-status");
	if (targetStatus !== undefined) result.targetStatus = targetStatus;
	const finalUrl = headerValue(headers, "x-final-url");
	if (finalUrl !== undefined && finalUrl.length <= MAX_FINAL_URL_LENGTH && /^https?:\/\/[^\s]+$/i.test(finalUrl)) {
		result.finalUrl = finalUrl;
	}
	return result;
}

export function isJsonResponse(response: HttpResponse): boolean {
	const type = headerValue(response.headers, "content-type") ?? "";
	if (type.includes("json")) return true;
	// Some error answers come without a content type; a leading brace is a cheap, safe tell.
	return type === "" && response.body[0] === 0x7b;
}

export function jsonObject(response: HttpResponse): Record<string, unknown> | undefined {
	if (!isJsonResponse(response)) return undefined;
	const parsed = parseJson(response.body);
	return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
		? (parsed as Record<string, unknown>)
		: undefined;
}

/** Task status words, read tolerantly (docs/service.md, "Where the documentation is silent"): anything else keeps polling until the deadline. */
export const PENDING_TASK_STATUSES = ["processing", "pending", "queued", "running", "started"] as const;
export const DONE_TASK_STATUSES = ["completed", "done", "success", "succeeded", "finished"] as const;
export const FAILED_TASK_STATUSES = ["failed", "error", "cancelled", "canceled"] as const;

export function taskStatusKind(status: unknown): "pending" | "done" | "failed" | "unknown" {
	if (typeof status !== "string") return "unknown";
	const value = status.toLowerCase();
	if ((PENDING_TASK_STATUSES as readonly string[]).includes(value)) return "pending";
	if ((DONE_TASK_STATUSES as readonly string[]).includes(value)) return "done";
	if ((FAILED_TASK_STATUSES as readonly string[]).includes(value)) return "failed";
	return "unknown";
}

/** Content of a finished JSON body: `content`, or `result.content`, or `data.content` (docs/service.md, "Where the documentation is silent"). */
export function contentOf(body: Record<string, unknown>): unknown {
	if (body.content !== undefined) return body.content;
	for (const key of ["result", "data"]) {
		const inner = body[key];
		if (inner && typeof inner === "object" && "content" in inner) return (inner as { content: unknown }).content;
	}
	return undefined;
}

export function numberField(body: Record<string, unknown>, key: string): number | undefined {
	const value = body[key];
	if (typeof value === "number" && Number.isFinite(value)) return value;
	if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return Number(value);
	return undefined;
}

export function textField(body: Record<string, unknown>, key: string): string | undefined {
	const value = body[key];
	if (typeof value === "string") return value;
	if (value && typeof value === "object") {
		const message = (value as { message?: unknown }).message;
		if (typeof message === "string") return message;
	}
	return undefined;
}
