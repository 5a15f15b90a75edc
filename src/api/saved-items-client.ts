import type { Dispatcher } from "undici";
import { z } from "zod";
import { joinUrl, parseBaseUrl } from "../common/index.js";
import { parseJson, toServiceError } from "./error-body.js";
import { UnexpectedResponseError } from "./errors.js";
import { describeIssues } from "./records.js";
import {
	paginationSchema,
	type SavedConfig,
	type SavedScheme,
	type Schedule,
	type StorageConfig,
	savedConfigSchema,
	savedSchemeSchema,
	scheduleSchema,
	storageConfigSchema,
} from "./saved-records.js";
import { DEFAULT_SCRAPER_URL } from "./scraper-client.js";
import { defaultDispatcher, send } from "./transport.js";

export interface SavedItemsClientOptions {
	/** Scraper key: the `/api/v1/account/…` endpoints authenticate like the scraper's (header `x-api-key`). */
	readonly scraperKey: string;
	/** Base address ending in `/api/v1`. @default "https://scrape.evomi.com/api/v1" */
	readonly baseUrl?: string;
	readonly dispatcher?: Dispatcher;
	/** Per-request limit in milliseconds. @default 30000 */
	readonly timeoutMs?: number;
}

/** Read-only listings of what the account keeps on the scraper side (docs/service.md, "Saved items"). */
export interface SavedItemsClient {
	configs(signal?: AbortSignal): Promise<SavedConfig[]>;
	schemes(signal?: AbortSignal): Promise<SavedScheme[]>;
	storage(signal?: AbortSignal): Promise<StorageConfig[]>;
	schedules(signal?: AbortSignal): Promise<Schedule[]>;
}

/** Items per page asked for; the service's own client pages by 20, the documented maximum is not known. */
const PER_PAGE = 100;
/** Pages read at most per list: a pager that never ends must not loop forever. */
const MAX_PAGES = 100;

/**
 * The items of a list answer: under the collection's own key (`configs`, `schemes`, `storage_configs`,
 * `schedules`, as the docs show for schedules), under `data` or `items`, or the body itself when it
 * is an array — the docs do not show every list, so each place is read.
 */
function listItems(body: unknown, key: string): unknown[] | undefined {
	if (Array.isArray(body)) return body;
	if (body === null || typeof body !== "object") return undefined;
	const record = body as Record<string, unknown>;
	for (const name of [key, "data", "items"]) {
		if (Array.isArray(record[name])) return record[name] as unknown[];
	}
	return undefined;
}

/** A client of the `/api/v1/account/…` listings; every page of a paged list is read. It never retries. */
export function createSavedItemsClient(options: SavedItemsClientOptions): SavedItemsClient {
	const base = parseBaseUrl(options.baseUrl ?? DEFAULT_SCRAPER_URL, "scraper API address");
	const dispatcher = options.dispatcher ?? defaultDispatcher();
	const timeoutMs = options.timeoutMs ?? 30_000;
	const secrets = [options.scraperKey];

	async function getPage(path: string, query: URLSearchParams, signal: AbortSignal | undefined) {
		const endpoint = `GET ${path}`;
		const search = [...query.keys()].length > 0 ? `?${query.toString()}` : "";
		const response = await send(dispatcher, {
			method: "GET",
			url: joinUrl(base, path) + search,
			headers: { "x-api-key": options.scraperKey, accept: "application/json" },
			timeoutMs,
			endpoint,
			...(signal ? { signal } : {}),
		});
		if (response.status < 200 || response.status >= 300) {
			throw toServiceError(response.status, response.body, endpoint, secrets);
		}
		const body = parseJson(response.body);
		if (body === undefined) throw new UnexpectedResponseError(endpoint, response.status, "not JSON");
		return { body, endpoint, status: response.status };
	}

	async function list<T>(
		schema: z.ZodType<T>,
		path: string,
		key: string,
		paged: boolean,
		signal: AbortSignal | undefined,
	): Promise<T[]> {
		const items: T[] = [];
		for (let page = 1; page <= MAX_PAGES; page++) {
			const query = paged
				? new URLSearchParams({ page: String(page), per_page: String(PER_PAGE) })
				: new URLSearchParams();
			const { body, endpoint, status } = await getPage(path, query, signal);
			const raw = listItems(body, key);
			if (raw === undefined) throw new UnexpectedResponseError(endpoint, status, `no list of ${key}`);
			// Listings are read once per command: zod's compiled parser would cost more than it saves.
			const parsed = z.array(schema).safeParse(raw, { jitless: true });
			if (!parsed.success) {
				throw new UnexpectedResponseError(endpoint, status, describeIssues(parsed.error), { cause: parsed.error });
			}
			items.push(...parsed.data);
			const pager = paginationSchema.safeParse((body as Record<string, unknown>).pagination);
			const total = pager.success ? pager.data.total : undefined;
			const done = !paged || raw.length === 0 || (total !== undefined ? items.length >= total : raw.length < PER_PAGE);
			if (done) break;
		}
		return items;
	}

	return {
		configs: (signal) => list(savedConfigSchema, "/account/configs", "configs", true, signal),
		schemes: (signal) => list(savedSchemeSchema, "/account/schemes", "schemes", true, signal),
		// The service's own client sends no pager for storage configs.
		storage: (signal) => list(storageConfigSchema, "/account/storage", "storage_configs", false, signal),
		schedules: (signal) => list(scheduleSchema, "/account/schedule", "schedules", true, signal),
	};
}
