import { request } from "undici";
import { errorMessage, redactSecrets } from "../common/index.js";

/** Each ping gives up after this long: a hanging monitor never holds the run's exit up for longer. */
export const HEALTHCHECK_TIMEOUT_MS = 10_000;

/** The Healthchecks.io convention: `URL/start` when a run starts, `URL` when it succeeded, `URL/fail` when not. */
export type PingKind = "start" | "success" | "fail";

export function pingUrl(url: string, kind: PingKind): string {
	if (kind === "success") return url;
	const base = url.replace(/\/+$/, "");
	// A query string (`?rid=…`) stays at the end: the suffix goes on the path.
	const parsed = new URL(base);
	parsed.pathname = `${parsed.pathname.replace(/\/+$/, "")}/${kind}`;
	return parsed.toString();
}

/**
 * One ping: a GET, bounded by `timeoutMs`. Never throws: a monitor that does not answer must not change
 * the run's outcome. Returns what went wrong, in words that never hold the URL (it is a secret: anyone
 * with it can ping), or null.
 */
export async function pingHealthcheck(
	url: string,
	kind: PingKind,
	timeoutMs: number = HEALTHCHECK_TIMEOUT_MS,
): Promise<string | null> {
	try {
		const response = await request(pingUrl(url, kind), {
			method: "GET",
			headers: { "user-agent": "scrapejob" },
			signal: AbortSignal.timeout(timeoutMs),
			headersTimeout: timeoutMs,
			bodyTimeout: timeoutMs,
		});
		await response.body.dump();
		if (response.statusCode >= 300) return `healthcheck ${kind} ping answered HTTP ${response.statusCode}`;
		return null;
	} catch (error) {
		const reason =
			error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")
				? `no answer within ${timeoutMs / 1000} s`
				: errorMessage(error);
		return `healthcheck ${kind} ping failed: ${redactSecrets(reason, [url, new URL(url).pathname])}`;
	}
}
