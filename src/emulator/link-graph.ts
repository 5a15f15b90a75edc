/**
 * A generated website to crawl: `/graph/<n>` for n in 1…pages, each linking to a few others picked
 * deterministically (so the graph has cycles and long chains), plus what real sites throw at a
 * crawler — the same page spelled differently (query order, fragments, `./` paths, upper-case host),
 * an endless calendar (`/calendar/<k>` always links to `/calendar/<k+1>`), redirects
 * (`/graph-redirect/<n>` answers 302 to `/graph/<n>`), a `<base href>`, `<link rel=next>`, dead links
 * (404) and links off the site. Tests compute the pages a crawl should find with their own BFS over
 * the HTML served here.
 */

/** The hrefs of page n of a graph of `pages` pages, as written in its HTML. */
export function graphLinks(n: number, pages: number): string[] {
	const pick = (step: number) => ((n * step + 7) % pages) + 1;
	const links = [`/graph/${pick(7)}`, `./${pick(13)}`, `/graph/${pick(31)}?b=2&a=1#section`];
	if (n < pages) links.push(`/graph/${n + 1}`);
	if (n % 5 === 0) links.push(`/calendar/${n}`);
	if (n % 7 === 0) links.push(`/graph-redirect/${pick(3)}`);
	if (n % 11 === 0) links.push(`/graph/${pages + n}`); // a dead link: 404
	if (n % 3 === 0) links.push(`http://offsite.invalid/from/${n}`, "mailto:someone@example.com");
	return links;
}

function body(title: string, inner: string, head = ""): string {
	return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>${head}</head><body>${inner}</body></html>`;
}

/** Page n: its links as anchors; every fourth page names its successor with `<link rel=next>` instead of an anchor. */
export function graphPage(n: number, pages: number): string {
	const links = graphLinks(n, pages);
	const viaLinkNext = n % 4 === 0 && n < pages;
	const anchors = links
		.filter((href) => !(viaLinkNext && href === `/graph/${n + 1}`))
		.map((href) => `<a href="${href}">${href}</a>`)
		.join(" ");
	const head = viaLinkNext ? `<link rel="next" href="/graph/${n + 1}">` : "";
	// Relative links resolve against the <base href>, which names the graph's folder.
	return body(`Graph page ${n}`, `<h1>Graph page ${n}</h1><p>${anchors}</p>`, `<base href="/graph/">${head}`);
}

/** A month of the endless calendar: always one more. */
export function calendarPage(k: number): string {
	return body(`Calendar ${k}`, `<h1>Month ${k}</h1><a href="/calendar/${k + 1}">next month</a>`);
}

/** `/robots.txt`: names the sitemap index, as sites do. */
export function robotsTxt(base: string): string {
	return `User-agent: *\nAllow: /\nSitemap: ${base}/sitemap.xml\n`;
}

/** `/sitemap.xml`: an index of two sitemaps, `/sitemap-graph.xml` (every graph page) and `/sitemap-products.xml`. */
export function sitemapXml(base: string, path: string, pages: number): string | null {
	const urlset = (urls: string[]) =>
		`<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls.map((url) => `<url><loc>${url}</loc></url>`).join("\n")}\n</urlset>\n`;
	if (path === "/sitemap.xml") {
		const maps = ["/sitemap-graph.xml", "/sitemap-products.xml"].map(
			(name) => `<sitemap><loc>${base}${name}</loc></sitemap>`,
		);
		return `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${maps.join("\n")}\n</sitemapindex>\n`;
	}
	const numbers = Array.from({ length: pages }, (_, index) => index + 1);
	if (path === "/sitemap-graph.xml") return urlset(numbers.map((n) => `${base}/graph/${n}`));
	if (path === "/sitemap-products.xml") return urlset(numbers.map((n) => `${base}/product/${n}`));
	return null;
}
