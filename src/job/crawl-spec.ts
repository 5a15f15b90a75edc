import { z } from "zod";

/** `crawl:` as the job file writes it (shared/design.md, "Crawl"). */
export const CRAWL_SCOPES = ["host", "domain", "any"] as const;
export type CrawlScope = (typeof CRAWL_SCOPES)[number];
/** `crawl.robots`: whether each crawled host's robots.txt decides which discovered links are followed. */
export const ROBOTS_POLICIES = ["obey", "ignore"] as const;
export type RobotsPolicy = (typeof ROBOTS_POLICIES)[number];

export const DEFAULT_CRAWL_MAX_DEPTH = 3;
export const DEFAULT_CRAWL_MAX_PAGES = 10_000;

/** A regex written in the job: checked here so a bad one is a validation error, not a crash mid-run. */
const regexSchema = z.string().refine(
	(source) => {
		try {
			new RegExp(source);
			return true;
		} catch {
			return false;
		}
	},
	{ error: (issue) => `not a valid regular expression: ${JSON.stringify(issue.input)}` },
);

export const crawlSchema = z
	.strictObject({
		max_depth: z
			.int()
			.min(0)
			.default(DEFAULT_CRAWL_MAX_DEPTH)
			.describe("Links followed at most this many steps from a seed (seeds are depth 0; default 3)"),
		max_pages: z
			.int()
			.positive()
			.default(DEFAULT_CRAWL_MAX_PAGES)
			.describe("Pages fetched at most, seeds included (default 10000); --resume with a larger value continues"),
		scope: z
			.enum(CRAWL_SCOPES)
			.default("host")
			.describe(
				"Which links are followed: host (a seed's host, port included), domain (a seed's registrable domain), any",
			),
		include: z
			.array(regexSchema)
			.default([])
			.describe("Regexes over the absolute URL: when given, a link must match one of them"),
		exclude: z
			.array(regexSchema)
			.default([])
			.describe("Regexes over the absolute URL: a link matching one is not followed"),
		sitemaps: z
			.boolean()
			.default(false)
			.describe(
				"Also seed from each seed host's robots.txt Sitemap: lines and /sitemap.xml (fetched through the service)",
			),
		robots: z
			.enum(ROBOTS_POLICIES)
			.default("obey")
			.describe(
				"obey (default): each crawled host's robots.txt (fetched through the service once per run, its credits counted; group scrapejob, else *) decides which discovered links are followed, and its Crawl-delay raises per_host_delay; listed seeds are always fetched. ignore: robots.txt is not read for links",
			),
	})
	.describe("Follow links from the job's targets and sources (the seeds): each URL fetched at most once per run");

/** The runner's view of `crawl:`. */
export interface CrawlSpec {
	maxDepth: number;
	maxPages: number;
	scope: CrawlScope;
	include: RegExp[];
	exclude: RegExp[];
	sitemaps: boolean;
	/** `robots`: obey (default) or ignore each host's robots.txt for discovered links. */
	robots: RobotsPolicy;
}

export function normalizeCrawl(parsed: z.output<typeof crawlSchema> | undefined): CrawlSpec | undefined {
	if (!parsed) return undefined;
	return {
		maxDepth: parsed.max_depth,
		maxPages: parsed.max_pages,
		scope: parsed.scope,
		include: parsed.include.map((source) => new RegExp(source)),
		exclude: parsed.exclude.map((source) => new RegExp(source)),
		sitemaps: parsed.sitemaps,
		robots: parsed.robots,
	};
}
