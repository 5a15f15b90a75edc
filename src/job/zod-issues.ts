import type { z } from "zod";
import { didYouMean, type OptionWords, SCRAPE_PARAM_NAMES } from "../common/index.js";
import type { DataPath } from "./positions.js";
import { describeValue } from "./problems.js";

/** A schema problem before it is given a position: what the path is, and what to say. */
export interface PathProblem {
	/** The path the message names (`targets[2].mode`). */
	path: DataPath;
	/** Where to point, when not at `path` itself (e.g. the key of an unknown key). */
	at?: DataPath;
	atKey?: boolean;
	message: string;
}

const UNION_SENTINEL = "\u0000union";

const TYPE_NAMES: Record<string, string> = {
	string: "a string",
	number: "a number",
	int: "an integer",
	boolean: "true or false",
	object: "a mapping (key: value)",
	record: "a mapping (key: value)",
	array: "a list",
	null: "null",
};

function expectedName(expected: string): string {
	return TYPE_NAMES[expected] ?? expected;
}

function bound(issue: { minimum?: unknown; maximum?: unknown; inclusive?: boolean }, low: boolean): string {
	const value = Number(low ? issue.minimum : issue.maximum);
	if (low) return issue.inclusive ? `at least ${value}` : value === 0 ? "greater than 0" : `greater than ${value}`;
	return issue.inclusive ? `at most ${value}` : `less than ${value}`;
}

/**
 * zod's per-parse error map: one plain sentence per issue kind, naming the rule and what was
 * received (p-queue's habit). Messages set on a schema (the service's 7.2 texts, the name and id
 * rules) take precedence over this map, as zod applies schema-level errors first.
 */
export const describeIssue: z.core.$ZodErrorMap = (issue) => {
	const got = "input" in issue ? ` (got ${describeValue(issue.input)})` : "";
	switch (issue.code) {
		case "invalid_type":
			if (issue.input === undefined) return "is required";
			return `expected ${expectedName(issue.expected)}, got ${describeValue(issue.input)}`;
		case "too_small":
			if (issue.origin === "array") {
				return Number(issue.minimum) <= 1 ? "must not be empty" : `needs at least ${Number(issue.minimum)} items`;
			}
			if (issue.origin === "string")
				return Number(issue.minimum) <= 1
					? "must not be empty"
					: `must be at least ${Number(issue.minimum)} characters`;
			return `must be ${bound(issue, true)}${got}`;
		case "too_big":
			if (issue.origin === "array") return `allows at most ${Number(issue.maximum)} items`;
			if (issue.origin === "string")
				return `must be at most ${Number(issue.maximum)} characters${Number(issue.maximum) === 1 ? ` (got ${describeValue(issue.input)})` : ""}`;
			if (issue.origin === "number" && Number(issue.maximum) >= Number.MAX_SAFE_INTEGER) return `is too large${got}`;
			return `must be ${bound(issue, false)}${got}`;
		case "invalid_value": {
			const values = issue.values.map((value) => JSON.stringify(value));
			const suggestion =
				typeof issue.input === "string" ? didYouMean(issue.input, issue.values.map(String)) : undefined;
			const hint = suggestion ? `; did you mean ${JSON.stringify(suggestion)}?` : "";
			return `must be ${values.length === 1 ? values[0] : `one of ${values.join(", ")}`}${got}${hint}`;
		}
		case "invalid_format":
			return `has an invalid format${got}`;
		case "invalid_union":
			return UNION_SENTINEL;
		default:
			return undefined;
	}
};

/** The keys an object schema at `path` allows, for "did you mean" (walking unions to their object option). */
export function allowedKeysAt(schema: z.ZodType, path: DataPath): string[] {
	let current: z.core.$ZodType | undefined = schema;
	const unwrap = (type: z.core.$ZodType | undefined): z.core.$ZodType | undefined => {
		let node = type;
		for (;;) {
			const def = node?._zod.def as { type?: string; innerType?: z.core.$ZodType } | undefined;
			if (
				def &&
				(def.type === "optional" || def.type === "default" || def.type === "prefault" || def.type === "nullable")
			) {
				node = def.innerType;
			} else return node;
		}
	};
	const objectOf = (type: z.core.$ZodType | undefined): z.core.$ZodObject | undefined => {
		const node = unwrap(type);
		const def = node?._zod.def as { type?: string; options?: z.core.$ZodType[] } | undefined;
		if (def?.type === "object") return node as z.core.$ZodObject;
		if (def?.type === "union") {
			for (const option of def.options ?? []) {
				const found = objectOf(option);
				if (found) return found;
			}
		}
		return undefined;
	};
	for (const segment of path) {
		const node = unwrap(current);
		const def = node?._zod.def as { type?: string; element?: z.core.$ZodType; valueType?: z.core.$ZodType } | undefined;
		if (typeof segment === "number" && def?.type === "array") {
			current = def.element;
			continue;
		}
		// A map of names to one kind of value (extract's fields): every name's keys are the value's.
		if (def?.type === "record") {
			current = def.valueType;
			continue;
		}
		const object = objectOf(node);
		current = object ? (object._zod.def.shape as Record<string, z.core.$ZodType>)[String(segment)] : undefined;
		if (!current) return [];
	}
	const object = objectOf(current);
	return object ? Object.keys(object._zod.def.shape) : [];
}

