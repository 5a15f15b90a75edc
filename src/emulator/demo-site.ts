/**
 * A small local website to scrape: product pages, generic pages, a page only a browser would see
 * content on, a slow path and error paths. Used by the offline demo, `--sandbox` and the tests.
 *
 * Paths: `/` (index), `/product/1…/product/<pages>`, `/page/<n>` (any n ≥ 1), `/app` (script-rendered),
 * `/large/<n>?kb=K` (product page n padded to about K kilobytes, at most 2048: realistic page sizes for
 * extraction benchmarks), `/slow?ms=N` (answers after N ms, at most 60 s), `/status/<code>` (answers that status),
 * `/redirect` (302 to `/product/1`), `/search` (a form; results rendered by script), `/load-more`
 * (a list that grows on clicks), `/graph/1…/graph/<pages>`, `/graph-redirect/<n>` and `/calendar/<k>` (a link graph to
 * crawl: link-graph.ts), `/robots.txt` and `/sitemap.xml` (an index of the graph's and the products' sitemaps);
 * anything else is a 404 page.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, ListenOptions } from "node:net";
import { checkOptions, normalizeUrl, type OptionKinds } from "../common/index.js";
import { DEFAULT_HOST } from "./defaults.js";
import { loadMorePage, searchPage } from "./demo-interactive-pages.js";
import { calendarPage, graphPage, robotsTxt, sitemapXml } from "./link-graph.js";

/** Options of `startDemoSite`. */
export interface DemoSiteOptions {
	/** Port to listen on; 0 picks a free one. @default 0 */
	readonly port?: number;
	/** Address to bind. @default "127.0.0.1" */
	readonly host?: string;
	/** Number of product pages (`/product/1` … `/product/<pages>`). @default 100 */
	readonly pages?: number;
	/** Delay added to every answer, ms. @default 0 */
	readonly latencyMs?: number;
	/**
	 * Share the port with other demo sites that ask the same (SO_REUSEPORT; where the system has no such
	 * option, the port is taken alone): the shards of a sandbox job, run as separate processes, then
	 * serve one address, so their targets' URLs agree. Closing then lets answers under way finish.
	 * @default false
	 */
	readonly sharedPort?: boolean;
}

/** Each option of `startDemoSite` and the kind of value it takes. */
const DEMO_SITE_OPTIONS = {
	port: "number",
	host: "string",
	pages: "number",
	latencyMs: "number",
	sharedPort: "boolean",
} as const satisfies OptionKinds<DemoSiteOptions>;

/** A running demo website: a shop, a link graph, slow and failing pages, robots.txt and sitemaps to scrape. */
export interface DemoSite {
	/** Base address, e.g. `http://127.0.0.1:41235` (no trailing slash). */
	readonly url: string;
	readonly port: number;
	/** Requests answered so far. */
	requestCount(): number;
	/** Stop listening and drop every connection. */
	close(): Promise<void>;
}

/** Longest `/slow` wait, ms. */
const MAX_SLOW_MS = 60_000;

/** Start the demo website on loopback (a free port unless `port` is given). */
export async function startDemoSite(options: DemoSiteOptions = {}): Promise<DemoSite> {
	checkOptions("startDemoSite", options, DEMO_SITE_OPTIONS);
	const pages = options.pages ?? 100;
	const latencyMs = options.latencyMs ?? 0;
	const host = options.host ?? DEFAULT_HOST;
	let requests = 0;
	const timers = new Set<NodeJS.Timeout>();
	const later = (ms: number, fn: () => void) => {
		if (ms <= 0) {
			fn();
			return;
		}
		const timer = setTimeout(() => {
			timers.delete(timer);
			fn();
		}, ms);
		timers.add(timer);
	};

	const server = createServer({ keepAlive: true, noDelay: true }, (req, res) => {
		requests += 1;
		later(latencyMs, () => answer(req, res, pages, later));
	});
	const listen = (reusePort: boolean) =>
		new Promise<number>((resolve, reject) => {
			server.once("error", reject);
			// `reusePort` (Node 22.12) is not in this version of the types.
			server.listen({ port: options.port ?? 0, host, reusePort } as ListenOptions, () => {
				server.off("error", reject);
				resolve((server.address() as AddressInfo).port);
			});
		});
	const shared = options.sharedPort === true;
	const port = await listen(shared).catch((error: unknown) => {
		// A system without load-balanced SO_REUSEPORT (macOS, Windows) refuses the option itself.
		if (shared && isUnsupported(error)) return listen(false);
		throw error;
	});
	const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
	const dropAll = () => {
		for (const timer of timers) clearTimeout(timer);
		timers.clear();
		server.closeAllConnections();
	};
	return {
		url,
		port,
		requestCount: () => requests,
		close: () =>
			new Promise<void>((resolve) => {
				server.close(() => resolve());
				if (!shared) return dropAll();
				// On a shared port, the answers under way may be another shard's fetches: they finish (a while at most).
				server.closeIdleConnections();
				const force = setTimeout(dropAll, SHARED_CLOSE_GRACE_MS);
				server.once("close", () => clearTimeout(force));
			}),
	};
}

