import type { Dispatcher } from "undici";
import {
	checkOptions,
	joinUrl,
	type OptionKinds,
	parseBaseUrl,
	redactSecrets,
	type ScrapeParams,
} from "../common/index.js";
import { toServiceError } from "./error-body.js";
import { namingRefusedKey, UnexpectedResponseError } from "./errors.js";
import { type TaskRecord, taskRecordSchema } from "./records.js";
import {
	contentOf,
	jsonObject,
	numberField,
	readScraperHeaders,
	type ScraperHeaders,
	taskStatusKind,
	textField,
} from "./scraper-response.js";
import {
	type BodySpill,
	createDispatcher,
	defaultDispatcher,
	type HttpResponse,
	type SpilledBody,
	send,
} from "./transport.js";

/** The service's public scraper base address (docs/service.md, "Addresses and keys"); already ends in the version segment. */
export const DEFAULT_SCRAPER_URL = "https://scrape.evomi.com/api/v1";

export interface ScraperClientOptions {
	/** Scraper key, sent as the `x-api-key` header (never in a query string). */
	readonly scraperKey: string;
	/** Base address ending in `/api/v1`. @default "https://scrape.evomi.com/api/v1" */
	readonly baseUrl?: string;
	readonly dispatcher?: Dispatcher;
	/**
	 * Sockets to the service at most (without `dispatcher`), on a pool of this client's own: a run passes
	 * its concurrency, so that each fetch in flight has its socket and no more are opened (see
	 * `createDispatcher`); two runs in one process do not share it. @default unlimited, shared
	 */
	readonly connections?: number;
	/**
	 * Limit for one realtime call, milliseconds. The service answers within 30–45 s or hands the fetch
	 * over to a task, so this only catches a hung connection. @default 120000
	 */
	readonly realtimeTimeoutMs?: number;
	/** Limit for task polls and health checks, milliseconds. @default 30000 */
	readonly timeoutMs?: number;
	/** Which of the user's keys this is, said in a refusal's (401) message: "the scraper key (SCRAPEJOB_SCRAPER_KEY)". */
	readonly keyName?: string;
}

/**
 * Each option of `createScraperClient` and the kind of value it takes: a misspelt `baseUrl` would send
 * the key, and paid fetches, to the public service instead of the address meant.
 */
const SCRAPER_CLIENT_OPTIONS = {
	scraperKey: "string",
	baseUrl: "string",
	dispatcher: "object",
	connections: "number",
	realtimeTimeoutMs: "number",
	timeoutMs: "number",
	keyName: "string",
} as const satisfies OptionKinds<ScraperClientOptions>;

/** A successful fetch: the page (raw delivery) or the JSON delivery object. */
export interface ContentOutcome {
	readonly kind: "content";
	readonly status: number;
	readonly headers: ScraperHeaders;
	/** The content as bytes: the page itself, or with `delivery: json` the JSON body as the service sent it, whole. */
	readonly body: Buffer;
	readonly contentType: string | undefined;
	/** The JSON delivery object, when `delivery: json` was asked for. */
	readonly json?: Record<string, unknown>;
	/** The target's status code when the service reported it (JSON delivery `status_code`). */
	readonly targetStatus?: number;
	/** The page left memory on its way in (`RealtimeCallOptions.spill`); `body` is then empty. */
	readonly spilled?: SpilledBody;
}

/** The fetch continues in the background as a task (202/408 on timeout, or `async: true`). */
export interface TaskOutcome {
	readonly kind: "task";
	readonly status: number;
	readonly headers: ScraperHeaders;
	readonly task: TaskRecord;
}

/** The target itself answered non-2xx and the service passed that answer through. */
export interface TargetErrorOutcome {
	readonly kind: "target_error";
	readonly targetStatus: number;
	readonly headers: ScraperHeaders;
	readonly body: Buffer;
}

export type RealtimeOutcome = ContentOutcome | TaskOutcome | TargetErrorOutcome;

