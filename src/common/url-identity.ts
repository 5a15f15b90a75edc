/**
 * A page's identity (docs/behaviour.md, "One URL identity"): one spelling per page, so a page listed or linked as `HTTP://Example.com:80/a?b=2&a=1#top`
 * and as `http://example.com/a?a=1&b=2` is one target — one id, one fetch, one shard, one freshness
 * entry, in a URL list as in a crawl. The WHATWG URL parser (the one browsers use) lower-cases the
 * scheme and host, drops the default port, resolves `.` and `..`, makes an empty path `/` and
 * percent-encodes what must be; on top of it:
 * - percent-encoding follows RFC 3986 §6.2.2 (https://www.rfc-editor.org/rfc/rfc3986#section-6.2.2):
 *   hex digits in upper case, unreserved characters decoded (`%7E` → `~`, `%41` → `A`, `%31` → `1`),
 *   anything else (`%2F`, `%26`, `%3D`…) kept encoded, since decoding it would change the URL's meaning;
 * - userinfo (`user:pass@`) is dropped: it is not part of the page's identity and never written to a
 *   file (the fetch gets it back from its seed, see `withSeedCredentials`);
 * - the fragment is dropped (the server never sees it);
 * - the query's parameters are sorted by name (stable: repeated names keep their order; an empty query
 *   `?` is dropped). RFC 3986 leaves the query as written; sorted, two spellings that differ only in
 *   parameter order (a list exported by one tool, links written by another) are paid once, and the
 *   crawl's journalled ids of earlier versions, which sorted, stay what they were.
 *
 * Trailing slash rule: paths are kept as written (`/docs` and `/docs/` are two pages, since servers
 * may answer them differently); only the empty path becomes `/`, as the parser does.
 */
export function normalizeUrl(href: string): string | null {
	let url: URL;
	try {
		url = new URL(href);
	} catch {
		return null;
	}
	if (url.protocol !== "http:" && url.protocol !== "https:") return null;
	const path = normalizePercentEncoding(url.pathname);
	let query = url.search.length <= 1 ? "" : normalizePercentEncoding(url.search.slice(1));
	if (query.includes("&")) {
		const pairs = query.split("&").filter((pair) => pair !== "");
		// Sorted by the name only (the raw, still-encoded text), stable for repeated names.
		const named = pairs.map((pair, index) => ({ pair, index, name: pair.split("=", 1)[0] ?? "" }));
		named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.index - b.index));
		query = named.map((entry) => entry.pair).join("&");
	}
	return `${url.protocol}//${url.host}${path}${query === "" ? "" : `?${query}`}`;
}

const PERCENT_ENCODED = /%([0-9a-fA-F]{2})/g;

/** RFC 3986 §2.3: the characters that never need encoding. */
function isUnreserved(code: number): boolean {
	return (
		(code >= 0x41 && code <= 0x5a) || // A-Z
		(code >= 0x61 && code <= 0x7a) || // a-z
		(code >= 0x30 && code <= 0x39) || // 0-9
		code === 0x2d || // -
		code === 0x2e || // .
		code === 0x5f || // _
		code === 0x7e // ~
	);
}

function normalizePercentEncoding(text: string): string {
	if (!text.includes("%")) return text;
	return text.replace(PERCENT_ENCODED, (_match, hex: string) => {
		const code = Number.parseInt(hex, 16);
		return isUnreserved(code) ? String.fromCharCode(code) : `%${hex.toUpperCase()}`;
	});
}

/** The identity of a target's URL: `normalizeUrl`, or the text as written when it is no http(s) URL. */
export function urlIdentity(href: string): string {
	return normalizeUrl(href) ?? href;
}