/** How long a demo site on a shared port waits for answers under way when it closes, ms. */
const SHARED_CLOSE_GRACE_MS = 2000;

function isUnsupported(error: unknown): boolean {
	const code = (error as { code?: unknown } | null)?.code;
	return code === "ENOTSUP" || code === "EOPNOTSUPP" || code === "EINVAL" || code === "ERR_INVALID_ARG_VALUE";
}

type Reply =
	| { readonly status: number; readonly html: string }
	| { readonly redirect: string }
	| { readonly slowMs: number };

function answer(
	req: IncomingMessage,
	res: ServerResponse,
	pages: number,
	later: (ms: number, fn: () => void) => void,
): void {
	const base = `http://${req.headers.host ?? "localhost"}`;
	const target = routedTarget(req.url ?? "/");
	const path = target.split("?")[0] ?? "/";
	const text = path === "/robots.txt" ? robotsTxt(base) : sitemapXml(base, path, pages);
	if (text !== null) {
		const type = path === "/robots.txt" ? "text/plain" : "application/xml";
		res.writeHead(200, { "content-type": `${type}; charset=utf-8`, "content-length": Buffer.byteLength(text) });
		res.end(text);
		return;
	}
	const reply = pageFor(target, pages);
	if ("redirect" in reply) {
		res.writeHead(302, { location: reply.redirect, "content-length": 0 });
		res.end();
	} else if ("slowMs" in reply) {
		const html = page("Slow page", `<h1>Slow page</h1><p>Answered after ${reply.slowMs} ms.</p>`);
		later(reply.slowMs, () => send(res, 200, html));
	} else {
		send(res, reply.status, reply.html);
	}
}

/**
 * The request's path and query as the site routes them: percent-encoded unreserved characters decoded
 * (`/product/%31` is `/product/1`), as web servers do and as a run's URL identity does.
 */
function routedTarget(requested: string): string {
	const normalized = normalizeUrl(`http://demo.invalid${requested.startsWith("/") ? requested : `/${requested}`}`);
	if (normalized === null) return requested;
	return normalized.slice("http://demo.invalid".length);
}

function pageFor(target: string, pages: number): Reply {
	const queryStart = target.indexOf("?");
	const path = queryStart < 0 ? target : target.slice(0, queryStart);
	const segments = path.split("/");
	const section = segments[1] ?? "";
	const id = Number(segments[2]);
	const isId = segments.length === 3 && Number.isInteger(id) && id >= 1;

	if (path === "/") return { status: 200, html: indexPage(pages) };
	if (section === "product" && isId && id <= pages) return { status: 200, html: productPage(id) };
	if (section === "page" && isId) return { status: 200, html: genericPage(id) };
	if (section === "large" && isId) {
		const query = new URLSearchParams(queryStart < 0 ? "" : target.slice(queryStart + 1));
		const kb = Math.min(Math.max(Number(query.get("kb") ?? 100) || 100, 1), 2048);
		return { status: 200, html: largeProductPage(id, kb) };
	}
	if (path === "/app") return { status: 200, html: SCRIPT_RENDERED_PAGE };
	if (path === "/search") {
		return { status: 200, html: searchPage(new URLSearchParams(target.slice(queryStart + 1)).get("q"), pages) };
	}
	if (path === "/load-more") return { status: 200, html: loadMorePage() };
	if (path === "/redirect") return { redirect: "/product/1" };
	if (section === "graph" && isId && id <= pages) return { status: 200, html: graphPage(id, pages) };
	if (section === "graph-redirect" && isId) return { redirect: `/graph/${id}` };
	if (section === "calendar" && isId) return { status: 200, html: calendarPage(id) };
	if (section === "status" && isId && id >= 200 && id <= 599) {
		return { status: id, html: page(`Status ${id}`, `<h1>Status ${id}</h1><p>The demo site answered ${id}.</p>`) };
	}
	if (path === "/slow") {
		const query = new URLSearchParams(queryStart < 0 ? "" : target.slice(queryStart + 1));
		return { slowMs: Math.min(Math.max(Number(query.get("ms") ?? 1000) || 0, 0), MAX_SLOW_MS) };
	}
	return { status: 404, html: page("Not found", `<h1>Not found</h1><p>No page at ${escapeHtml(path)}.</p>`) };
}

function send(res: ServerResponse, status: number, html: string): void {
	if (res.destroyed) return;
	res.writeHead(status, { "content-type": "text/html; charset=utf-8", "content-length": Buffer.byteLength(html) });
	res.end(html);
}

