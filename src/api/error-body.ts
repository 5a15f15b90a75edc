import { redactSecrets } from "../common/index.js";
import { ServiceError, type ServiceErrorFields } from "./errors.js";

/** What a scraper answer's X- headers said of the fetch it failed (scraper-response.ts reads them). */
export interface AnswerHeaders {
	readonly creditsUsed?: number;
	readonly creditsRemaining?: number;
	readonly modeUsed?: string;
}

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function asText(value: unknown): string | undefined {
	if (typeof value === "string") return value;
	if (isObject(value)) return asText(value.message) ?? asText(value.code);
	return undefined;
}

function asNumber(value: unknown): number | undefined {
	if (typeof value === "number" && Number.isFinite(value)) return value;
	if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return Number(value);
	return undefined;
}

function validationErrors(body: JsonObject): string[] | undefined {
	const nested = isObject(body.error) ? body.error.details : undefined;
	const details = isObject(body.details) ? body.details : isObject(nested) ? nested : undefined;
	const list = details?.validation_errors;
	if (!Array.isArray(list)) return undefined;
	return list.map((entry) => (typeof entry === "string" ? entry : JSON.stringify(entry)));
}

export function parseJson(body: Buffer): unknown {
	if (body.length === 0) return undefined;
	try {
		return JSON.parse(body.toString("utf8"));
	} catch {
		return undefined;
	}
}

/**
 * Turn an error answer into a `ServiceError`. The docs show a flat record (docs/service.md, "Errors"), the service's
 * own client tests a nested `{error:{code,message,details}}` one (docs/service.md, "Errors"); both are read.
 * Anything the service echoes back is scrubbed of the keys before it can reach a message or log.
 */
export function toServiceError(
	status: number,
	body: Buffer,
	endpoint: string,
	secrets: ReadonlyArray<string | null | undefined>,
	headers: AnswerHeaders = {},
): ServiceError {
	const headerCredits = headers.creditsUsed;
	// A failed fetch's record says the balance and mode its answer reported, as an ok record does.
	const answered = {
		...(headers.creditsRemaining !== undefined ? { creditsRemaining: headers.creditsRemaining } : {}),
		...(headers.modeUsed !== undefined ? { modeUsed: headers.modeUsed } : {}),
	};
	const parsed = parseJson(body);
	const clean = (text: string) => redactSecrets(text, secrets);
	if (!isObject(parsed)) {
		// Redacted before it is cut: a key cut in half by the 200-character limit would no longer match.
		const snippet = clean(body.toString("utf8").replace(/\s+/g, " ").trim()).slice(0, 200);
		return new ServiceError({
			status,
			errorType: `HTTP ${status}`,
			detail: snippet,
			endpoint,
			...answered,
			...(headerCredits !== undefined ? { creditsUsed: headerCredits } : {}),
		});
	}
	const errorType = asText(parsed.error) ?? asText(parsed.message) ?? `HTTP ${status}`;
	const nestedMessage = isObject(parsed.error) ? asText(parsed.error.message) : undefined;
	const detail = asText(parsed.message) ?? nestedMessage ?? asText(parsed.detail) ?? errorType;
	const fields: {
		-readonly [K in keyof ServiceErrorFields]: ServiceErrorFields[K];
	} = { status, errorType: clean(errorType), detail: clean(detail), endpoint, ...answered };
	const creditsRemaining = asNumber(parsed.credits_remaining);
	if (creditsRemaining !== undefined) fields.creditsRemaining = creditsRemaining;
	if (typeof parsed.mode_used === "string" && parsed.mode_used !== "") fields.modeUsed = parsed.mode_used;
	const limit = asNumber(parsed.limit);
	if (limit !== undefined) fields.limit = limit;
	const reset = asNumber(parsed.reset);
	if (reset !== undefined) fields.resetSeconds = reset;
	if (typeof parsed.url === "string") fields.url = clean(parsed.url);
	// An error answer may still cost credits: its body says so, or its X-Credits-Used header.
	const creditsUsed = asNumber(parsed.credits_used) ?? headerCredits;
	if (creditsUsed !== undefined) fields.creditsUsed = creditsUsed;
	const problems = validationErrors(parsed);
	if (problems) fields.validationErrors = problems.map(clean);
	return new ServiceError(fields);
}
