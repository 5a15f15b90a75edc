/**
 * The service's discovery endpoints (docs/service.md, "Map, search and crawl"): `POST /scraper/map` lists a domain's URLs
 * (from its /sitemap.xml, else the links of its home page), `POST /scraper/search` answers a
 * deterministic result list over the search site (the demo site in tests). Both answer the
 * documented shapes with `credits_used`; bad parameters are 422s.
 */
import { createHash } from "node:crypto";
import { compileUserRegex, type UserRegex } from "../common/index.js";

/** What an endpoint answers: status, JSON body and the credits it charged. */
export interface DiscoveryAnswer {
	readonly status: number;
	readonly body: Record<string, unknown>;
	readonly credits: number;
}

/** Credits per call: the docs' map example shows 2 for a sitemap discovery; search is 1 per query (their own example). */
export const MAP_CREDITS = 2;
export const SEARCH_CREDITS_PER_QUERY = 1;
const MAP_MAX_URLS = 10_000;
const SEARCH_MAX_URLS = 100;
const SEARCH_MAX_QUERIES = 10;
/** Results a search can give per query over the search site (its `/graph/<n>` pages). */
const SEARCH_SITE_PAGES = 100;

type Params = Record<string, unknown>;

function invalid(message: string): DiscoveryAnswer {
	return { status: 422, body: { success: false, error: "Invalid parameters", message }, credits: 0 };
}

export function intIn(value: unknown, min: number, max: number): number | null {
	return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max ? value : null;
}

/** `http://<domain>` for a bare domain; a full address as given, without trailing slashes. */
export function siteBase(domain: string): string {
	return /^https?:\/\//.test(domain) ? domain.replace(/\/+$/, "") : `http://${domain}`;
}

/** A page's text, or null when it cannot be fetched or answers non-2xx (10 s at most). */
export async function fetchText(url: string, signal: AbortSignal): Promise<string | null> {
	try {
		const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) });
		return response.ok ? await response.text() : null;
	} catch {
		return null;
	}
}

function locsOf(xml: string): string[] {
	return [...xml.matchAll(/<loc>\s*([^<\s]+)\s*<\/loc>/g)].map((match) => match[1]!.replaceAll("&amp;", "&"));
}

export async function answerMap(params: Params, signal: AbortSignal, balance: number): Promise<DiscoveryAnswer> {
	const domain = params.domain;
	if (typeof domain !== "string" || domain.trim() === "") return invalid("`domain` is required");
	const maxUrls = intIn(params.max_urls, 1, MAP_MAX_URLS);
	if (maxUrls === null) return invalid(`\`max_urls\` is required: an integer from 1 to ${MAP_MAX_URLS}`);
	// RE2, as the job file's regexes: V8's engine over a nested quantifier held the loop (the run's, in --sandbox).
	let pattern: UserRegex | null = null;
	if (params.url_pattern !== undefined) {
		try {
			pattern = compileUserRegex(String(params.url_pattern));
		} catch {
			return invalid("`url_pattern` is not a valid regular expression");
		}
	}
	if (balance < MAP_CREDITS) {
		return {
			status: 402,
			body: { success: false, error: "Insufficient credits", message: "Not enough credits" },
			credits: 0,
		};
	}
	const base = siteBase(domain.trim());
	const found: Array<{ url: string; source: string }> = [];
	const sitemap = await fetchText(`${base}/sitemap.xml`, signal);
	if (sitemap !== null) {
		// A sitemap index names further sitemaps: one level is followed.
		const pages = sitemap.includes("<sitemapindex")
			? (await Promise.all(locsOf(sitemap).map((loc) => fetchText(loc, signal)))).flatMap((text) => locsOf(text ?? ""))
			: locsOf(sitemap);
		for (const url of pages) found.push({ url, source: "sitemap" });
	} else {
		const home = await fetchText(`${base}/`, signal);
		for (const match of (home ?? "").matchAll(/<a\s[^>]*href="([^"]+)"/g)) {
			try {
				found.push({ url: new URL(match[1]!, `${base}/`).href, source: "crawl" });
			} catch {
				// Not a URL: not a result.
			}
		}
	}
	const results = [...new Map(found.map((item) => [item.url, item])).values()]
		.filter((item) => (pattern ? pattern.test(item.url) : true))
		.slice(0, maxUrls);
	return {
		status: 200,
		body: {
			success: true,
			domain,
			discovered_count: results.length,
			results,
			credits_used: MAP_CREDITS,
			credits_remaining: balance - MAP_CREDITS,
		},
		credits: MAP_CREDITS,
	};
}

export function answerSearch(params: Params, searchSite: string, balance: number): DiscoveryAnswer {
	const raw = params.query;
	const queries = typeof raw === "string" ? [raw] : Array.isArray(raw) ? raw : null;
	if (!queries || queries.length === 0 || queries.some((query) => typeof query !== "string" || query.trim() === "")) {
		return invalid("`query` is required: a string or a list of strings");
	}
	if (queries.length > SEARCH_MAX_QUERIES) return invalid(`at most ${SEARCH_MAX_QUERIES} queries per call`);
	const maxUrls = params.max_urls === undefined ? 20 : intIn(params.max_urls, 1, SEARCH_MAX_URLS);
	if (maxUrls === null) return invalid(`\`max_urls\` must be an integer from 1 to ${SEARCH_MAX_URLS}`);
	const cost = SEARCH_CREDITS_PER_QUERY * queries.length;
	if (balance < cost) {
		return {
			status: 402,
			body: { success: false, error: "Insufficient credits", message: "Not enough credits" },
			credits: 0,
		};
	}
	const domain = new URL(searchSite).host;
	const results: Array<{ domain: string; url: string; title: string; query: string }> = [];
	for (const query of queries as string[]) {
		// The same query always finds the same pages: consecutive graph pages from a hash of the query.
		const start = createHash("sha256").update(query).digest().readUInt32BE(0) % SEARCH_SITE_PAGES;
		for (let index = 0; index < Math.min(maxUrls, SEARCH_SITE_PAGES); index++) {
			const page = ((start + index) % SEARCH_SITE_PAGES) + 1;
			results.push({ domain, url: `${searchSite}/graph/${page}`, title: `Graph page ${page}`, query });
		}
	}
	return {
		status: 200,
		body: {
			success: true,
			queries,
			discovered_count: results.length,
			results,
			credits_used: cost,
			credits_remaining: balance - cost,
		},
		credits: cost,
	};
}