function page(title: string, body: string, description?: string): string {
	const meta = description === undefined ? "" : `<meta name="description" content="${escapeHtml(description)}">`;
	return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${title}</title>${meta}</head>
<body>
<header><nav><a href="/">Demo shop</a></nav></header>
<main>
${body}
</main>
<footer><p>scrapejob demo site</p></footer>
</body>
</html>
`;
}

/** Deterministic price for product `id`, so tests and the demo can assert on it. */
export function demoProductPrice(id: number): string {
	return (((id * 7919) % 10_000) / 100 + 1).toFixed(2);
}

const BRANDS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli"] as const;
const TAGS = ["new", "sale", "eco", "bestseller", "gift", "limited"] as const;

/** Deterministic brand and tags of product `id` (JSON-LD and `.tag` elements), for extraction tests. */
export function demoProductBrand(id: number): string {
	return BRANDS[id % BRANDS.length]!;
}
export function demoProductTags(id: number): string[] {
	return TAGS.filter((_, index) => (id + index) % 3 === 0);
}

function productArticle(id: number): string {
	const sku = `DEMO-${String(id).padStart(5, "0")}`;
	const tags = demoProductTags(id)
		.map((tag) => `<span class="tag">${tag}</span>`)
		.join(" ");
	const jsonLd = JSON.stringify({
		"@context": "https://schema.org",
		"@type": "Product",
		name: `Product ${id}`,
		sku,
		brand: { "@type": "Brand", name: demoProductBrand(id) },
		offers: { "@type": "Offer", price: demoProductPrice(id), priceCurrency: "USD" },
	});
	return `<script type="application/ld+json">${jsonLd}</script>
<article class="product" data-id="${id}">
<h1>Product ${id}</h1>
<img class="main" src="/images/product-${id}.jpg" alt="Product ${id}">
<p class="price">$${demoProductPrice(id)}</p>
<p class="description">Product ${id} is a sturdy, well-made item from the demo catalogue, shipped within ${(id % 5) + 1} days.</p>
<p class="tags">${tags}</p>
<ul class="specs"><li>SKU: ${sku}</li><li>Stock: ${(id * 13) % 50}</li></ul>
</article>`;
}

function productPage(id: number): string {
	return page(`Product ${id}`, productArticle(id), `Product ${id} from the demo shop, by ${demoProductBrand(id)}.`);
}

/**
 * A product page padded to about `kb` kilobytes with what real shop pages carry around the product
 * (navigation, related products, reviews, inline scripts), for extraction benchmarks.
 */
function largeProductPage(id: number, kb: number): string {
	const parts: string[] = [];
	let size = 0;
	for (let n = 0; size < kb * 1024; n++) {
		const related = (id + n) % 997;
		const part =
			n % 4 === 3
				? `<script>window.__state_${n} = ${JSON.stringify({ id: related, views: n * 31, flags: ["a", "b"] })};</script>\n`
				: `<div class="card related" data-id="${related}"><a href="/product/${related + 1}"><img src="/images/product-${related}.jpg" alt=""></a>
<h3 class="card-title"><a href="/product/${related + 1}">Product ${related + 1}</a></h3>
<p class="card-price">$${demoProductPrice(related + 1)}</p>
<div class="review"><span class="stars">${(n % 5) + 1}/5</span> <p>Review ${n}: works as described, would buy again. Delivery took ${(n % 7) + 1} days.</p></div></div>\n`;
		parts.push(part);
		size += part.length;
	}
	const nav = Array.from({ length: 40 }, (_, n) => `<li><a href="/page/${n + 1}">Category ${n + 1}</a></li>`).join("");
	return page(
		`Product ${id}`,
		`<nav class="categories"><ul>${nav}</ul></nav>\n${productArticle(id)}\n<section class="related">${parts.join("")}</section>`,
		`Product ${id} from the demo shop, by ${demoProductBrand(id)}.`,
	);
}

function genericPage(id: number): string {
	return page(
		`Page ${id}`,
		`<h1>Page ${id}</h1>
<p>This is generic page number ${id} of the demo site. It has enough text to count as a real page with content.</p>
<p><a href="/page/${id + 1}">Next page</a></p>`,
	);
}

function indexPage(pages: number): string {
	const shown = Math.min(pages, 20);
	const links = Array.from({ length: shown }, (_, i) => `<li><a href="/product/${i + 1}">Product ${i + 1}</a></li>`);
	return page("Demo shop", `<h1>Demo shop</h1>\n<p>${pages} products.</p>\n<ul>${links.join("")}</ul>`);
}

const SCRIPT_RENDERED_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>App</title></head>
<body><div id="root"></div>
<script>document.getElementById("root").textContent = "Rendered by script";</script>
</body>
</html>
`;

function escapeHtml(text: string): string {
	return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
