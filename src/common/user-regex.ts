import type { RE2JS } from "re2js";
import { lazyModule } from "./lazy-module.js";

/**
 * Regexes from a job file meet page and service data, where a backtracking engine can take
 * exponential time (`^(\w+\s?)+$` against forty `a`s and a `!`) and hold the thread for good.
 * Every one runs on RE2 (re2js, pure JavaScript): time linear in the text, whatever the pattern.
 * Lazy: a run whose job has no regex never loads it.
 */
const re2js = lazyModule<typeof import("re2js")>("re2js");

/** One match: index 0 the whole match, then the groups (a group that took no part is undefined). */
export type UserRegexMatch = readonly [string, ...Array<string | undefined>];

/** A job file's regex, compiled once (per job, per worker thread), matched in linear time. */
export interface UserRegex {
	/** The pattern as the job file wrote it. */
	readonly source: string;
	/** Whether it matches anywhere in `text`. */
	test(text: string): boolean;
	/** The first match, or null. */
	exec(text: string): UserRegexMatch | null;
	/** Every match, left to right (an empty match steps one character on). */
	matchAll(text: string): Iterable<UserRegexMatch>;
}

/**
 * A pattern RE2 cannot run or that does not compile. The message names the construct and, for
 * lookaround and backreferences, why they are refused.
 */
export class UserRegexError extends Error {
	override readonly name = "UserRegexError";
}

// JavaScript's `\s` (ECMA-262 WhiteSpace and LineTerminator), kept because scraped text is full of
// no-break spaces; RE2's own `\s` is ASCII only. `\S` inside a class needs the complement spelled out.
const JS_SPACE =
	"\\t\\n\\x0B\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
const JS_NON_SPACE =
	"\\x00-\\x08\\x0E-\\x1F\\x21-\\x{9F}\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{FEFE}\\x{FF00}-\\x{10FFFF}";
/** JavaScript's `.`: any character but a line terminator (RE2's stops at `\n` only). */
const JS_DOT = "[^\\n\\r\\x{2028}\\x{2029}]";

const REFUSED_GROUPS: ReadonlyArray<readonly [string, string]> = [
	["(?<=", "lookbehind"],
	["(?<!", "negative lookbehind"],
	["(?=", "lookahead"],
	["(?!", "negative lookahead"],
];

const WHY =
	"job-file regexes use RE2 syntax, which matches in time linear in the text and has no lookaround or backreferences";

function hexEscape(codePoint: number): string {
	return `\\x{${codePoint.toString(16).toUpperCase()}}`;
}

/**
 * The pattern in RE2's syntax, JavaScript's meaning kept where the two differ on something users
 * write (`\s`, `.`, `\uXXXX`, `[^]`, a lone `]`). Throws for what RE2 cannot run.
 */
