/**
 * JSON with object keys sorted at every depth and `undefined` members dropped, so two values that mean
 * the same thing serialize the same whatever order they were built in. Target ids (their options) and
 * change tracking's content hashes (extracted data) are both taken over it: its output must not change.
 */
export function canonicalJson(value: unknown): string {
	if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
	if (Array.isArray(value))
		return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(",")}]`;
	const entries = Object.entries(value as Record<string, unknown>)
		.filter(([, member]) => member !== undefined)
		.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
	return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(",")}}`;
}
