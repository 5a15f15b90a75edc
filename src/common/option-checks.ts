import { didYouMean } from "./did-you-mean.js";
import { UsageError } from "./errors.js";

/** The kind of value an option of a library call takes. */
export type OptionKind =
	| "boolean"
	| "string"
	| "number"
	| "boolean|string"
	| "function"
	| "signal"
	| "logger"
	| "object"
	| "any";

/** The kinds an option of type `V` may be declared with: its own, or any for an object type. */
type KindOf<V> = [V] extends [boolean]
	? "boolean"
	: [V] extends [string]
		? "string"
		: [V] extends [number]
			? "number"
			: [V] extends [boolean | string]
				? "boolean|string"
				: [V] extends [AbortSignal]
					? "signal"
					: [V] extends [(...args: never[]) => unknown]
						? "function"
						: OptionKind;

/**
 * Every option of an options interface with the kind of value it takes: a table typed this way names
 * each option of `T` once and nothing else, so the names a call accepts cannot drift from its interface.
 */
export type OptionKinds<T> = { readonly [K in keyof T]-?: KindOf<NonNullable<T[K]>> };

/**
 * A library call's options object checked against its table before anything is done: a misspelt name
 * (`maxCredit`) would otherwise be ignored, and the run paid for with the default it meant to change; a
 * value of the wrong kind (`onProgress: "x"`, `sandbox: "yes"`) would fail, or count as true, only later.
 */
export function checkOptions(call: string, options: unknown, kinds: Readonly<Record<string, OptionKind>>): void {
	if (options === undefined) return;
	if (options === null || typeof options !== "object" || Array.isArray(options))
		throw new UsageError(`${call}: its options must be an object, got ${describeValue(options)}`);
	const known = Object.keys(kinds);
	for (const name of Object.keys(options)) {
		if (Object.hasOwn(kinds, name)) continue;
		const near = didYouMean(name, known);
		throw new UsageError(
			`${call}: unknown option ${JSON.stringify(name)}; ${near ? `did you mean ${JSON.stringify(near)}?` : `its options: ${known.join(", ")}`}`,
		);
	}
	for (const [name, value] of Object.entries(options)) {
		const kind = kinds[name]!;
		// Left out and `undefined` are one: a caller's `{ ...defaults, resume: undefined }` means "not given".
		if (value === undefined || isOfKind(value, kind)) continue;
		throw new UsageError(`${call}: ${name} must be ${KIND_WORDS[kind]}, got ${describeValue(value)}`);
	}
}

/** A call's path argument (the job file): a string, refused otherwise before it is resolved. */
export function checkPathArgument(call: string, path: unknown): void {
	if (typeof path !== "string" || path === "")
		throw new UsageError(`${call}: the job file's path must be a non-empty string, got ${describeValue(path)}`);
}

/** What each kind is, as a refusal says it. */
const KIND_WORDS: Readonly<Record<OptionKind, string>> = {
	boolean: "true or false",
	string: "a string",
	number: "a number",
	"boolean|string": "true, false or a string",
	function: "a function",
	signal: "an AbortSignal (an AbortController's signal)",
	logger: "a logger with info, warn and error methods (pino's)",
	object: "an object",
	any: "anything",
};

function isOfKind(value: unknown, kind: OptionKind): boolean {
	switch (kind) {
		case "boolean":
		case "string":
		case "number":
		case "function":
			return typeof value === kind;
		case "boolean|string":
			return typeof value === "boolean" || typeof value === "string";
		// A real one: the run combines it with its own (AbortSignal.any), which takes nothing else.
		case "signal":
			return value instanceof AbortSignal;
		case "logger":
			return isObject(value) && ["info", "warn", "error"].every((method) => typeof value[method] === "function");
		case "object":
			return isObject(value);
		case "any":
			return true;
	}
}

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A value as a message shows it: its kind, and a short value's text. */
function describeValue(value: unknown): string {
	if (value === null) return "null";
	if (Array.isArray(value)) return "an array";
	switch (typeof value) {
		case "string":
			return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)})`;
		case "number":
		case "bigint":
		case "boolean":
			return `${typeof value === "boolean" ? "a boolean" : "a number"} (${String(value)})`;
		case "function":
			return "a function";
		case "symbol":
			return "a symbol";
		case "undefined":
			return "undefined";
		default:
			return "an object";
	}
}
