import { maskSecret } from "../../common/index.js";

/**
 * Field names whose values are credentials in the account records: proxy passwords (and
 * static residential IPs), the scraper/browser keys, cloud-storage credentials of storage configs and
 * webhook secrets in saved configs (docs/service.md, "Account endpoints" and "Saved items").
 */
export const SECRET_FIELDS: ReadonlySet<string> = new Set([
	"password",
	"api_key",
	"apikey",
	"apiKey",
	"access_key",
	"secret_key",
	"secret",
	"credentials_json",
	"connection_string",
	"account_key",
	"sas_token",
	"private_key",
]);

/**
 * A deep copy of a record with every secret field masked (`ab…yz`). Walks the whole value by field
 * name rather than by known paths, so secrets in package shapes the spec does not show are caught too.
 */
export function maskRecordSecrets<T>(value: T): T {
	return maskValue(value) as T;
}

function maskValue(value: unknown): unknown {
	if (Array.isArray(value)) return value.map(maskValue);
	if (value === null || typeof value !== "object") return value;
	const copy: Record<string, unknown> = {};
	for (const [key, inner] of Object.entries(value)) {
		copy[key] = SECRET_FIELDS.has(key) && typeof inner === "string" ? maskSecret(inner) : maskValue(inner);
	}
	return copy;
}

/** Every secret string found in a record, for scrubbing messages and for tests that check none leaked. */
export function collectSecrets(value: unknown, found: string[] = []): string[] {
	if (Array.isArray(value)) {
		for (const item of value) collectSecrets(item, found);
	} else if (value !== null && typeof value === "object") {
		for (const [key, inner] of Object.entries(value)) {
			if (SECRET_FIELDS.has(key) && typeof inner === "string" && inner !== "") found.push(inner);
			else collectSecrets(inner, found);
		}
	}
	return found;
}
