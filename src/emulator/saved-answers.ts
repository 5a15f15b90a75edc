/**
 * What the saved-item endpoints (`/api/v1/account/…`) share: the request they are handed, the answer
 * they return (the scraper router sends it with the usual X- headers), list pagination, and the
 * error records of the service (docs/service.md, "Errors").
 */
import type { EmulatorContext } from "./context.js";
import { invalidParamsBody, timestamp } from "./http-io.js";
import type { LedgerEntry } from "./ledger.js";
import type { Params } from "./saved-items.js";

export interface SavedRequest {
	readonly ctx: EmulatorContext;
	readonly method: string;
	/** The item id in the path, when there is one. */
	readonly id: string | undefined;
	/** The JSON body (POST, PUT), `{}` otherwise. */
	readonly body: Params;
	readonly query: URLSearchParams;
	/** The scraper key the request authenticated with. */
	readonly key: string;
	readonly entry: LedgerEntry;
}

export interface SavedAnswer {
	readonly status: number;
	readonly body: Params;
	/** Credits this request was charged now (the X-Credits-Used header). */
	readonly creditsUsed?: number;
	readonly modeUsed?: string;
}

export function invalid(problems: readonly string[]): SavedAnswer {
	return { status: 422, body: invalidParamsBody(problems) };
}

export function notFound(what: string, id: string | undefined): SavedAnswer {
	return {
		status: 404,
		body: {
			success: false,
			error: "Not found",
			message: `No ${what} ${id ?? ""} on this account`,
			timestamp: timestamp(),
		},
	};
}

export function ok(status: number, body: Params): SavedAnswer {
	return { status, body: { success: true, ...body } };
}

const SORT_FIELDS = ["created_at", "updated_at", "name"] as const;
const MAX_PER_PAGE = 100;

export interface Page<T> {
	readonly items: T[];
	readonly pagination: { page: number; per_page: number; total: number };
}

function positive(value: string | null, fallback: number, max: number): number | null {
	if (value === null || value === "") return fallback;
	const number = Number(value);
	return Number.isInteger(number) && number >= 1 && number <= max ? number : null;
}

/**
 * `page` (from 1), `per_page` (1–100, default 20), `sort_by` (created_at, updated_at, name) and
 * `sort_order` (desc by default), as the service's own client sends them.
 */
export function paginate<
	T extends { readonly created_at: string; readonly updated_at?: string; readonly name?: string },
>(items: readonly T[], query: URLSearchParams): Page<T> | SavedAnswer {
	const problems: string[] = [];
	const page = positive(query.get("page"), 1, Number.MAX_SAFE_INTEGER);
	if (page === null) problems.push("page: must be a whole number from 1");
	const perPage = positive(query.get("per_page"), 20, MAX_PER_PAGE);
	if (perPage === null) problems.push(`per_page: must be a whole number from 1 to ${MAX_PER_PAGE}`);
	const sortBy = query.get("sort_by") ?? "created_at";
	if (!SORT_FIELDS.includes(sortBy as (typeof SORT_FIELDS)[number])) {
		problems.push(`sort_by: must be one of ${SORT_FIELDS.join(", ")}`);
	}
	const order = query.get("sort_order") ?? "desc";
	if (order !== "asc" && order !== "desc") problems.push("sort_order: must be asc or desc");
	if (problems.length > 0 || page === null || perPage === null) return invalid(problems);
	const field = sortBy as (typeof SORT_FIELDS)[number];
	// Creation order breaks ties (items made in the same millisecond share a created_at).
	const sorted = items
		.map((item, index) => ({ item, index }))
		.sort((a, b) => {
			const left = String(a.item[field] ?? "");
			const right = String(b.item[field] ?? "");
			const byField = left < right ? -1 : left > right ? 1 : a.index - b.index;
			return order === "asc" ? byField : -byField;
		})
		.map(({ item }) => item);
	const start = (page - 1) * perPage;
	return { items: sorted.slice(start, start + perPage), pagination: { page, per_page: perPage, total: items.length } };
}

export function isAnswer(value: unknown): value is SavedAnswer {
	return typeof value === "object" && value !== null && "status" in value && "body" in value;
}

/** An update with no field to change is a 422, not a silent success. */
export function requireSomeField(body: Params, fields: readonly string[]): string[] {
	return fields.some((field) => body[field] !== undefined)
		? []
		: [`body: nothing to update; give one of ${fields.join(", ")}`];
}