export type TaskState =
	| { readonly state: "pending"; readonly status: string }
	| {
			readonly state: "completed";
			readonly body: Buffer;
			readonly headers: ScraperHeaders;
			readonly creditsUsed?: number;
			readonly creditsRemaining?: number;
			readonly modeUsed?: string;
			readonly targetStatus?: number;
			/** The finished task's JSON body, when it was JSON (kept whole for `delivery: json`). */
			readonly json?: Record<string, unknown>;
			/** That body's bytes as the service sent them. */
			readonly raw?: Buffer;
	  }
	| {
			readonly state: "failed";
			readonly errorType: string;
			readonly message: string;
			readonly creditsUsed?: number;
			/** The balance and mode the failed task's answer reported (body first, then its X- headers). */
			readonly creditsRemaining?: number;
			readonly modeUsed?: string;
			/** The target's own non-2xx status, when the task failed because of the target's answer. */
			readonly targetStatus?: number;
			readonly headers: ScraperHeaders;
	  }
	/** A status word this client does not know; the poller keeps polling until its deadline. */
	| { readonly state: "unknown"; readonly status: string }
	/** 404: the task is unknown or its result expired. */
	| { readonly state: "not_found" };

export interface RealtimeCallOptions {
	/** @default "POST" (parameters in a JSON body; GET puts them in the query string) */
	readonly method?: "GET" | "POST";
	readonly signal?: AbortSignal;
	/** The status line's code, before the body is read (see `SendOptions.onStatus`). */
	readonly onStatus?: (status: number) => void;
	/** Body cap (`max_body_mb`), bytes. @default 50 MiB */
	readonly maxBodyBytes?: number;
	/** A large page body goes to the caller's sink (or is only counted and hashed) instead of memory. */
	readonly spill?: BodySpill;
}

/** The scraper endpoints, typed: answers, tasks and refusals as values and errors the runner decides on. */
export interface ScraperClient {
	/** The scraper API's base address, as configured (never with a key: keys go in headers). */
	readonly baseUrl: string;
	/** One realtime fetch: the page, or the task it was handed over to. */
	realtime(params: ScrapeParams, options?: RealtimeCallOptions): Promise<RealtimeOutcome>;
	/** One poll of a task's state. */
	task(taskId: string, signal?: AbortSignal): Promise<TaskState>;
	/** The free health check: key and connection good, with the rate-limit headers. */
	health(signal?: AbortSignal): Promise<{ ok: true; headers: ScraperHeaders }>;
	/** `POST /scraper/map` or `/scraper/search` (docs/service.md, "Map, search and crawl"): the URLs found and what they cost. */
	discover(endpoint: DiscoveryEndpoint, body: Record<string, unknown>, signal?: AbortSignal): Promise<DiscoveryAnswer>;
}

export type DiscoveryEndpoint = "map" | "search";

export interface DiscoveryAnswer {
	/** The results' URLs, in the service's order (entries without an http(s) `url` left out). */
	readonly urls: string[];
	/** `credits_used` of the body; null when missing or not a number. */
	readonly creditsUsed: number | null;
}

const NO_CALL_OPTIONS: RealtimeCallOptions = {};
const REALTIME_POST = "POST /scraper/realtime";
const REALTIME_GET = "GET /scraper/realtime";

function toQuery(params: ScrapeParams): string {
	const query = new URLSearchParams();
	for (const [key, value] of Object.entries(params)) {
		if (value === undefined || value === null) continue;
		query.set(key, typeof value === "object" ? JSON.stringify(value) : String(value));
	}
	return query.toString();
}

function isErrorRecord(body: Record<string, unknown> | undefined): boolean {
	return body !== undefined && (body.success === false || body.error !== undefined);
}

function contentBytes(value: unknown): Buffer {
	if (value === undefined || value === null) return Buffer.alloc(0);
	if (typeof value === "string") return Buffer.from(value, "utf8");
	return Buffer.from(JSON.stringify(value), "utf8");
}

/**
 * A typed client of the scraper endpoints (docs/service.md, "Fetching a page"). It never retries: the
 * runner owns retrying. Throws `UsageError` for an option it does not have (a misspelt name).
 */
