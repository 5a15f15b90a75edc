import type { Job } from "../job/index.js";
import { streamTargetBatches } from "../job/index.js";
import { MAX_SITEMAP_FILES } from "./sitemaps.js";

/**
 * A crawl's robots.txt and sitemap fetches, known before it runs: one robots.txt per seed origin
 * (`robots: obey`, or `sitemaps: true` for its `Sitemap:` lines) and at most MAX_SITEMAP_FILES sitemap
 * files per seed origin. Links to other origins in scope add a robots.txt each, not known in advance.
 */
export interface CrawlExtraFetches {
	readonly seedOrigins: number;
	/** Fetches per seed origin at most: its robots.txt, and its sitemap files. */
	readonly perOrigin: number;
}

/** The seeds' distinct origins and what a crawl fetches per origin besides pages; null when nothing (or no crawl). */
export async function crawlExtraFetches(job: Job): Promise<CrawlExtraFetches | null> {
	const crawl = job.crawl;
	if (!crawl) return null;
	const perOrigin = (crawl.robots === "obey" || crawl.sitemaps ? 1 : 0) + (crawl.sitemaps ? MAX_SITEMAP_FILES : 0);
	if (perOrigin === 0) return null;
	const origins = new Set<string>();
	for await (const batch of streamTargetBatches(job)) {
		for (const target of batch) {
			try {
				origins.add(new URL(target.url).origin);
			} catch {
				// Not a URL the crawl can fetch: no robots.txt either.
			}
		}
	}
	return { seedOrigins: origins.size, perOrigin };
}
