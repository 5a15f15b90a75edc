import { didYouMean, MODES, type ParamProblem, PROBLEMS } from "../shared/index.js";

/** Parameters with a closed set of values: a problem with one lists them after the service's words. */
const ALLOWED_VALUES: Readonly<Partial<Record<ParamProblem["param"], readonly string[]>>> = {
	mode: MODES,
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

/** The hint for a problem of `checkScrapeParams` on these options. */
export function paramHint(problem: ParamProblem, options: Readonly<Record<string, unknown>>): string {
	return allowedValuesHint(problem.param, options[problem.param]);
}

/** The schema's text for a bad `mode`: the service's words, then the allowed values. */
export function modeProblem(given: unknown): string {
	return `${PROBLEMS.mode}${allowedValuesHint("mode", given)}`;
}
