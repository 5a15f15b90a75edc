import type { SavedItemsClient } from "../api/index.js";
import { UsageError } from "../common/index.js";
import type { Job } from "../job/index.js";

/** The job keys that name something the account keeps (docs/service.md, "Saved items"), with the list that holds them. */
const SAVED_KEYS = [
	{ key: "scheme_id", list: "schemes", what: "saved extraction schemes" },
	{ key: "config_id", list: "configs", what: "saved scraper configs" },
	{ key: "storage_id", list: "storage", what: "storage configs" },
] as const;

/**
 * A saved id the job names (`scheme_id`, `config_id`, `storage_id`) and the account does not have: exit 2,
 * nothing sent. Thrown by `runJobFile` (a `UsageError`).
 */
export class UnknownSavedIdError extends UsageError {}

/**
 * Before the first fetch: every `scheme_id`, `config_id` and `storage_id` the job names (defaults and
 * inline targets; source rows take the defaults') exists on the account, read from its listings (free
 * GETs). An unknown one would fail every target that names it with a 422 — paid for nothing — so the
 * run is refused first, naming the id and what the account has.
 */
export async function checkSavedIds(job: Job, client: SavedItemsClient, signal: AbortSignal): Promise<void> {
	const named = new Map<(typeof SAVED_KEYS)[number], Set<string>>();
	const note = (params: Partial<Record<(typeof SAVED_KEYS)[number]["key"], unknown>>) => {
		for (const entry of SAVED_KEYS) {
			const value = params[entry.key];
			if (typeof value !== "string") continue;
			const ids = named.get(entry) ?? new Set<string>();
			named.set(entry, ids);
			ids.add(value);
		}
	};
	note(job.defaults);
	for (const target of job.targets) note(target.params);
	for (const [entry, ids] of named) {
		const items = await client[entry.list](signal);
		const known = new Set(items.map((item) => item.id));
		const unknown = [...ids].filter((id) => !known.has(id));
		if (unknown.length === 0) continue;
		const listed = [...known].slice(0, 10).join(", ") || "none";
		throw new UnknownSavedIdError(
			`${job.name}: ${entry.key} ${unknown.map((id) => JSON.stringify(id)).join(", ")} is not among the account's ${entry.what} (it has: ${listed}); nothing was sent`,
		);
	}
}