export function toRe2Syntax(source: string): string {
	let out = "";
	let inClass = false;
	let i = 0;
	while (i < source.length) {
		const char = source[i]!;
		if (char === "\\") {
			const next = source[i + 1];
			if (next === undefined) {
				out += "\\\\";
				i += 1;
				continue;
			}
			if (!inClass && (/[1-9]/.test(next) || (next === "k" && source[i + 2] === "<"))) {
				const end = next === "k" ? source.indexOf(">", i) + 1 || source.length : i + 2;
				throw new UserRegexError(`backreference \`${source.slice(i, end)}\` is not supported: ${WHY}`);
			}
			if (next === "u") {
				const braced = /^\\u\{([0-9A-Fa-f]{1,6})\}/.exec(source.slice(i));
				const four = /^\\u([0-9A-Fa-f]{4})(?:\\u([0-9A-Fa-f]{4}))?/.exec(source.slice(i));
				if (braced) {
					out += hexEscape(Number.parseInt(braced[1]!, 16));
					i += braced[0].length;
					continue;
				}
				if (four) {
					const high = Number.parseInt(four[1]!, 16);
					const low = four[2] === undefined ? null : Number.parseInt(four[2], 16);
					if (low !== null && high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
						out += hexEscape((high - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000);
						i += four[0].length;
					} else {
						out += hexEscape(high);
						i += 6;
					}
					continue;
				}
			}
			if (next === "s") out += inClass ? JS_SPACE : `[${JS_SPACE}]`;
			else if (next === "S") out += inClass ? JS_NON_SPACE : `[^${JS_SPACE}]`;
			else out += char + next;
			i += 2;
			continue;
		}
		if (inClass) {
			if (char === "]") inClass = false;
			// `[` is literal in a JavaScript class; RE2 would read `[:alpha:]` as a POSIX class.
			out += char === "[" ? "\\[" : char;
			i += 1;
			continue;
		}
		if (char === "[") {
			if (source.startsWith("[^]", i)) {
				out += "(?s:.)";
				i += 3;
			} else if (source.startsWith("[]", i)) {
				out += "[^\\x00-\\x{10FFFF}]";
				i += 2;
			} else {
				inClass = true;
				out += "[";
				i += 1;
				if (source[i] === "^") {
					out += "^";
					i += 1;
				}
			}
			continue;
		}
		if (char === "(") {
			const refused = REFUSED_GROUPS.find(([opening]) => source.startsWith(opening, i));
			if (refused) throw new UserRegexError(`${refused[1]} \`${refused[0]}…)\` is not supported: ${WHY}`);
		}
		out += char === "." ? JS_DOT : char === "]" ? "\\]" : char;
		i += 1;
	}
	return out;
}

/**
 * "error parsing regexp: invalid escape sequence: `\c`" → "invalid escape sequence: `\c`". RE2 quotes
 * the translated pattern.
 */
function re2Message(error: unknown, source: string): string {
	const text = (error instanceof Error ? error.message : String(error)).replace(/^error parsing regexp:\s*/, "");
	const quoted = /^(.*?): `([\s\S]*)`$/.exec(text);
	// A quote the user did not write, or one too long for a message, is left out.
	return quoted && (!source.includes(quoted[2]!) || quoted[2]!.length > 100) ? quoted[1]! : text;
}

/**
 * A job file's regex quoted for a message: JSON, cut at `maxChars` with `…`. A message quoting a
 * 2.7 MB pattern whole was one line of 2.7 MB on stderr, burying the `file:line:col` it is there for.
 */
export function quoteUserRegex(source: string, maxChars = 200): string {
	const text = JSON.stringify(source);
	return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/**
 * The longest regex a job file may hold, in characters. RE2 compiles in time that grows with the pattern
 * (0.5 s for 270,000 characters here, 3.6 s to refuse 2.7 million as too large, once per compile): a
 * longer one is refused before it is compiled.
 */
export const MAX_USER_REGEX_CHARS = 262_144;

/** Compile a job file's regex for RE2; throws UserRegexError with what is wrong. */
export function compileUserRegex(source: string): UserRegex {
	if (source.length > MAX_USER_REGEX_CHARS)
		throw new UserRegexError(
			`too long (${source.length.toLocaleString("en-US")} characters, more than the ${MAX_USER_REGEX_CHARS.toLocaleString("en-US")} a job file's regex may have)`,
		);
	const translated = toRe2Syntax(source);
	let compiled: RE2JS;
	try {
		compiled = re2js().RE2JS.compile(translated);
	} catch (error) {
		throw new UserRegexError(re2Message(error, source));
	}
	return {
		source,
		test: (text) => compiled.test(text),
		exec: (text) => compiled.exec(text) as UserRegexMatch | null,
		matchAll: (text) => compiled.matchAll(text) as Iterable<RegExpMatchArray> as Iterable<UserRegexMatch>,
	};
}

/** What makes a job file's regex unusable, or null when it compiles (validation's question). */
export function userRegexProblem(source: string): string | null {
	try {
		compileUserRegex(source);
		return null;
	} catch (error) {
		if (error instanceof UserRegexError) return error.message;
		throw error;
	}
}
