/**
 * One spelling per page, so a page linked as `HTTP://Example.com:80/a?b=2&a=1#top` and as
 * `http://example.com/a?a=1&b=2` is fetched once. The WHATWG URL parser (the one browsers use)
 * lower-cases the scheme and host, drops the default port, resolves `.` and `..` and percent-encodes
 * what must be; on top of it the fragment is dropped and the query's parameters are sorted by name
 * (stable: repeated names keep their order; an empty query `?` is dropped).
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
	url.hash = "";
	const query = url.search;
	if (query.length <= 1) url.search = "";
	else if (query.includes("&")) {
		const pairs = query
			.slice(1)
			.split("&")
			.filter((pair) => pair !== "");
		// Sorted by the name only (the raw, still-encoded text), stable for repeated names.
		const named = pairs.map((pair, index) => ({ pair, index, name: pair.split("=", 1)[0] ?? "" }));
		named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.index - b.index));
		url.search = named.map((entry) => entry.pair).join("&");
	}
	return url.href;
}
