import { createHash, randomUUID } from "node:crypto";
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Agent, type Dispatcher } from "undici";
import { PARTIAL_PAGE_PREFIX } from "../shared/index.js";
import { BodyFileError, BodyTooLargeError, NetworkError, RequestAbortedError } from "./errors.js";
import { toNetworkError } from "./network-failure.js";

export interface HttpResponse {
	readonly status: number;
	readonly headers: Readonly<Record<string, string | string[] | undefined>>;
	/** The body; empty when it was spilled (see `spilled`). */
	readonly body: Buffer;
	/** Set when the body left memory on its way in (`SendOptions.spill`). */
	readonly spilled?: SpilledBody;
}

/**
 * Where a large page body goes instead of memory, when the caller needs only the bytes on disk
 * (`content: files`) or only their size and hash (`content: none`). Only a 2xx page that is the
 * content itself is spilled (not JSON, not a target's own error passed through): anything the client
 * must read stays in memory, within `maxBodyBytes`.
 */
export interface BodySpill {
	/** Bodies past this many bytes leave memory. */
	readonly afterBytes: number;
	/** The folder the body's file is written in (a hidden `.partial-*` name), or null to count, hash and drop it. */
	readonly dir: string | null;
}

export interface SpilledBody {
	/** The file holding the body (the caller renames it into place), or null when dropped. */
	readonly path: string | null;
	readonly bytes: number;
	/** SHA-1 of the body, hex: what change tracking would have computed from it. */
	readonly sha1: string;
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
	readonly spill?: BodySpill;
}

/** The default body cap: 50 MiB (`max_body_mb: 50`). */
export const DEFAULT_MAX_BODY_BYTES = 50 * 1024 * 1024;

/**
 * A keep-alive connection pool for the service (undici keeps a pool per origin). `connections` caps
 * sockets per origin; a run's scraper client is given its concurrency. An unlimited pool opens a new
 * socket whenever a request finds every socket busy — and a socket that has just answered counts as
 * busy until a microtask later — so a run at concurrency 50, which starts its next fetch as soon as
 * one ends, ended up on 100 sockets, each with its own parser and buffers. Idle sockets are
 * unreferenced: none holds the process open.
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
	const { origin, path } = splitUrl(options.url);
	const started = Date.now();
	try {
		const response = await dispatcher.request({
			origin,
			path,
			method: options.method,
			headers: options.headers,
			body: options.body,
			signal: options.signal ? relayOf(options.signal) : undefined,
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
		const spill = options.spill && spillable(response.statusCode, response.headers) ? options.spill : undefined;
		let chunks: Buffer[] = [];
		let length = 0;
		let spilling: Spilling | null = null;
		try {
			// Events, not `for await`: an async iterator per answer costs a dozen objects (end-of-stream
			// watchers, promises) that live as long as the answer and so outlive young collections — at a
			// million fetches they were most of the garbage the old space had to collect.
			await consume(response.body, (chunk) => {
				// A total deadline, not only one per gap: a body trickling in a byte a second must end too.
				if (Date.now() - started > options.timeoutMs) {
					throw new NetworkError(
						"timeout",
						options.endpoint,
						`the answer did not finish within ${Math.round(options.timeoutMs / 1000)} s`,
						{ host: origin },
					);
				}
				length += chunk.length;
				if (length > maxBytes) throw new BodyTooLargeError(options.endpoint, maxBytes, credits);
				chunks.push(chunk);
				if (spilling === null && spill !== undefined && length > spill.afterBytes) spilling = startSpill(spill);
				if (spilling !== null) {
					spilling.write(chunks);
					chunks = [];
				}
			});
			if (spilling !== null) {
				const spilled = (spilling as Spilling).finish(length);
				spilling = null;
				return { status: response.statusCode, headers: response.headers, body: EMPTY, spilled };
			}
		} finally {
			(spilling as Spilling | null)?.discard();
		}
		const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
		return { status: response.statusCode, headers: response.headers, body };
	} catch (error) {
		if (error instanceof BodyTooLargeError || error instanceof NetworkError || error instanceof BodyFileError)
			throw error;
		if (options.signal?.aborted) throw new RequestAbortedError(options.endpoint, { cause: error });
		// Name the host: "cannot reach api.example.com" is what a user can act on. URLs never hold keys.
		throw toNetworkError(error, options.endpoint, origin);
	}
}

const EMPTY = Buffer.alloc(0);

/** The last address split, and its parts: a run POSTs every fetch to the same address. */
let lastSplit = { url: "", origin: "", path: "/" };

/** An absolute address's origin and path (with its query), as undici's dispatcher takes them. */
function splitUrl(url: string): { readonly origin: string; readonly path: string } {
	if (url === lastSplit.url) return lastSplit;
	const pathStart = url.indexOf("/", url.indexOf("//") + 2);
	lastSplit = {
		url,
		origin: pathStart < 0 ? url : url.slice(0, pathStart),
		path: pathStart < 0 ? "/" : url.slice(pathStart),
	};
	return lastSplit;
}

