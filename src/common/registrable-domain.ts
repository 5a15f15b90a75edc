import { lazyModule } from "./lazy-module.js";

/** Public-suffix domains (tldts): loaded by the first caller, so a run that never groups hosts skips it. */
const tldts = lazyModule<typeof import("tldts")>("tldts");

/**
 * A memo of hosts' registrable domains (`shop.example.co.uk` → `example.co.uk`), for the features that
 * treat one site's hosts as one (the breaker, adaptive mode). A host with none (an IP address,
 * `localhost`) is its own domain. One public-suffix look-up per host.
 */
export function createDomainLookup(): (host: string) => string {
	const domainOfHost = new Map<string, string>();
	return (host) => {
		let domain = domainOfHost.get(host);
		if (domain === undefined) {
			domain = tldts().getDomain(host) ?? host;
			domainOfHost.set(host, domain);
		}
		return domain;
	};
}

/** A URL's host (its hostname), or the text itself when it does not parse. */
export function hostOfUrl(url: string): string {
	try {
		return new URL(url).hostname;
	} catch {
		return url;
	}
}
