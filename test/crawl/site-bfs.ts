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

/** Every URL the crawl should fetch, with its shortest depth. */
export async function siteBfs(options: BfsOptions): Promise<Map<string, number>> {
	const depth = new Map<string, number>();
	let level = options.seeds.map((seed) => normalized(seed, seed)!.href);
	for (const seed of level) depth.set(seed, 0);
	for (let d = 0; level.length > 0 && d < options.maxDepth; d++) {
		const next: string[] = [];
		for (const url of level) {
			const response = await fetch(url);
			const html = await response.text();
			if (!response.ok) continue;
			for (const link of linksOf(html, url)) {
				if (depth.has(link) || !options.follows(new URL(link))) continue;
				depth.set(link, d + 1);
				next.push(link);
			}
		}
		level = next;
	}
	return depth;
}
