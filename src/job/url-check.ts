import { checkScrapeUrl, PROBLEMS } from "../common/index.js";
import { quoteValue } from "./problems.js";

/**
 * The longest target URL: 64 KiB, the longest line a source file may hold, so a URL written in the job
 * file is held to what a URL list is. Real addresses stay far below it (servers refuse ~8 KiB).
 */
export const MAX_TARGET_URL_CHARS = 64 * 1024;

/**
 * The service's own `url` rules (docs/service.md, "Parameter rules", via `checkScrapeParams`), with its exact problem text
 * first and a hint after it. One rule is ours: whitespace. The service would percent-encode a
 * space in a path, but in a URL list a space nearly always means two URLs ran together or a
 * stray character, so it is refused before a credit is spent.
 */
export function checkTargetUrl(url: unknown): string | undefined {
	if (typeof url === "string" && url.length > MAX_TARGET_URL_CHARS)
		return `${PROBLEMS.urlFormat} (${url.length.toLocaleString("en-US")} characters, more than the ${MAX_TARGET_URL_CHARS.toLocaleString("en-US")} a target URL may have; got ${quoteValue(url)})`;
	const problem = checkScrapeUrl(url);
	if (problem) {
		if (typeof url !== "string" || url === "") return problem;
		return `${problem} (${urlHint(url)}; got ${quoteValue(url)})`;
	}
	if (typeof url === "string" && /\s/.test(url)) {
		const hint = /\s/.test(url.trim())
			? "it contains whitespace; encode a space as %20"
			: "it has leading or trailing whitespace";
		return `${PROBLEMS.urlFormat} (${hint}; got ${quoteValue(url)})`;
	}
	return undefined;
}

function urlHint(url: string): string {
	if (url !== url.trim()) return "it has leading or trailing whitespace";
	if (/\s/.test(url)) return "it contains whitespace; encode a space as %20";
	// `host:8080/path` is a missing prefix, not a scheme called "host".
	const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):(?!\d)/.exec(url)?.[1]?.toLowerCase();
	if (scheme && scheme !== "http" && scheme !== "https") {
		return `only http:// and https:// URLs can be scraped, not ${scheme}:`;
	}
	if (!scheme || !/^https?:\/\//i.test(url)) return "it needs the http:// or https:// prefix";
	return "not a valid URL";
}
