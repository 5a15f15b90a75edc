/**
 * Show enough of a secret to tell two apart (`ab…yz`), never enough to use it.
 * Secrets of 6 characters or fewer are fully hidden.
 */
export function maskSecret(secret: string | null | undefined): string {
	if (secret === null || secret === undefined || secret === "") return "";
	if (secret.length <= 6) return "…";
	return `${secret.slice(0, 2)}…${secret.slice(-2)}`;
}

/**
 * A URL as outputs may show it: credentials in its authority (`user:pass@`) replaced by `***@`. The
 * fetch keeps the real URL; records, CSV, `--dry-run` and logs get this one. Cheap when there are none.
 * An address typed without its scheme (`user:pass@host:port`) loses all before its last `@`: the
 * message refusing it must not show its password either.
 */
export function maskUrlCredentials(url: string): string {
	const at = url.indexOf("@");
	if (at < 0) return url;
	const start = url.indexOf("//");
	// No scheme: where its authority ends is a guess (a password may hold a `/`): all before the last `@` goes.
	if (start < 0 || at < start) return `***${url.slice(url.lastIndexOf("@"))}`;
	const pathStart = url.slice(start + 2).search(/[/?#]/);
	const authorityEnd = pathStart < 0 ? url.length : start + 2 + pathStart;
	if (at > authorityEnd) return url;
	const lastAt = url.lastIndexOf("@", authorityEnd);
	return `${url.slice(0, start + 2)}***${url.slice(lastAt)}`;
}

/**
 * Every `scheme://user:pass@` in a text masked (`//***@`), whether or not the URL around it parses: a
 * message quoting a bad source row or a bad flag value must not carry its password.
 */
export function maskCredentialsInText(text: string): string {
	return text.includes("@") ? text.replace(/\/\/[^\s/?#]*@/g, "//***@") : text;
}

/**
 * A URL with its credentials (`user:pass@`) removed, for what is journalled as an address to fetch
 * (a map/search answer in discovery.jsonl): unlike `maskUrlCredentials`, the result is still a URL to use.
 */
export function stripUrlCredentials(url: string): string {
	const masked = maskUrlCredentials(url);
	return masked === url ? url : masked.replace("//***@", "//");
}

/**
 * Replace every occurrence of the given secrets in a text. Used on anything that might echo a
 * request back (error bodies, URLs) before it reaches a log, an output file or a message.
 */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | null | undefined>): string {
	let result = text;
	for (const secret of secrets) {
		if (secret && secret.length >= 4) result = result.split(secret).join("[redacted]");
	}
	return result;
}
