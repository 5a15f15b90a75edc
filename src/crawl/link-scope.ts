import { lazyModule } from "../common/index.js";
import type { CrawlScope } from "../job/index.js";

/** Public-suffix domains, loaded by the first crawl that asks (see `lazyModule`). */
const tldts = lazyModule<typeof import("tldts")>("tldts");

/**
 * Which links a crawl follows: `host` (a seed's host, port included), `domain` (a seed's registrable
 * domain, from the public-suffix list via tldts: `shop.example.co.uk` and `www.example.co.uk` are one
 * domain; an IP address or `localhost` is its own), or `any`. The seeds' hosts are few; they are held.
 */
export interface LinkScope {
	/** A seed's URL widens the scope (call for every seed). */
	addSeed(url: URL): void;
	allows(url: URL): boolean;
}

export function createLinkScope(scope: CrawlScope): LinkScope {
	const allowed = new Set<string>();
	const keyOf = (url: URL): string => (scope === "host" ? url.host : (tldts().getDomain(url.hostname) ?? url.hostname));
	return {
		addSeed(url) {
			if (scope !== "any") allowed.add(keyOf(url));
		},
		allows(url) {
			return scope === "any" || allowed.has(keyOf(url));
		},
	};
}
