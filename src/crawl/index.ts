/**
 * Crawling (`crawl:`): the job's targets are seeds; links of fetched html pages are normalized,
 * scoped, journalled to `frontier.jsonl` and fed back as targets, each URL fetched at most once.
 *
 * Map: normalize-url (one spelling per page) → link-scope (host | domain | any) → frontier-file
 * (the journalled frontier, read through a cursor; depth-index: its entries by depth) → sitemaps
 * (robots.txt and sitemap files, streamed by sitemap-stream, journalled per file) → crawler (seeds, then
 * pages lowest depth first, fed continuously as outstanding-pages says a depth is due; seed-profiles:
 * the seeds' options; dedupe sets).
 */

export { createUrlKeys, type UrlKeys } from "../common/index.js";
export {
	type Crawler,
	type CrawlerOptions,
	type CrawlSummary,
	createCrawler,
	journalledCrawlCredits,
} from "./crawler.js";
export { type CrawlExtraFetches, crawlExtraFetches } from "./extra-fetches.js";
export { FRONTIER_FILE, type FrontierEntry, isFrontierEntry, readLandings } from "./frontier-file.js";
export { createLinkScope, type LinkScope } from "./link-scope.js";
export { normalizeUrl, withSeedCredentials } from "./normalize-url.js";
export { createRobots, type Robots, readRobotsBody } from "./robots.js";
export { ROBOTS_MAX_BYTES } from "./robots-rules.js";
export { hasUnreadLinks, inboxName, openShardInbox, type ShardInbox, shardIsIdle } from "./shard-inbox.js";
export { SITEMAP_MAX_BYTES, SITEMAP_MAX_URLS, type SitemapBounds } from "./sitemap-stream.js";
export {
	createSitemapReader,
	MAX_SITEMAP_FILES,
	SITEMAP_BODIES_DIR,
	type SitemapFetch,
	type SitemapFetchResult,
} from "./sitemaps.js";
