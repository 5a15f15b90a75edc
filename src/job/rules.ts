import { checkScrapeParams, type ParamProblem } from "../common/index.js";
import { checkExtractRules } from "./extract-rules.js";
import { inferSourceFormat } from "./normalize.js";
import { paramHint } from "./param-hints.js";
import { type DataPath, formatPath } from "./positions.js";
import { DEFAULT_BACKOFF_MS, DEFAULT_MAX_BACKOFF_MS } from "./schema.js";
import { checkTargetUrl } from "./url-check.js";
import type { PathProblem } from "./zod-issues.js";

/**
 * Cross-field rules (step 3 of habit 2), run on the data as written (after `${VAR}` expansion)
 * whether or not the schema accepted it, so one round shows every problem. Values of the wrong
 * type are simply not matched here; the schema already said so.
 */

/** Stands in for the URL when only the options of `defaults` or a source are checked. */
const PLACEHOLDER_URL = "https://example.com/";

/**
 * When a rule names a parameter the object does not set, point at the one it does set that
 * caused the conflict (a target's `mode: request` against `screenshot: true` in defaults).
 */
const RELATED_PARAM: Readonly<Record<string, string>> = {
	screenshot: "mode",
	proxy_type: "mode",
	ai_source: "ai_enhance",
};

type Plain = Record<string, unknown>;

/**
 * The options as the service will see them: `mode: adaptive` is checked as its cheapest rung (a request),
 * the one mode every adaptive ladder has (src/run/economics/adaptive-mode.ts).
 */
function asSent(options: Plain): Plain {
	return options.mode === "adaptive" ? { ...options, mode: "request" } : options;
}

function isPlainObject(value: unknown): value is Plain {
	return value !== null && typeof value === "object" && !Array.isArray(value);
}

function problemKey(p: ParamProblem): string {
	return `${p.param}\u0000${p.problem}`;
}

/**
 * The service's parameter rules (docs/service.md, "Parameter rules") on the options an object sets,
 * merged over what it inherits. A problem is reported where the object touches it; one that comes
 * wholly from `defaults` was reported there, once, instead of once per target.
 */
function checkMergedOptions(
	objectPath: DataPath,
	own: Plain,
	inherited: Plain,
	inheritedProblems: ReadonlySet<string>,
	url: unknown,
): PathProblem[] {
	const { id: _id, url: _url, file: _file, format: _format, column: _column, delimiter: _delimiter, ...options } = own;
	const problems: PathProblem[] = [];
	const merged = { ...inherited, ...options, url };
	for (const problem of checkScrapeParams(asSent(merged))) {
		if (problem.param === "url") continue;
		const setHere = Object.hasOwn(options, problem.param);
		const related = RELATED_PARAM[problem.param];
		const relatedHere = related !== undefined && Object.hasOwn(options, related);
		if (!setHere && !relatedHere && inheritedProblems.has(problemKey(problem))) continue;
		const fromDefaults =
			!setHere && Object.hasOwn(inherited, problem.param) ? ` (${problem.param} is set in defaults)` : "";
		problems.push({
			path: [...objectPath, problem.param],
			at: setHere ? [...objectPath, problem.param] : relatedHere ? [...objectPath, related] : objectPath,
			atKey: !setHere && relatedHere,
			message: `${problem.problem}${paramHint(problem, merged)}${fromDefaults}`,
		});
	}
	return problems;
}

/** Every cross-field problem of a job file's data. */
export function checkJobRules(data: Plain): PathProblem[] {
	const problems: PathProblem[] = [];
	const defaults = isPlainObject(data.defaults) ? data.defaults : {};

	const defaultsProblems = checkScrapeParams(asSent({ ...defaults, url: PLACEHOLDER_URL })).filter(
		(p) => p.param !== "url",
	);
	const inheritedProblems = new Set(defaultsProblems.map(problemKey));
	problems.push(...checkMergedOptions(["defaults"], defaults, {}, new Set(), PLACEHOLDER_URL));

	const targets = Array.isArray(data.targets) ? data.targets : [];
	const idsSeen = new Map<string, number>();
	targets.forEach((target: unknown, index) => {
		const path: DataPath = ["targets", index];
		if (typeof target === "string") {
			const problem = checkTargetUrl(target);
			if (problem) problems.push({ path, message: problem });
			return;
		}
		if (!isPlainObject(target)) return;
		const urlProblem = checkTargetUrl(target.url);
		if (urlProblem) problems.push({ path: [...path, "url"], message: urlProblem });
		problems.push(...checkMergedOptions(path, target, defaults, inheritedProblems, target.url));
		if (typeof target.id === "string") {
			// Ids name files; on case-insensitive file systems `Home` and `home` are the same file.
			const folded = target.id.toLowerCase();
			const first = idsSeen.get(folded);
			if (first === undefined) idsSeen.set(folded, index);
			else {
				problems.push({
					path: [...path, "id"],
					message: `duplicate id ${JSON.stringify(target.id)}: ${formatPath(["targets", first])} has it already (ids are unique, ignoring case, since they name files)`,
				});
			}
		}
	});

	const sources = Array.isArray(data.sources) ? data.sources : [];
	sources.forEach((source: unknown, index) => {
		const path: DataPath = ["sources", index];
		if (!isPlainObject(source)) return;
		problems.push(...checkMergedOptions(path, source, defaults, inheritedProblems, PLACEHOLDER_URL));
		if (typeof source.file !== "string") return;
		const format = inferSourceFormat(source.file, source.format, source.column);
		if (format === "csv" && source.column === undefined) {
			problems.push({
				path: [...path, "column"],
				message: "a CSV source needs `column`: the header of the column that holds the URLs",
			});
		}
		if (format === "text" && source.column !== undefined) {
			problems.push({ path: [...path, "column"], message: "`column` applies to CSV sources only; set `format: csv`" });
		}
		if (format === "text" && source.delimiter !== undefined) {
			problems.push({ path: [...path, "delimiter"], message: "`delimiter` applies to CSV sources only" });
		}
	});

	const listed = (key: string) => key in data && (data[key] === undefined || Array.isArray(data[key]));
	if (!("targets" in data) && !("sources" in data)) {
		problems.push({ path: [], message: "the job has no targets: add `targets` (URLs) or `sources` (files of URLs)" });
	} else if (targets.length + sources.length === 0 && (listed("targets") || listed("sources"))) {
		const where = listed("targets") ? "targets" : "sources";
		problems.push({ path: [where], message: "the job has no targets: `targets` and `sources` are empty" });
	}

	problems.push(...checkExtractRules(data));

	const retry = isPlainObject(data.retry) ? data.retry : {};
	const backoffMs = typeof retry.backoff_ms === "number" ? retry.backoff_ms : DEFAULT_BACKOFF_MS;
	const maxBackoffMs = typeof retry.max_backoff_ms === "number" ? retry.max_backoff_ms : DEFAULT_MAX_BACKOFF_MS;
	if (backoffMs > 0 && maxBackoffMs > 0 && maxBackoffMs < backoffMs) {
		const which = "max_backoff_ms" in retry ? "max_backoff_ms" : "backoff_ms";
		problems.push({
			path: ["retry", which],
			message: `max_backoff_ms (${maxBackoffMs}) must not be less than backoff_ms (${backoffMs})`,
		});
	}
	return problems;
}
