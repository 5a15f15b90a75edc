import { Agent, type Dispatcher } from "undici";
import { BodyTooLargeError, NetworkError, RequestAbortedError } from "./errors.js";
import { toNetworkError } from "./network-failure.js";

export interface HttpResponse {
	readonly status: number;
	readonly headers: Readonly<Record<string, string | string[] | undefined>>;
	readonly body: Buffer;
}

export interface SendOptions {
	readonly method: "GET" | "POST";
	readonly url: string;
	readonly headers: Record<string, string>;
	readonly body?: string;
	/** Limit for the headers, for each gap in the body, and for the whole answer, milliseconds. */
	readonly timeoutMs: number;
	readonly signal?: AbortSignal;
	/** Names the call in errors, e.g. "GET /public/scraper". Never contains a key. */
	readonly endpoint: string;
	/**
	 * Called with the status as soon as the status line arrives, before the body is read: a 429 can
	 * close the send gate at once, so no other fetch starts while its body is still on the wire.
	 */
	readonly onStatus?: (status: number) => void;
	/** Stop reading (and fail with `BodyTooLargeError`) past this many body bytes. @default 50 MiB */
	readonly maxBodyBytes?: number;
}

/** The default body cap: 50 MiB (`max_body_mb: 50`). */
export const DEFAULT_MAX_BODY_BYTES = 50 * 1024 * 1024;

/**
 * A keep-alive connection pool for the service. One per process is enough: undici keeps a pool per
 * origin. `connections` caps sockets per origin; the runner sizes it to its concurrency.
 */
export function createDispatcher(options: { connections?: number; keepAliveTimeoutMs?: number } = {}): Dispatcher {
	return new Agent({
		connections: options.connections ?? null,
		keepAliveTimeout: options.keepAliveTimeoutMs ?? 10_000,
		keepAliveMaxTimeout: 60_000,
		// Never pipeline: a slow scrape would hold every request queued behind it on the socket.
		pipelining: 1,
	});
}

let sharedDispatcher: Dispatcher | undefined;
/** The process-wide default pool, created on first use. */
export function defaultDispatcher(): Dispatcher {
	sharedDispatcher ??= createDispatcher();
	return sharedDispatcher;
}

/** Send one request and read the whole body. Network failures become `NetworkError`; aborts `RequestAbortedError`. */
export async function send(dispatcher: Dispatcher, options: SendOptions): Promise<HttpResponse> {
	// The dispatcher's own `request` skips the URL parsing of undici's top-level helper: the
	// addresses were checked once, when the client was made.
	const { url } = options;
	const pathStart = url.indexOf("/", url.indexOf("//") + 2);
	const started = Date.now();
	try {
		const response = await dispatcher.request({
			origin: pathStart < 0 ? url : url.slice(0, pathStart),
			path: pathStart < 0 ? "/" : url.slice(pathStart),
			method: options.method,
			headers: options.headers,
			body: options.body,
			signal: options.signal,
			headersTimeout: options.timeoutMs,
			bodyTimeout: options.timeoutMs,
		});
		options.onStatus?.(response.statusCode);
		const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
		const declared = Number(headerValue(response.headers, "content-length"));
		const credits = numberHeader(response.headers, "x-credits-used");
		if (Number.isFinite(declared) && declared > maxBytes) {
			response.body.destroy();
			throw new BodyTooLargeError(options.endpoint, maxBytes, credits);
		}
		const chunks: Buffer[] = [];
		let length = 0;
		for await (const chunk of response.body) {
			// A total deadline, not only one per gap: a body trickling in a byte a second must end too.
			if (Date.now() - started > options.timeoutMs) {
				response.body.destroy();
				throw new NetworkError(
					"timeout",
					options.endpoint,
					`the answer did not finish within ${Math.round(options.timeoutMs / 1000)} s`,
					{ host: pathStart < 0 ? url : url.slice(0, pathStart) },
				);
			}
			length += (chunk as Buffer).length;
			if (length > maxBytes) {
				response.body.destroy();
				throw new BodyTooLargeError(options.endpoint, maxBytes, credits);
			}
			chunks.push(chunk as Buffer);
		}
		const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
		return { status: response.statusCode, headers: response.headers, body };
	} catch (error) {
		if (error instanceof BodyTooLargeError || error instanceof NetworkError) throw error;
		if (options.signal?.aborted) throw new RequestAbortedError(options.endpoint, { cause: error });
		// Name the host: "cannot reach api.example.com" is what a user can act on. URLs never hold keys.
		const host = pathStart < 0 ? url : url.slice(0, pathStart);
		throw toNetworkError(error, options.endpoint, host);
	}
}

export function headerValue(headers: HttpResponse["headers"], name: string): string | undefined {
	const value = headers[name];
	return Array.isArray(value) ? value[0] : value;
}

export function numberHeader(headers: HttpResponse["headers"], name: string): number | undefined {
	const value = headerValue(headers, name);
	if (value === undefined || value.trim() === "") return undefined;
	const parsed = Number(value);
	return Number.isFinite(parsed) ? parsed : undefined;
}