const SCRAPE_PARAMS = new Set<string>(SCRAPE_PARAM_NAMES);

/** Sections whose keys a job file may write at its top level by mistake (`max_pages: 5` for `crawl: {max_pages: 5}`). */
const SECTIONS = ["crawl", "extract_checks", "retry", "output"] as const;

function unknownKeyMessage(
	key: string,
	allowed: string[],
	atRoot: boolean,
	schema: z.ZodType,
	words: OptionWords,
): string {
	const suggestion = didYouMean(key, allowed);
	if (suggestion) return `unknown key; did you mean ${JSON.stringify(suggestion)}?`;
	if (atRoot && SCRAPE_PARAMS.has(key)) return "unknown key; scrape options go under `defaults` or on a target";
	const section = atRoot ? SECTIONS.find((name) => allowedKeysAt(schema, [name]).includes(key)) : undefined;
	if (section) return `unknown key; it goes under \`${section}:\` (${section}: {${key}: …})`;
	if (allowed.length > 0 && allowed.length <= 12) return `unknown key; allowed: ${allowed.join(", ")}`;
	return `unknown key (${words.allowedKeys})`;
}

function valueAt(data: unknown, path: DataPath): unknown {
	let value = data;
	for (const segment of path) {
		if (value === null || typeof value !== "object") return undefined;
		value = (value as Record<PropertyKey, unknown>)[segment];
	}
	return value;
}

/**
 * Whether a union option's issue says the value is not of its kind at all: a type it does not take, or a
 * mapping or list where it takes a plain value (`breaker: false` beside `breaker: {…}`).
 */
function wrongKind(issue: z.core.$ZodIssue, input: unknown): boolean {
	if (issue.path.length > 0) return false;
	if (issue.code === "invalid_type") return true;
	return issue.code === "invalid_value" && input !== null && typeof input === "object";
}

/**
 * Turn zod issues into one problem per thing wrong: unknown keys each get their own problem at
 * the key, with a suggestion; a union (`targets` items: a URL or a mapping) reports the option
 * the value was evidently meant as, instead of every option's complaint.
 */
export function issuesToProblems(
	issues: readonly z.core.$ZodIssue[],
	schema: z.ZodType,
	data: unknown,
	words: OptionWords,
	base: DataPath = [],
): PathProblem[] {
	const problems: PathProblem[] = [];
	for (const issue of issues) {
		const path: PropertyKey[] = [...base, ...issue.path];
		if (issue.code === "unrecognized_keys") {
			const allowed = allowedKeysAt(schema, path);
			for (const key of issue.keys) {
				problems.push({
					path: [...path, key],
					atKey: true,
					message: unknownKeyMessage(key, allowed, path.length === 0, schema, words),
				});
			}
			continue;
		}
		if (issue.code === "invalid_union" && issue.message === UNION_SENTINEL) {
			// The options that failed on something other than the value's type are the ones it was meant as.
			const input = valueAt(data, path);
			const meant = issue.errors.filter((branch) => !branch.every((inner) => wrongKind(inner, input)));
			// Several mappings (sources: a file, map:, search:): the one it fits best, when one fits best.
			const fewest = Math.min(...meant.map((branch) => branch.length));
			const closest = meant.filter((branch) => branch.length === fewest);
			if (closest.length === 1) {
				problems.push(...issuesToProblems(closest[0]!, schema, data, words, path));
				continue;
			}
			const expected = issue.errors
				.flatMap((branch) => branch.filter((inner) => inner.code === "invalid_type" && inner.path.length === 0))
				.map((inner) => expectedName((inner as { expected: string }).expected));
			const what = [...new Set(expected)].join(" or ") || "a different value";
			problems.push({ path, message: `expected ${what}, got ${describeValue(valueAt(data, path))}` });
			continue;
		}
		problems.push({ path, message: issue.message });
	}
	return problems;
}
