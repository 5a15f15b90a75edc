/**
 * The test's own answer to "which pages should a crawl find": a breadth-first search that reads the
 * demo site directly over HTTP (no scrapejob code), with its own link parsing and the documented
 * normalization (fragment dropped, query sorted by name).
 */
export interface BfsOptions {
	readonly seeds: readonly string[];
	readonly maxDepth: number;
	/** Whether a normalized URL is followed (scope, include, exclude). */
	readonly follows: (url: URL) => boolean;
}

function normalized(href: string, base: string): URL | null {
	let url: URL;
	try {
		url = new URL(href, base);
	} catch {
		return null;
	}
	if (url.protocol !== "http:" && url.protocol !== "https:") return null;
	url.hash = "";
	url.searchParams.sort();
	return url;
}

function linksOf(html: string, pageUrl: string): string[] {
	const base = /<base href="([^"]*)"/.exec(html)?.[1];
	const resolveAgainst = base ? new URL(base, pageUrl).href : pageUrl;
	const hrefs = [...html.matchAll(/<a href="([^"]*)"/g), ...html.matchAll(/<link rel="next" href="([^"]*)"/g)];
	return hrefs
		.map((match) => match[1]!)
		.map((href) => normalized(href, resolveAgainst)?.href ?? "")
		.filter(Boolean);
}

/**
 * What the crawl should fetch. `pages`: URL → shortest depth. A redirect's final address counts as
 * fetched by the page that redirected: it is not fetched again unless it was already due (a lower
 * level). `optional`: final addresses on the redirect's level or the next, with the depth they would be
 * fetched at — the crawl may already have handed them out when the redirect's answer came back (the
 * next level starts while the last pages of one are in flight), so either way is right.
 */
export interface BfsResult {
	readonly pages: Map<string, number>;
	readonly optional: ReadonlyMap<string, number>;
	/** Final addresses of redirects that the crawl must not fetch on their own. */
	readonly landed: ReadonlySet<string>;
}

export async function siteBfs(options: BfsOptions): Promise<BfsResult> {
	const depth = new Map<string, number>();
	/** Final addresses of redirects, fetched only as the page that redirected there. */
	const landed = new Set<string>();
	const optional = new Map<string, number>();
	let level = options.seeds.map((seed) => normalized(seed, seed)!.href);
	for (const seed of level) depth.set(seed, 0);
	for (let d = 0; level.length > 0; d++) {
		const next: string[] = [];
		for (const url of level) {
			const response = await fetch(url);
			const html = await response.text();
			const final = normalized(response.url, response.url)!.href;
			if (final !== url) {
				const known = depth.get(final);
				if (known === undefined || known === d + 1) {
					if (known === d + 1) optional.set(final, d + 1);
					depth.set(final, d);
					landed.add(final);
				} else if (known === d) optional.set(final, d);
			}
			if (!response.ok || d >= options.maxDepth) continue;
			for (const link of linksOf(html, final)) {
				if (depth.has(link) || !options.follows(new URL(link))) continue;
				depth.set(link, d + 1);
				next.push(link);
			}
		}
		level = next.filter((url) => !landed.has(url));
	}
	for (const url of landed) depth.delete(url);
	return { pages: depth, optional, landed };
}

/** The crawl's records fetched what the BFS says: each page once, at its shortest depth. */
export function expectBfsPages(
	records: ReadonlyArray<{ url: string; depth?: number | null }>,
	bfs: BfsResult,
	expect: (value: unknown) => { toEqual(expected: unknown): void },
): void {
	const crawled = new Map(records.map((record) => [record.url, record.depth ?? -1]));
	expect(crawled.size).toEqual(records.length);
	const sure = (pages: Map<string, number>) => new Map([...pages].filter(([url]) => !bfs.optional.has(url)));
	expect(sure(crawled)).toEqual(sure(bfs.pages));
	for (const [url, depth] of bfs.optional) {
		if (crawled.has(url)) expect(crawled.get(url)).toEqual(depth);
	}
}
