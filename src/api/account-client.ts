import type { Dispatcher } from "undici";
import type { z } from "zod";
import { checkOptions, joinUrl, type OptionKinds, parseBaseUrl } from "../common/index.js";
import { parseJson, toServiceError } from "./error-body.js";
import { UnexpectedResponseError } from "./errors.js";
import { type GenerateProxiesParams, generateQuery, type ParsedProxy, parseProxyLine } from "./proxy-lines.js";
import {
	type BrowserAccess,
	browserAccessSchema,
	describeIssues,
	type ProxyData,
	proxyDataSchema,
	type RotateSessionResult,
	rotateSessionSchema,
	type ScraperAccess,
	scraperAccessSchema,
	type TargetingSettings,
	targetingSettingsSchema,
	type Usage,
	usageSchema,
} from "./records.js";
import { defaultDispatcher, send } from "./transport.js";

/** The service's public account base address (docs/service.md, "Addresses and keys"). */
export const DEFAULT_API_URL = "https://api.evomi.com";

export const USAGE_PERIODS = ["24h", "3d", "7d"] as const;
export type UsagePeriod = (typeof USAGE_PERIODS)[number];

export interface AccountClientOptions {
	/** Account key, sent as the `x-apikey` header (never in a query string). */
	readonly accountKey: string;
	/** Base address; account paths (`/public…`) are appended. @default "https://api.evomi.com" */
	readonly baseUrl?: string;
	readonly dispatcher?: Dispatcher;
	/** Per-request limit in milliseconds. @default 30000 (60000 for the large targeting catalogue) */
	readonly timeoutMs?: number;
}

/**
 * Each option of `createAccountClient` and the kind of value it takes: a misspelt `baseUrl` would send
 * the key to the public service instead of the address meant.
 */
const ACCOUNT_CLIENT_OPTIONS = {
	accountKey: "string",
	baseUrl: "string",
	dispatcher: "object",
	timeoutMs: "number",
} as const satisfies OptionKinds<AccountClientOptions>;

export interface GeneratedProxies {
	/** The lines exactly as the service sent them. */
	readonly lines: string[];
	readonly proxies: ParsedProxy[];
}

/** The account endpoints, each answer checked against its record (`ServiceError` when the service refuses). */
export interface AccountClient {
	/** `GET /public`: proxy products, credentials and balances. */
	proxyData(signal?: AbortSignal): Promise<ProxyData>;
	/** `GET /public/scraper`: scraper access, credits, concurrency and the scraper key. */
	scraperAccess(signal?: AbortSignal): Promise<ScraperAccess>;
	/** `GET /public/browser`: browser access, credits, session limit and length, the browser key. */
	browserAccess(signal?: AbortSignal): Promise<BrowserAccess>;
	/** `GET /public/settings`: the targeting catalogue per product. */
	settings(signal?: AbortSignal): Promise<TargetingSettings>;
	/** `GET /public/usage`: one product's bandwidth over a period, in MB. */
	usage(params: { product: string; period?: UsagePeriod }, signal?: AbortSignal): Promise<Usage>;
	/** `GET /public/generate`: a proxy list, as sent and parsed. */
	generate(params: GenerateProxiesParams, signal?: AbortSignal): Promise<GeneratedProxies>;
	/** `GET /public/rotate_session`: a new IP for a proxy session id. */
	rotateSession(params: { sessionid: string; product: string }, signal?: AbortSignal): Promise<RotateSessionResult>;
}

/**
 * A typed client of the account endpoints (docs/service.md, "Account endpoints"). Throws `UsageError` for
 * an option it does not have (a misspelt name).
 */
export function createAccountClient(options: AccountClientOptions): AccountClient {
	checkOptions("createAccountClient", options, ACCOUNT_CLIENT_OPTIONS);
	const base = parseBaseUrl(options.baseUrl ?? DEFAULT_API_URL, "account API address");
	const dispatcher = options.dispatcher ?? defaultDispatcher();
	const timeoutMs = options.timeoutMs ?? 30_000;
	const secrets = [options.accountKey];

	async function get(
		path: string,
		query: URLSearchParams | undefined,
		signal: AbortSignal | undefined,
		limitMs = timeoutMs,
	) {
		const endpoint = `GET ${path}`;
		const search = query && [...query.keys()].length > 0 ? `?${query.toString()}` : "";
		const response = await send(dispatcher, {
			method: "GET",
			url: joinUrl(base, path) + search,
			headers: { "x-apikey": options.accountKey, accept: "application/json, text/plain" },
			timeoutMs: limitMs,
			endpoint,
			...(signal ? { signal } : {}),
		});
		if (response.status < 200 || response.status >= 300) {
			throw toServiceError(response.status, response.body, endpoint, secrets);
		}
		return { response, endpoint };
	}

	async function getJson<T>(
		schema: z.ZodType<T>,
		path: string,
		query?: URLSearchParams,
		signal?: AbortSignal,
		limitMs?: number,
	) {
		const { response, endpoint } = await get(path, query, signal, limitMs);
		const parsed = parseJson(response.body);
		if (parsed === undefined) throw new UnexpectedResponseError(endpoint, response.status, "not JSON");
		// An answer of each kind is parsed once or twice in a process (a run, a command): zod's compiled
		// parser, built on a schema's first parse, would cost more than it saves.
		const result = schema.safeParse(parsed, { jitless: true });
		if (!result.success) {
			throw new UnexpectedResponseError(endpoint, response.status, describeIssues(result.error), {
				cause: result.error,
			});
		}
		return result.data;
	}

	return {
		proxyData: (signal) => getJson(proxyDataSchema, "/public", undefined, signal),
		scraperAccess: (signal) => getJson(scraperAccessSchema, "/public/scraper", undefined, signal),
		browserAccess: (signal) => getJson(browserAccessSchema, "/public/browser", undefined, signal),
		// The catalogue is large; the service's own client allows it 60 s.
		settings: (signal) =>
			getJson(targetingSettingsSchema, "/public/settings", undefined, signal, Math.max(timeoutMs, 60_000)),
		usage: (params, signal) => {
			const query = new URLSearchParams({ product: params.product });
			if (params.period) query.set("period", params.period);
			return getJson(usageSchema, "/public/usage", query, signal);
		},
		generate: async (params, signal) => {
			const { response, endpoint } = await get("/public/generate", generateQuery(params), signal);
			const text = response.body.toString("utf8");
			const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
			const format = params.format ?? 1;
			// A line in no known layout is an unexpected answer, not a crash; the line itself (it holds a
			// proxy password) stays out of the message.
			const proxies = lines.map((line, index) => {
				try {
					return parseProxyLine(line, format);
				} catch (error) {
					const problem = `line ${index + 1} is not a format ${format} proxy line`;
					throw new UnexpectedResponseError(endpoint, response.status, problem, { cause: error });
				}
			});
			return { lines, proxies };
		},
		rotateSession: (params, signal) =>
			getJson(
				rotateSessionSchema,
				"/public/rotate_session",
				new URLSearchParams({ sessionid: params.sessionid, product: params.product }),
				signal,
			),
	};
}
