import { z } from "zod";
import { compileUserRegex, quoteUserRegex, type UserRegex, userRegexProblem } from "../common/index.js";

/** `crawl:` as the job file writes it (docs/guides/crawling.md). */
export const CRAWL_SCOPES = ["host", "domain", "any"] as const;
export type CrawlScope = (typeof CRAWL_SCOPES)[number];
/** `crawl.robots`: whether each crawled host's robots.txt decides which discovered links are followed. */
export const ROBOTS_POLICIES = ["obey", "ignore"] as const;
export type RobotsPolicy = (typeof ROBOTS_POLICIES)[number];

export const DEFAULT_CRAWL_MAX_DEPTH = 3;
export const DEFAULT_CRAWL_MAX_PAGES = 10_000;

/**
 * A regex written in the job, in RE2 syntax (it meets every discovered URL, so it must match in linear
 * time): checked here so a bad one is a validation error, not a crash mid-run.
 */
export const userRegexSchema = z.string().superRefine((source, context) => {
	const problem = userRegexProblem(source);
	if (problem !== null)
		context.addIssue({ code: "custom", message: `regex ${quoteUserRegex(source)} does not compile: ${problem}` });
});

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
			.array(userRegexSchema)
			.default([])
			.describe("Regexes (RE2) over the absolute URL: when given, a link must match one of them"),
		exclude: z
			.array(userRegexSchema)
			.default([])
			.describe("Regexes (RE2) over the absolute URL: a link matching one is not followed"),
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
				"obey (default): each crawled host's robots.txt (fetched through the service at most once a day for the job — a copy a run stored within 24 hours is read instead — its credits counted; group scrapejob, else *) decides which discovered links are followed, and its Crawl-delay raises per_host_delay; listed seeds are always fetched. ignore: robots.txt is not read for links",
			),
	})
	.describe("Follow links from the job's targets and sources (the seeds): each URL fetched at most once per run");

/** The runner's view of `crawl:`. */
export interface CrawlSpec {
	maxDepth: number;
	maxPages: number;
	scope: CrawlScope;
	include: UserRegex[];
	exclude: UserRegex[];
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
		include: parsed.include.map(compileUserRegex),
		exclude: parsed.exclude.map(compileUserRegex),
		sitemaps: parsed.sitemaps,
		robots: parsed.robots,
	};
}
