/**
 * `crawl.sitemaps: true`: a seed host's robots.txt `Sitemap:` lines and its `/sitemap.xml`, sitemap
 * index files followed (at most `MAX_SITEMAP_FILES` files per host, so a sitemap loop or a giant index
 * cannot run away). Every file is fetched through the service by `fetchText` (it costs credits).
 */
export const MAX_SITEMAP_FILES = 50;

/** A document fetched through the service: its text, or null when it failed or is not there. */
export type FetchText = (url: string) => Promise<string | null>;

export function sitemapLinesOf(robots: string): string[] {
	const found: string[] = [];
	for (const line of robots.split(/\r?\n/)) {
		const match = /^\s*sitemap\s*:\s*(\S+)/i.exec(line);
		if (match) found.push(match[1]!);
	}
	return found;
}

function locsOf(xml: string): string[] {
	return [...xml.matchAll(/<loc>\s*([^<\s]+)\s*<\/loc>/gi)].map((match) =>
		match[1]!.replaceAll("&amp;", "&").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"'),
	);
}

/** Page URLs the host's sitemaps list (not yet normalized or scoped: the caller does that). */
export async function sitemapPages(origin: string, fetchText: FetchText): Promise<string[]> {
	const robots = await fetchText(`${origin}/robots.txt`);
	const queue = [...new Set([...(robots ? sitemapLinesOf(robots) : []), `${origin}/sitemap.xml`])];
	const fetched = new Set<string>();
	const pages: string[] = [];
	while (queue.length > 0 && fetched.size < MAX_SITEMAP_FILES) {
		const url = queue.shift()!;
		if (fetched.has(url)) continue;
		fetched.add(url);
		const xml = await fetchText(url);
		if (xml === null) continue;
		if (/<sitemapindex[\s>]/i.test(xml)) queue.push(...locsOf(xml));
		else pages.push(...locsOf(xml));
	}
	return pages;
}