/**
 * What undici needs of a request's signal when it is shaped as an EventEmitter (its other accepted
 * shape): the state, and one listener added for as long as the request lasts.
 */
interface SignalRelay {
	readonly aborted: boolean;
	readonly reason: unknown;
	on(event: "abort", listener: () => void): SignalRelay;
	once(event: "abort", listener: () => void): SignalRelay;
	removeListener(event: "abort", listener: () => void): SignalRelay;
}

const relays = new WeakMap<AbortSignal, SignalRelay>();

/**
 * One relay per AbortSignal, shared by every request sent with it. undici adds an abort listener to a
 * request's signal and removes it at the end; on an AbortSignal (an EventTarget) that is a listener
 * record and a few microseconds each time — every fetch of a run shares one signal, and at a million
 * fetches that was ~2 % of the runner's CPU. Here a request's listener is an entry in an array; the
 * relay listens to the signal once, and calls them all when it aborts.
 *
 * An array, not a Set: a Set that entries keep entering and leaving is rebuilt every few dozen
 * changes, and each table it leaves behind links to the next and keeps what it held. Once one of
 * them has outlived a young collection, that chain held every finished request's handler, body
 * stream and buffers through young collections until the next full one: 100,000 fetches promoted
 * ~220 MB into the old space this way against ~15 MB with the array (`--trace-gc-nvp`, a client
 * alone against a server that answers at once), and young collections took 3.5× as long.
 * `test/api/signal-relay.test.ts` holds the relay to that.
 */
function relayOf(signal: AbortSignal): SignalRelay {
	const known = relays.get(signal);
	if (known) return known;
	let listeners: Array<() => void> = [];
	const relay: SignalRelay = {
		get aborted() {
			return signal.aborted;
		},
		get reason() {
			return signal.reason;
		},
		on(_event, listener) {
			listeners.push(listener);
			return relay;
		},
		once(_event, listener) {
			listeners.push(listener);
			return relay;
		},
		removeListener(_event, listener) {
			// The newest are at the end, and a run has at most its concurrency in flight: a short scan.
			const at = listeners.lastIndexOf(listener);
			if (at < 0) return relay;
			const last = listeners.pop() as () => void;
			if (at < listeners.length) listeners[at] = last;
			return relay;
		},
	};
	signal.addEventListener(
		"abort",
		() => {
			const called = listeners;
			listeners = [];
			for (const listener of called) listener();
		},
		{ once: true },
	);
	relays.set(signal, relay);
	return relay;
}

/** A 2xx that is the page itself: neither JSON for the client to read nor a target's error passed through. */
function spillable(status: number, headers: HttpResponse["headers"]): boolean {
	if (status < 200 || status > 299 || headers["x-target-status"] !== undefined) return false;
	const type = headerValue(headers, "content-type");
	return type !== undefined && type !== "" && !type.includes("json");
}

/**
 * Read a body through its events, handing each chunk to `onChunk` (synchronous: an exception there
 * destroys the body and rejects). Resolves at its end; rejects with the stream's error.
 */
function consume(body: Readable, onChunk: (chunk: Buffer) => void): Promise<void> {
	return new Promise((resolve, reject) => {
		const onData = (chunk: Buffer) => {
			try {
				onChunk(chunk);
			} catch (error) {
				body.off("data", onData);
				body.destroy();
				reject(error);
			}
		};
		body.on("data", onData);
		body.once("end", resolve);
		body.once("error", reject);
	});
}

interface Spilling {
	/** Hash (and write) these chunks; a write error ends the answer as `BodyFileError`. */
	write(chunks: readonly Buffer[]): void;
	finish(bytes: number): SpilledBody;
	/** Close and remove the file of a body that did not finish. */
	discard(): void;
}

/**
 * Synchronous writes: a spilled page is rare and large, its chunks land in the page cache in
 * microseconds, and the body's events need no pausing in between.
 */
function startSpill(spill: BodySpill): Spilling {
	const hash = createHash("sha1");
	let fd: number | null = null;
	let path: string | null = null;
	if (spill.dir !== null) {
		path = join(spill.dir, `${PARTIAL_PAGE_PREFIX}${randomUUID()}`);
		try {
			mkdirSync(spill.dir, { recursive: true });
			fd = openSync(path, "wx");
		} catch (error) {
			throw new BodyFileError(path, error);
		}
	}
	const closeFile = () => {
		const open = fd;
		fd = null;
		if (open !== null) closeSync(open);
	};
	return {
		write(chunks) {
			for (const chunk of chunks) {
				hash.update(chunk);
				if (fd === null) continue;
				try {
					for (let written = 0; written < chunk.length; ) written += writeSync(fd, chunk, written);
				} catch (error) {
					throw new BodyFileError(path!, error);
				}
			}
		},
		finish(bytes) {
			try {
				closeFile();
			} catch (error) {
				throw new BodyFileError(path!, error);
			}
			return { path, bytes, sha1: hash.digest("hex") };
		},
		discard() {
			try {
				closeFile();
			} catch {
				// Removed below all the same.
			}
			if (path !== null) rmSync(path, { force: true });
		},
	};
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
