/**
 * What the service returned for service-side extraction (`extract_scheme`, `scheme_id`) and AI
 * (`ai_enhance`) in a `delivery: json` body, made into `data` entries. The service's documentation
 * does not show the key names of these results (docs/service.md, "Extraction on the service"), so they are read
 * tolerantly: the scheme's output from `extracted_data` (the emulator's key), `extract_data`,
 * `extraction` or `extracted`; the AI's from `ai_data` (the Python client's key), `ai_result` or
 * `ai_response`.
 */
const SCHEME_KEYS = ["extracted_data", "extract_data", "extraction", "extracted"] as const;
const AI_KEYS = ["ai_data", "ai_result", "ai_response"] as const;

/** The `data` key AI output lands under. */
export const AI_DATA_KEY = "ai_data";

/** Scheme labels become `data` keys as they are; AI output becomes `data.ai_data`. Null when neither is there. */
export function serviceData(body: Readonly<Record<string, unknown>>): Record<string, unknown> | null {
	const data: Record<string, unknown> = {};
	let found = false;
	for (const key of SCHEME_KEYS) {
		const value = body[key];
		if (value && typeof value === "object" && !Array.isArray(value)) {
			Object.assign(data, value);
			found = true;
			break;
		}
	}
	for (const key of AI_KEYS) {
		if (body[key] !== undefined && body[key] !== null) {
			data[AI_DATA_KEY] = body[key];
			found = true;
			break;
		}
	}
	return found ? data : null;
}

/**
 * CSV columns the service-side options of a job add: each top-level `label` of `extract_scheme`
 * (declared order), then `ai_data` when `ai_enhance` is on.
 */
export function serviceColumns(params: object): string[] {
	const options = params as Readonly<Record<string, unknown>>;
	const columns: string[] = [];
	const scheme = options.extract_scheme;
	const rules = Array.isArray(scheme) ? scheme : scheme && typeof scheme === "object" ? [scheme] : [];
	for (const rule of rules) {
		const label = rule && typeof rule === "object" ? (rule as { label?: unknown }).label : undefined;
		if (typeof label === "string" && label !== "" && !columns.includes(label)) columns.push(label);
	}
	if (options.ai_enhance === true) columns.push(AI_DATA_KEY);
	return columns;
}
