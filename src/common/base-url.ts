import { UsageError } from "./errors.js";
import { maskUrlCredentials } from "./secrets.js";

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

export function isLoopbackHost(hostname: string): boolean {
	if (LOOPBACK_HOSTS.has(hostname)) return true;
	return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * Parse a base address of the service. The service is HTTPS-only, so plain `http://` is refused
 * unless it points at this machine (the emulator). Keys must never ride in a URL, so any query
 * string or credentials in the base address are refused too. Trailing slashes are dropped so
 * paths can be appended with a single `/`.
 */
export function parseBaseUrl(raw: string, what: string): URL {
	// `localhost:8700` parses as a URL of scheme "localhost:", `127.0.0.1:8700` not at all: either way the
	// scheme was left out, and saying so beats "must use https:// (got localhost:)".
	if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(raw.trim()))
		throw new UsageError(
			`${what} needs its scheme: https://… (or http:// on loopback, as the emulator's http://127.0.0.1:8700); got ${JSON.stringify(maskUrlCredentials(raw))}`,
		);
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		throw new UsageError(`${what} is not a valid URL: ${JSON.stringify(maskUrlCredentials(raw))}`);
	}
	if (url.protocol !== "https:" && url.protocol !== "http:") {
		throw new UsageError(`${what} must use https:// (got ${url.protocol})`);
	}
	if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
		throw new UsageError(
			`${what} uses plain http:// for ${url.hostname}; the service is HTTPS-only (http:// is allowed only for loopback addresses such as the emulator)`,
		);
	}
	if (url.username || url.password || url.search) {
		throw new UsageError(`${what} must not carry credentials or a query string; keys are sent in headers`);
	}
	url.pathname = url.pathname.replace(/\/+$/, "");
	url.hash = "";
	return url;
}

/** Join a parsed base address and a path that starts with `/`. */
export function joinUrl(base: URL, path: string): string {
	// A parsed URL's pathname is never empty ("https://host" reads back as "/"), so trim it here too.
	return `${base.origin}${base.pathname.replace(/\/+$/, "")}${path}`;
}
