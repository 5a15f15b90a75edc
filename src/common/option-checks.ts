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
 * (`maxCredit`) would otherwise be ignored, and the run paid for with the default it meant to change.
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
