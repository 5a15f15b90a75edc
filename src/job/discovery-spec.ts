import { z } from "zod";
import { userRegexSchema } from "./crawl-spec.js";
import type { ScrapeOptions } from "./schema.js";
import type { TargetOrigin } from "./types.js";

/**
 * `sources: - map: {…}` and `- search: {…}`: URLs found by the service's discovery endpoints
 * (`POST /scraper/map`, `/scraper/search`, docs/service.md, "Map, search and crawl"), fetched as targets. The parameters
 * are the service's own names and limits.
 */
export const MAP_SOURCES = ["sitemap", "commoncrawl", "crawl"] as const;

export const mapRequestSchema = z
	.strictObject({
		domain: z.string().min(1).describe("The site whose URLs are listed, e.g. shop.example"),
		max_urls: z.int().min(1).max(10_000).describe("URLs at most (1–10000)"),
		// The service applies it; checked as every job-file regex is, so one syntax holds across the file.
		url_pattern: userRegexSchema.optional().describe("Only URLs matching this regex (RE2)"),
		sources: z
			.array(z.enum(MAP_SOURCES))
			.min(1)
			.optional()
			.describe("Where the service looks (default sitemap, commoncrawl)"),
		check_if_live: z.boolean().optional().describe("The service checks each URL answers"),
	})
	.describe("The service's map endpoint: a domain's URLs");

export const searchRequestSchema = z
	.strictObject({
		query: z
			.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(10)])
			.describe("A search query, or up to 10"),
		max_urls: z.int().min(1).max(100).optional().describe("Results at most per call (1–100, default 20)"),
		region: z.string().min(2).optional().describe("Search region, e.g. us-en (the default)"),
	})
	.describe("The service's search endpoint: result pages of web searches");

/** A map or search source as the runner gets it. */
export interface DiscoverySpec {
	kind: "map" | "search";
	/** The endpoint's JSON body, as written. */
	request: Record<string, unknown>;
	/** The source's own scrape options, applied over `defaults` to each URL found. */
	options: ScrapeOptions;
	origin: TargetOrigin;
}
