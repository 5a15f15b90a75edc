import { isLoopbackHost } from "../common/index.js";
import { jsonObject } from "./scraper-response.js";
import { defaultDispatcher, send } from "./transport.js";

/** Which of the service's base addresses (docs/service.md, "Addresses and keys"). */
export type ServiceApi = "scraper API" | "account API";

/** The scraper API's version segment: its base address ends in it, the account API's carries none. */
const SCRAPER_PATH = "/api/v1";

/**
 * The addresses a base that is not the service most likely meant, most likely first: the scraper API
 * lacking its `/api/v1` (after the given path, then at the origin), the account API given a path.
 */
export function likelyServiceAddresses(api: ServiceApi, wrong: string): string[] {
	let url: URL;
	try {
		url = new URL(wrong);
	} catch {
		return [];
	}
	// Plain http:// elsewhere than loopback is refused before any call, so it is never the one meant.
	if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) return [];
	const path = url.pathname.replace(/\/+$/, "");
	if (api === "account API") return path === "" ? [] : [url.origin];
	if (path.endsWith(SCRAPER_PATH)) return [];
	return [...new Set([`${url.origin}${path}${SCRAPER_PATH}`, `${url.origin}${SCRAPER_PATH}`])];
}

/**
 * The first of `likelyServiceAddresses` that answers as the service, or undefined. Each is asked once,
 * all at once, without a key (so no key goes to a guessed address): the service answers a keyless call
 * 401, or 200 with its own shape.
 */
export async function meantServiceAddress(
	api: ServiceApi,
	wrong: string,
	options: { readonly signal?: AbortSignal; readonly timeoutMs: number },
): Promise<string | undefined> {
	const candidates = likelyServiceAddresses(api, wrong);
	const answers = await Promise.all(candidates.map((base) => answersAsService(api, base, options)));
	return candidates.find((_, i) => answers[i]);
}

async function answersAsService(
	api: ServiceApi,
	base: string,
	options: { readonly signal?: AbortSignal; readonly timeoutMs: number },
): Promise<boolean> {
	const path = api === "scraper API" ? "/scraper/health" : "/public/scraper";
	try {
		const response = await send(defaultDispatcher(), {
			method: "GET",
			url: `${base}${path}`,
			headers: {},
			timeoutMs: options.timeoutMs,
			endpoint: `GET ${path}`,
			...(options.signal ? { signal: options.signal } : {}),
		});
		if (response.status === 401) return true;
		const body = response.status === 200 ? jsonObject(response) : undefined;
		return api === "scraper API" ? body?.success === true : body !== undefined;
	} catch {
		return false;
	}
}
