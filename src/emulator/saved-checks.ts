/**
 * Validation of the bodies that create or update saved items, as the service's 422s read: one
 * `<parameter>: <problem>` line per problem, every problem at once (docs/service.md, "Parameter rules"). `partial` checks an
 * update: only the fields present, none required.
 */
import { checkScrapeParams, checkScrapeUrl } from "../common/index.js";
import { isTruthy } from "./http-io.js";
import { type Collection, type Params, type SavedConfig, STORAGE_TYPES, type StorageType } from "./saved-items.js";

const RULE_TYPES = ["content", "attribute", "exists", "count", "nest"] as const;
const LOCATORS = ["selector", "xpath", "regex"] as const;

/** Fields an S3-compatible config must carry (docs/service.md, "Saved items"); gcs and azure_blob configs are kept as given. */
const S3_REQUIRED = ["bucket", "access_key", "secret_key"] as const;

function isObject(value: unknown): value is Params {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isText(value: unknown): value is string {
	return typeof value === "string" && value.trim() !== "";
}

function checkName(body: Params, partial: boolean, problems: string[]): void {
	if (body.name === undefined) {
		if (!partial) problems.push("name: field required");
	} else if (!isText(body.name)) problems.push("name: must be a non-empty string");
}

function checkBoolean(body: Params, field: string, problems: string[]): void {
	if (body[field] !== undefined && typeof body[field] !== "boolean") problems.push(`${field}: must be true or false`);
}

/**
 * A saved config holds realtime parameters; they are checked as a realtime request would be, except
 * that `url` may be left for the request that uses the config to give.
 */
function checkScrapeConfig(config: Params, path: string, problems: string[]): void {
	const withUrl = config.url === undefined ? { ...config, url: "https://config.invalid/" } : config;
	for (const problem of checkScrapeParams(withUrl)) problems.push(`${path}.${problem.param}: ${problem.problem}`);
}

function checkConfigField(body: Params, partial: boolean, problems: string[]): void {
	if (body.config === undefined) {
		if (!partial) problems.push("config: field required");
	} else if (!isObject(body.config)) problems.push("config: must be an object of scraper parameters");
	else checkScrapeConfig(body.config, "config", problems);
}

/** `extract_scheme` rules (docs/service.md, "Extraction on the service"); a rule inside a `nest` may have no locator (it reads the container). */
export function checkExtractScheme(scheme: unknown, path: string, problems: string[], nested = false): void {
	const rules = Array.isArray(scheme) ? scheme : [scheme];
	if (rules.length === 0) problems.push(`${path}: must hold at least one rule`);
	rules.forEach((rule, index) => {
		const at = Array.isArray(scheme) ? `${path}[${index}]` : path;
		if (!isObject(rule)) {
			problems.push(`${at}: must be a rule object`);
			return;
		}
		if (!isText(rule.label)) problems.push(`${at}.label: field required`);
		const type = rule.type ?? "content";
		if (!RULE_TYPES.includes(type as (typeof RULE_TYPES)[number])) {
			problems.push(`${at}.type: must be one of ${RULE_TYPES.join(", ")}`);
		}
		const locators = LOCATORS.filter((name) => rule[name] !== undefined);
		if (locators.length > 1) problems.push(`${at}: give one of selector, xpath, regex, not ${locators.join(" and ")}`);
		else if (locators.length === 0 && !nested) problems.push(`${at}: one of selector, xpath, regex is required`);
		if (type === "attribute" && !isText(rule.attribute)) problems.push(`${at}.attribute: required for type attribute`);
		if (type === "nest") {
			if (!Array.isArray(rule.fields) || rule.fields.length === 0)
				problems.push(`${at}.fields: required for type nest`);
			else checkExtractScheme(rule.fields, `${at}.fields`, problems, true);
		}
	});
}

export function checkConfigBody(body: Params, partial: boolean): string[] {
	const problems: string[] = [];
	checkName(body, partial, problems);
	checkConfigField(body, partial, problems);
	return problems;
}

/** Scheme creation logic (docs/service.md, "Extraction on the service"): `fix` needs `test` and `extract_prompt`; `test` needs `config.url`. */
export function checkSchemeBody(body: Params, partial: boolean): string[] {
	const problems: string[] = [];
	checkName(body, partial, problems);
	for (const field of ["test", "fix", "async"]) checkBoolean(body, field, problems);
	const test = isTruthy(body.test);
	const fix = isTruthy(body.fix);
	if (fix && !test) problems.push("fix: requires test: true");
	if (fix && !isText(body.extract_prompt)) problems.push("extract_prompt: required when fix is true");
	if (body.extract_prompt !== undefined && typeof body.extract_prompt !== "string") {
		problems.push("extract_prompt: must be a string");
	}
	if (body.config === undefined) {
		if (!partial) problems.push("config: field required");
		return problems;
	}
	if (!isObject(body.config)) {
		problems.push("config: must be an object of scraper parameters with extract_scheme");
		return problems;
	}
	const config = body.config;
	if (test || fix) {
		const urlProblem = checkScrapeUrl(config.url);
		if (urlProblem) problems.push(`config.url: ${urlProblem} (test and fix scrape it)`);
	}
	if (config.extract_scheme === undefined) {
		if (!fix) problems.push("config.extract_scheme: required unless fix is true");
	} else checkExtractScheme(config.extract_scheme, "config.extract_scheme", problems);
	const { extract_scheme: _scheme, ...rest } = config;
	checkScrapeConfig(rest, "config", problems);
	return problems;
}

/** `storedType`: on an update, the type of the stored config (a new `config` replaces the old one whole). */
export function checkStorageBody(body: Params, partial: boolean, storedType?: StorageType): string[] {
	const problems: string[] = [];
	checkName(body, partial, problems);
	checkBoolean(body, "set_as_default", problems);
	if (body.storage_type === undefined) {
		if (!partial) problems.push(`storage_type: field required (${STORAGE_TYPES.join(", ")})`);
	} else if (!STORAGE_TYPES.includes(body.storage_type as StorageType)) {
		problems.push(`storage_type: must be one of ${STORAGE_TYPES.join(", ")}`);
	}
	const type = body.storage_type ?? storedType;
	if (body.config === undefined) {
		if (!partial) problems.push("config: field required");
	} else if (!isObject(body.config) || Object.keys(body.config).length === 0) {
		problems.push("config: must be an object of the provider's settings");
	} else {
		if (type === "s3_compatible") {
			for (const field of S3_REQUIRED) {
				if (!isText(body.config[field])) problems.push(`config.${field}: required for s3_compatible`);
			}
		}
		if (body.config.endpoint_url !== undefined && checkScrapeUrl(body.config.endpoint_url)) {
			problems.push("config.endpoint_url: invalid URL format");
		}
	}
	return problems;
}

export function checkScheduleBody(body: Params, partial: boolean, configs: Collection<SavedConfig>): string[] {
	const problems: string[] = [];
	checkName(body, partial, problems);
	checkBoolean(body, "stop_on_error", problems);
	const configId = body.config_id;
	if (configId === undefined) {
		if (!partial) problems.push("config_id: field required");
	} else if (!isText(configId)) problems.push("config_id: must be the id of a saved config");
	else {
		const config = configs.get(configId);
		if (!config) problems.push(`config_id: no saved config ${configId} on this account`);
		else if (checkScrapeUrl(config.config.url)) problems.push(`config_id: config ${configId} has no url to scrape`);
	}
	const interval = body.interval_minutes;
	if (interval === undefined) {
		if (!partial) problems.push("interval_minutes: field required");
	} else if (typeof interval !== "number" || !Number.isInteger(interval) || interval < 1) {
		problems.push("interval_minutes: must be a whole number of minutes, at least 1");
	}
	if (body.start_time !== undefined && body.start_time !== null) {
		if (typeof body.start_time !== "string" || Number.isNaN(Date.parse(body.start_time))) {
			problems.push("start_time: must be an ISO 8601 date-time");
		}
	}
	return problems;
}
