import { didYouMean, JOB_MODES, type ParamProblem, PROBLEMS } from "../common/index.js";

/** Parameters with a closed set of values: a problem with one lists them after the service's words. */
const ALLOWED_VALUES: Readonly<Partial<Record<ParamProblem["param"], readonly string[]>>> = {
	mode: JOB_MODES,
};

/**
 * A hint after the service's own problem text (kept first and verbatim, so it matches what a 422
 * would say): the allowed values, what was given, and the nearest allowed one.
 * `invalid mode value` + ` (allowed: request, browser, auto; got "browsr"; did you mean "browser"?)`.
 */
export function allowedValuesHint(param: ParamProblem["param"], given: unknown): string {
	const allowed = ALLOWED_VALUES[param];
	if (!allowed) return "";
	const got = given === undefined ? "" : `; got ${JSON.stringify(given)}`;
	const near = typeof given === "string" ? didYouMean(given, allowed) : undefined;
	return ` (allowed: ${allowed.join(", ")}${got}${near ? `; did you mean "${near}"?` : ""})`;
}

/** Three-letter codes people write for the two-letter ones the service takes (ISO 3166-1 alpha-3 → alpha-2). */
const ALPHA3: Readonly<Record<string, string>> = {
	USA: "US",
	GBR: "GB",
	DEU: "DE",
	FRA: "FR",
	ESP: "ES",
	ITA: "IT",
	NLD: "NL",
	BEL: "BE",
	CHE: "CH",
	AUT: "AT",
	SWE: "SE",
	NOR: "NO",
	DNK: "DK",
	FIN: "FI",
	POL: "PL",
	PRT: "PT",
	IRL: "IE",
	CZE: "CZ",
	CAN: "CA",
	MEX: "MX",
	BRA: "BR",
	ARG: "AR",
	AUS: "AU",
	NZL: "NZ",
	JPN: "JP",
	KOR: "KR",
	CHN: "CN",
	IND: "IN",
	SGP: "SG",
	HKG: "HK",
	TUR: "TR",
	ISR: "IL",
	ZAF: "ZA",
	UKR: "UA",
	ROU: "RO",
	GRC: "GR",
};
const COUNTRY_NAMES: Readonly<Record<string, string>> = {
	"UNITED STATES": "US",
	AMERICA: "US",
	"UNITED KINGDOM": "GB",
	BRITAIN: "GB",
	ENGLAND: "GB",
	GERMANY: "DE",
	FRANCE: "FR",
	SPAIN: "ES",
	ITALY: "IT",
	NETHERLANDS: "NL",
	CANADA: "CA",
	JAPAN: "JP",
};

/** After `invalid proxy_country`: what the service takes, what was given, and the code meant. */
export function countryHint(given: unknown): string {
	const got = given === undefined ? "" : `; got ${JSON.stringify(given)}`;
	const key = typeof given === "string" ? given.trim().toUpperCase() : "";
	const near = ALPHA3[key] ?? COUNTRY_NAMES[key];
	return ` (a two-letter ISO 3166-1 code such as US, GB or DE${got}${near ? `; did you mean "${near}"?` : ""})`;
}

/** The hint for a problem of `checkScrapeParams` on these options. */
export function paramHint(problem: ParamProblem, options: Readonly<Record<string, unknown>>): string {
	if (problem.param === "proxy_country") return countryHint(options.proxy_country);
	return allowedValuesHint(problem.param, options[problem.param]);
}

/** The schema's text for a bad `mode`: the service's words, then the allowed values. */
export function modeProblem(given: unknown): string {
	return `${PROBLEMS.mode}${allowedValuesHint("mode", given)}`;
}
