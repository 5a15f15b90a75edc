/**
 * Really fetches target pages, over one keep-alive undici Agent (so a benchmark against a local site
 * reuses sockets), following redirects like a browser would (hop by hop, to know the final address).
 * Failures are mapped onto the scraping failure messages of the service (docs/service.md, "Errors").
 */
import { Agent, request } from "undici";
import type { ScrapingErrorMessage } from "./scenario.js";

export type FetchOutcome =
	| {
			readonly kind: "fetched";
			readonly statusCode: number;
			readonly body: Buffer;
			readonly contentType: string;
			/** The address the page came from after redirects; the requested one when there were none. */
			readonly finalUrl: string;
	  }
	| { readonly kind: "failed"; readonly message: ScrapingErrorMessage };

const USER_AGENT = "Mozilla/5.0 (compatible; scrapejob-emulator/0.1)";

export interface TargetFetcherOptions {
	/** Idle time before a kept-alive target socket is closed, ms. @default 10000 */
	readonly keepAliveTimeoutMs?: number;
	/** Redirects followed before giving up. @default 5 */
	readonly maxRedirections?: number;
	/**
	 * The whole fetch (every hop, the body read to its end), ms: past it the page is a `Navigation
	 * timeout`, as a real browser's navigation would be. Without it a page that never ends held its
	 * task at `processing` forever while its body grew in memory. @default 300000
	 */
	readonly totalTimeoutMs?: number;
	/** Body bytes read at most; a longer page is cut there (its client sees that much). @default 268435456 (256 MiB) */
	readonly maxBodyBytes?: number;
}

export class TargetFetcher {
	readonly #agent: Agent;
	readonly #maxRedirections: number;
	readonly #totalTimeoutMs: number;
	readonly #maxBodyBytes: number;

	constructor(options: TargetFetcherOptions = {}) {
		this.#agent = new Agent({
			keepAliveTimeout: options.keepAliveTimeoutMs ?? 10_000,
			// Tasks may legitimately wait minutes for a slow target; the scraper timeout is enforced above this layer.
			headersTimeout: 300_000,
			bodyTimeout: 300_000,
		});
		this.#maxRedirections = options.maxRedirections ?? 5;
		this.#totalTimeoutMs = options.totalTimeoutMs ?? 300_000;
		this.#maxBodyBytes = options.maxBodyBytes ?? 256 * 1024 * 1024;
	}

	/**
	 * Fetch `url`, following redirects hop by hop (so the final address is known: the scraper answer
	 * names it in `X-Final-Url`). In-flight fetches end when `close()` destroys the agent, so no
	 * per-request signal is needed.
	 */
	async fetch(url: string, extraHeaders: Record<string, string> | null): Promise<FetchOutcome> {
		const deadline = AbortSignal.timeout(this.#totalTimeoutMs);
		try {
			let current = url;
			for (let hop = 0; ; hop++) {
				const response = await request(current, {
					method: "GET",
					dispatcher: this.#agent,
					signal: deadline,
					headers: { "user-agent": USER_AGENT, accept: "text/html,*/*;q=0.8", ...extraHeaders },
				});
				const location = firstHeader(response.headers.location);
				if (REDIRECT_STATUSES.has(response.statusCode) && location !== undefined) {
					await response.body.dump();
					if (hop >= this.#maxRedirections) return { kind: "failed", message: "Navigation timeout" };
					current = new URL(location, current).href;
					continue;
				}
				const body = await readCapped(response.body, this.#maxBodyBytes);
				return {
					kind: "fetched",
					statusCode: response.statusCode,
					body,
					contentType: firstHeader(response.headers["content-type"]) ?? "text/html; charset=utf-8",
					finalUrl: current,
				};
			}
		} catch (error) {
			if (deadline.aborted) return { kind: "failed", message: "Navigation timeout" };
			return { kind: "failed", message: classifyFetchError(error) };
		}
	}

	/** Drop every target socket at once, in-flight fetches included. */
	async close(): Promise<void> {
		await this.#agent.destroy();
	}
}

/** A body read up to `maxBytes`; the rest is not waited for (the socket is destroyed). */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): unknown }, maxBytes: number): Promise<Buffer> {
	const chunks: Buffer[] = [];
	let length = 0;
	for await (const chunk of body) {
		const room = maxBytes - length;
		chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
		length += Math.min(chunk.length, room);
		if (length >= maxBytes) {
			body.destroy();
			break;
		}
	}
	return Buffer.concat(chunks, length);
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

function firstHeader(value: string | string[] | undefined): string | undefined {
	return Array.isArray(value) ? value[0] : value;
}

const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_FAIL", "EAI_NODATA"]);
const TIMEOUT_CODES = new Set([
	"ETIMEDOUT",
	"UND_ERR_CONNECT_TIMEOUT",
	"UND_ERR_HEADERS_TIMEOUT",
	"UND_ERR_BODY_TIMEOUT",
]);
const TLS_CODES = new Set([
	"CERT_HAS_EXPIRED",
	"DEPTH_ZERO_SELF_SIGNED_CERT",
	"SELF_SIGNED_CERT_IN_CHAIN",
	"UNABLE_TO_VERIFY_LEAF_SIGNATURE",
	"UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
	"ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** Map a network error (or its cause) onto the service's scraping failure messages. */
export function classifyFetchError(error: unknown): ScrapingErrorMessage {
	let current: unknown = error;
	for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
		const code = (current as Error & { code?: unknown }).code;
		if (typeof code === "string") {
			if (code === "ECONNREFUSED") return "Connection refused";
			if (DNS_CODES.has(code)) return "DNS resolution failed";
			if (TLS_CODES.has(code) || code.startsWith("ERR_SSL") || code.startsWith("CERT_")) return "SSL certificate error";
			if (TIMEOUT_CODES.has(code)) return "Navigation timeout";
		}
		current = current.cause;
	}
	return "Target closed";
}
