/**
 * Patterns of the scenario file: a plain string matches as a substring; `/source/flags` is a regular
 * expression. A string that starts and ends with `/` is therefore read as a regex.
 */
export type UrlPattern = (subject: string) => boolean;

const REGEX_FORM = /^\/(.+)\/([dgimsuvy]*)$/s;

/** Throws a `SyntaxError` naming the pattern when the regex form does not compile. */
export function compilePattern(pattern: string): UrlPattern {
	const regex = REGEX_FORM.exec(pattern);
	if (regex) {
		// The global and sticky flags make `test` stateful; a pattern must answer the same every time.
		const flags = (regex[2] ?? "").replace(/[gy]/g, "");
		const compiled = new RegExp(regex[1] ?? "", flags);
		return (subject) => compiled.test(subject);
	}
	return (subject) => subject.includes(pattern);
}

export function isRegexPattern(pattern: string): boolean {
	return REGEX_FORM.test(pattern);
}
