/**
 * A realtime request (or a crawl's `scraper_config`) may name saved items instead of spelling
 * everything out (docs/service.md, "Saved items"): `config_id` supplies parameters the request leaves out,
 * `scheme_id` supplies `extract_scheme`, `storage_id` / `use_default_storage` pick where the result
 * would be uploaded. An id the account does not have is a 422 problem naming it, not a silent no-op.
 */
import { isTruthy } from "./http-io.js";
import type { Params, SavedItems } from "./saved-items.js";

export interface ResolvedParams {
	/** The request's parameters with the saved ones filled in (the request's own win). */
	readonly params: Params;
	/** `<parameter>: <problem>` lines, empty when every reference resolved. */
	readonly problems: string[];
}

export function resolveSavedReferences(saved: SavedItems, request: Params): ResolvedParams {
	const problems: string[] = [];
	let params = request;
	const configId = request.config_id;
	if (configId !== undefined) {
		const config = typeof configId === "string" ? saved.configs.get(configId) : undefined;
		if (config) params = { ...config.config, ...params };
		else problems.push(`config_id: no saved config ${String(configId)} on this account`);
	}
	const schemeId = params.scheme_id;
	if (schemeId !== undefined) {
		const scheme = typeof schemeId === "string" ? saved.schemes.get(schemeId) : undefined;
		if (!scheme) problems.push(`scheme_id: no saved scheme ${String(schemeId)} on this account`);
		else if (scheme.status !== "ready") problems.push(`scheme_id: scheme ${schemeId} is ${scheme.status}, not ready`);
		else if (params.extract_scheme === undefined) {
			params = { ...params, extract_scheme: scheme.generated_scheme ?? scheme.config.extract_scheme };
		}
	}
	const storageId = params.storage_id;
	if (storageId !== undefined) {
		if (typeof storageId !== "string" || !saved.storage.get(storageId)) {
			problems.push(`storage_id: no storage config ${String(storageId)} on this account`);
		}
	} else if (isTruthy(params.use_default_storage) && !saved.storage.values().some((storage) => storage.is_default)) {
		problems.push("use_default_storage: the account has no default storage config");
	}
	return { params, problems };
}