export function createScraperClient(options: ScraperClientOptions): ScraperClient {
	checkOptions("createScraperClient", options, SCRAPER_CLIENT_OPTIONS);
	const base = parseBaseUrl(options.baseUrl ?? DEFAULT_SCRAPER_URL, "scraper API address");
	const dispatcher =
		options.dispatcher ??
		(options.connections !== undefined ? createDispatcher({ connections: options.connections }) : defaultDispatcher());
	const realtimeTimeoutMs = options.realtimeTimeoutMs ?? 120_000;
	const timeoutMs = options.timeoutMs ?? 30_000;
	const secrets = [options.scraperKey];
	const { keyName } = options;
	const serviceError = (...args: Parameters<typeof toServiceError>) => {
		const error = toServiceError(...args);
		return keyName === undefined ? error : namingRefusedKey(error, keyName);
	};
	const realtimeUrl = joinUrl(base, "/scraper/realtime");
	const postHeaders = { "x-api-key": options.scraperKey, "content-type": "application/json" };
	const getHeaders = { "x-api-key": options.scraperKey };

	function readTaskRecord(
		status: number,
		headers: ScraperHeaders,
		body: Record<string, unknown>,
		endpoint: string,
	): TaskOutcome {
		const parsed = taskRecordSchema.safeParse(body);
		if (!parsed.success) throw new UnexpectedResponseError(endpoint, status, "task record without a task_id");
		return { kind: "task", status, headers, task: parsed.data };
	}

	function interpretRealtime(response: HttpResponse, endpoint: string, params: ScrapeParams): RealtimeOutcome {
		const { status } = response;
		const headers = readScraperHeaders(response.headers);
		if (status === 202 || status === 408) {
			const body = jsonObject(response);
			if (body && typeof body.task_id === "string") return readTaskRecord(status, headers, body, endpoint);
			if (status === 202) throw new UnexpectedResponseError(endpoint, status, "202 without a task_id");
			throw serviceError(status, response.body, endpoint, secrets, headers);
		}
		if (status >= 200 && status < 300) {
			// Only JSON answers can be task records or wrapped deliveries; an HTML page is never parsed.
			const body = jsonObject(response);
			if (body) {
				if (typeof body.task_id === "string" && taskStatusKind(body.status) !== "done") {
					return readTaskRecord(status, headers, body, endpoint);
				}
				if (body.success === false) throw serviceError(status, response.body, endpoint, secrets, headers);
				if (params.delivery === "json") {
					const targetStatus = numberField(body, "status_code");
					return {
						kind: "content",
						status,
						// The same body-then-header reading as a finished task's.
						headers: { ...headers, ...creditFields(headers, body) },
						// What the user paid for is the whole object (title, status_code, content, ai_data, …).
						body: response.body,
						contentType: "application/json",
						json: body,
						...(targetStatus !== undefined ? { targetStatus } : {}),
					};
				}
			}
			const contentType = response.headers["content-type"];
			return {
				kind: "content",
				status,
				headers,
				body: response.body,
				contentType: Array.isArray(contentType) ? contentType[0] : contentType,
				spilled: response.spilled,
			};
		}
		// A redirect from the service itself (not a target's, which would carry X-Target-Status) is no answer
		// the interface promises: never recorded as the target's own 302.
		if (status >= 300 && status < 400 && headers.targetStatus === undefined) {
			throw new UnexpectedResponseError(endpoint, status, "a redirect from the service itself");
		}
		// Non-2xx: the service marks a target's own answer with X-Target-Status; an error record is the
		// service's error. A bare 5xx/429/401 is also the service's (e.g. a gateway page in front of it).
		if (headers.targetStatus === undefined) {
			const body = jsonObject(response);
			if (isErrorRecord(body) || status === 401 || status === 402 || status === 429 || status >= 500) {
				throw serviceError(status, response.body, endpoint, secrets, headers);
			}
		}
		return { kind: "target_error", targetStatus: headers.targetStatus ?? status, headers, body: response.body };
	}

	return {
		async realtime(params, callOptions = NO_CALL_OPTIONS) {
			const post = (callOptions.method ?? "POST") === "POST";
			const endpoint = post ? REALTIME_POST : REALTIME_GET;
			// One literal with every member (absent ones undefined): no spreads, no object per option, per fetch.
			const response = await send(dispatcher, {
				method: post ? "POST" : "GET",
				url: post ? realtimeUrl : `${realtimeUrl}?${toQuery(params)}`,
				headers: post ? postHeaders : getHeaders,
				body: post ? JSON.stringify(params) : undefined,
				timeoutMs: realtimeTimeoutMs,
				endpoint,
				signal: callOptions.signal,
				onStatus: callOptions.onStatus,
				maxBodyBytes: callOptions.maxBodyBytes || undefined,
				spill: callOptions.spill,
			});
			return interpretRealtime(response, endpoint, params);
		},

		async task(taskId, signal) {
			const endpoint = "GET /scraper/tasks/:id";
			const response = await send(dispatcher, {
				method: "GET",
				url: joinUrl(base, `/scraper/tasks/${encodeURIComponent(taskId)}`),
				headers: getHeaders,
				timeoutMs,
				endpoint,
				...(signal ? { signal } : {}),
			});
			const headers = readScraperHeaders(response.headers);
			if (response.status === 404) return { state: "not_found" };
			const body = jsonObject(response);
			if (response.status < 200 || response.status >= 300) {
				// A failed task may come back as an error status with a task body; it is still the task's outcome.
				if (body && typeof body.task_id === "string" && taskStatusKind(body.status) === "failed") {
					return failedTask(body, headers, secrets);
				}
				throw serviceError(response.status, response.body, endpoint, secrets);
			}
			if (!body) {
				// A non-JSON 200 is the content itself (docs/service.md, "Where the documentation is silent").
				return { state: "completed", body: response.body, headers, ...creditFields(headers, undefined) };
			}
			const kind = taskStatusKind(body.status);
			if (kind === "failed" || (body.success === false && kind !== "pending"))
				return failedTask(body, headers, secrets);
			if (kind === "pending") return { state: "pending", status: String(body.status) };
			if (kind === "unknown" && contentOf(body) === undefined) {
				return { state: "unknown", status: redactSecrets(String(body.status ?? "(none)"), secrets) };
			}
			const targetStatus = numberField(body, "status_code");
			return {
				state: "completed",
				body: contentBytes(contentOf(body)),
				headers,
				...creditFields(headers, body),
				...(targetStatus !== undefined ? { targetStatus } : {}),
				json: body,
				raw: response.body,
			};
		},

		async discover(name, body, signal) {
			const endpoint = `POST /scraper/${name}`;
			const response = await send(dispatcher, {
				method: "POST",
				url: joinUrl(base, `/scraper/${name}`),
				headers: postHeaders,
				body: JSON.stringify(body),
				timeoutMs: realtimeTimeoutMs,
				endpoint,
				...(signal ? { signal } : {}),
			});
			const answer = jsonObject(response);
			if (response.status !== 200 || !answer || answer.success === false) {
				throw serviceError(response.status === 200 ? 502 : response.status, response.body, endpoint, secrets);
			}
			const results = Array.isArray(answer.results) ? answer.results : [];
			const urls: string[] = [];
			for (const item of results) {
				const url = item !== null && typeof item === "object" ? (item as Record<string, unknown>).url : undefined;
				if (typeof url === "string" && /^https?:\/\//i.test(url)) urls.push(url);
			}
			const credits = numberField(answer, "credits_used");
			return { urls, creditsUsed: credits !== undefined && credits >= 0 ? credits : null };
		},

		baseUrl: base.href,

		async health(signal) {
			const endpoint = "GET /scraper/health";
			const response = await send(dispatcher, {
				method: "GET",
				url: joinUrl(base, "/scraper/health"),
				headers: getHeaders,
				timeoutMs,
				endpoint,
				...(signal ? { signal } : {}),
			});
			if (response.status !== 200) throw serviceError(response.status, response.body, endpoint, secrets);
			// The service answers `{"success": true}`; a 200 with anything else is some other server at that address.
			if (jsonObject(response)?.success !== true) {
				throw new UnexpectedResponseError(endpoint, 200, 'not the service\'s {"success": true}');
			}
			return { ok: true, headers: readScraperHeaders(response.headers) };
		},
	};
}

function creditFields(headers: ScraperHeaders, body: Record<string, unknown> | undefined) {
	const creditsUsed = (body && numberField(body, "credits_used")) ?? headers.creditsUsed;
	const creditsRemaining = (body && numberField(body, "credits_remaining")) ?? headers.creditsRemaining;
	const modeUsed = (body && textField(body, "mode_used")) ?? headers.modeUsed;
	return {
		...(creditsUsed !== undefined ? { creditsUsed } : {}),
		...(creditsRemaining !== undefined ? { creditsRemaining } : {}),
		...(modeUsed !== undefined ? { modeUsed } : {}),
	};
}

function failedTask(
	body: Record<string, unknown>,
	headers: ScraperHeaders,
	secrets: readonly string[],
): Extract<TaskState, { state: "failed" }> {
	const errorType = redactSecrets(textField(body, "error") ?? "Task failed", secrets);
	const message = redactSecrets(textField(body, "message") ?? errorType, secrets);
	const creditsUsed = numberField(body, "credits_used");
	const { creditsRemaining, modeUsed } = creditFields(headers, body);
	const targetStatus = headers.targetStatus ?? numberField(body, "status_code");
	return {
		state: "failed",
		errorType,
		message,
		headers,
		...(creditsUsed !== undefined ? { creditsUsed } : {}),
		...(creditsRemaining !== undefined ? { creditsRemaining } : {}),
		...(modeUsed !== undefined ? { modeUsed } : {}),
		...(targetStatus !== undefined && (targetStatus < 200 || targetStatus >= 300) ? { targetStatus } : {}),
	};
}
