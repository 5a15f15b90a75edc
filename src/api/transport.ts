import { createHash, type Hash } from "node:crypto";
import { Agent, type Dispatcher } from "undici";
import type { BodySink } from "../common/index.js";
import { BodySinkError, BodyTooLargeError, NetworkError, RequestAbortedError } from "./errors.js";
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
 * Where a large page body goes instead of memory, when the caller needs only the bytes stored
 * (`content: files`) or only their size and hash (`content: none`). Only a 2xx page that is the
 * content itself is spilled (not JSON, not a target's own error passed through): anything the client
 * must read stays in memory, within `maxBodyBytes`. The sink is the caller's: this layer writes no file.
 */
export interface BodySpill {
	/** Bodies past this many bytes leave memory. */
	readonly afterBytes: number;
	/**
	 * The sink this body goes to, asked for once the body passes `afterBytes` (once per answer: a
	 * retried fetch asks again); null to count and hash the body and drop it. A throw fails the answer
	 * with `BodySinkError`.
	 */
	open(): BodySink | null;
}

export interface SpilledBody {
	/** What the sink's `end()` returned (the page store's file), or null when the body was dropped. */
	readonly stored: string | null;
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

/**
 * Send one request and read the whole body. Network failures become `NetworkError`; aborts `RequestAbortedError`.
 *
 * Through undici's `dispatch` with a handler of its own, not `request()`: `request()` builds an
 * AsyncResource, a Readable body stream with its events and a promise for every answer, which this
 * reads whole anyway: ~12 % fewer instructions a request (bench/README.md).
 */
export function send(dispatcher: Dispatcher, options: SendOptions): Promise<HttpResponse> {
	// The dispatcher skips the URL parsing of undici's top-level helpers: the addresses were checked
	// once, when the client was made.
	const { origin, path } = splitUrl(options.url);
	return new Promise<HttpResponse>((resolve, reject) => {
		const reader = new AnswerReader(options, origin, resolve, reject);
		if (options.signal) {
			if (options.signal.aborted) {
				reject(new RequestAbortedError(options.endpoint, { cause: options.signal.reason }));
				return;
			}
			reader.watch = watchOf(options.signal);
			reader.watch.add(reader);
		}
		dispatcher.dispatch(
			{
				origin,
				path,
				method: options.method,
				headers: options.headers,
				body: options.body,
				headersTimeout: options.timeoutMs,
				bodyTimeout: options.timeoutMs,
			},
			reader,
		);
	});
}

const EMPTY = Buffer.alloc(0);
/**
 * A body declared at least this long is read into one buffer of its declared length, in shared memory:
 * no second copy when it is joined, and the page worker that parses it reads it without a copy either.
 */
const PRESIZED_BODY_BYTES = 1024 * 1024;
/** Until the answer's own arrive (never mutated). */
const NO_HEADERS: HttpResponse["headers"] = Object.freeze({});

/**
 * One answer read whole: undici calls its methods as the answer arrives. An exception thrown from
 * `onResponseStart` or `onResponseData` makes undici abort the request (the socket is closed) and
 * call `onResponseError` with it — how a body past its cap, past its deadline or unwritable ends.
 */
class AnswerReader implements Dispatcher.DispatchHandler {
	/** The in-flight set of the request's stop signal, if it has one. */
	watch: InFlight | null = null;
	private controller: Dispatcher.DispatchController | null = null;
	/** Set when the signal fired before undici started the request: it is aborted as it starts. */
	private abortedEarly: Error | null = null;
	private settled = false;
	private status = 0;
	private headers: HttpResponse["headers"] = NO_HEADERS;
	private chunks: Buffer[] = [];
	/** The whole body's buffer, when its length was declared and large (see PRESIZED_BODY_BYTES). */
	private whole: Buffer | null = null;
	private length = 0;
	private credits: number | undefined = undefined;
	private spill: BodySpill | undefined = undefined;
	private spilling: Spilling | null = null;
	private readonly started = Date.now();
	private readonly maxBytes: number;
	private readonly options: SendOptions;
	private readonly origin: string;
	private readonly resolve: (response: HttpResponse) => void;
	private readonly reject: (error: unknown) => void;

	constructor(
		options: SendOptions,
		origin: string,
		resolve: (response: HttpResponse) => void,
		reject: (error: unknown) => void,
	) {
		this.options = options;
		this.origin = origin;
		this.resolve = resolve;
		this.reject = reject;
		this.maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
	}

	onRequestStart(controller: Dispatcher.DispatchController): void {
		this.controller = controller;
		if (this.abortedEarly) controller.abort(this.abortedEarly);
	}

	onResponseStart(_controller: Dispatcher.DispatchController, status: number, headers: HttpResponse["headers"]): void {
		// An informational answer (103 Early Hints): the real one follows on the same request.
		if (status < 200) return;
		this.status = status;
		this.headers = headers;
		this.options.onStatus?.(status);
		const declared = Number(headerValue(headers, "content-length"));
		this.credits = numberHeader(headers, "x-credits-used");
		if (Number.isFinite(declared) && declared > this.maxBytes) {
			throw new BodyTooLargeError(this.options.endpoint, this.maxBytes, this.credits);
		}
		if (this.options.spill && spillable(status, headers)) this.spill = this.options.spill;
		else if (Number.isInteger(declared) && declared >= PRESIZED_BODY_BYTES)
			this.whole = Buffer.from(new SharedArrayBuffer(declared));
	}

	onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
		// A total deadline, not only one per gap: a body trickling in a byte a second must end too.
		if (Date.now() - this.started > this.options.timeoutMs) {
			throw new NetworkError(
				"timeout",
				this.options.endpoint,
				`the answer did not finish within ${Math.round(this.options.timeoutMs / 1000)} s`,
				{ host: this.origin },
			);
		}
		const offset = this.length;
		this.length += chunk.length;
		if (this.length > this.maxBytes) throw new BodyTooLargeError(this.options.endpoint, this.maxBytes, this.credits);
		if (this.whole !== null) {
			if (this.length <= this.whole.length) {
				chunk.copy(this.whole, offset);
				return;
			}
			// Longer than declared (undici ends such an answer with an error): joined the usual way.
			this.chunks.push(this.whole.subarray(0, offset));
			this.whole = null;
		}
		this.chunks.push(chunk);
		if (this.spilling === null && this.spill !== undefined && this.length > this.spill.afterBytes)
			this.spilling = startSpill(this.spill, this.options.endpoint);
		if (this.spilling !== null) {
			this.spilling.write(this.chunks);
			this.chunks = [];
		}
	}

	onResponseEnd(): void {
		if (this.settled) return;
		let response: HttpResponse;
		try {
			if (this.spilling !== null) {
				const spilled = this.spilling.finish(this.length);
				this.spilling = null;
				response = { status: this.status, headers: this.headers, body: EMPTY, spilled };
			} else {
				const { chunks, whole } = this;
				const body =
					whole !== null
						? whole.subarray(0, this.length)
						: chunks.length === 1
							? chunks[0]!
							: Buffer.concat(chunks, this.length);
				// The pieces go with this reader, not with the answer (undici may hold the reader a while).
				this.chunks = [];
				this.whole = null;
				response = { status: this.status, headers: this.headers, body };
			}
		} catch (error) {
			this.fail(error);
			return;
		}
		this.settled = true;
		this.watch?.remove(this);
		this.resolve(response);
	}

	onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
		this.fail(error);
	}

	/** The stop signal fired: end at once, whether undici has started the request yet or not. */
	abortBySignal(): void {
		const error = new RequestAbortedError(this.options.endpoint, { cause: this.options.signal?.reason });
		this.fail(error);
		if (this.controller) this.controller.abort(error);
		else this.abortedEarly = error;
	}

	private fail(error: unknown): void {
		if (this.settled) return;
		this.settled = true;
		this.watch?.remove(this);
		const spilling = this.spilling;
		this.spilling = null;
		// The sink drops what it holds (its file is removed) before the caller hears of the failure.
		spilling?.abort();
		this.reject(this.explain(error));
	}

	private explain(error: unknown): unknown {
		if (error instanceof NetworkError) return this.afterAnswer(error);
		if (error instanceof BodySinkError) {
			if (this.credits !== undefined) error.creditsUsed = this.credits;
			return error;
		}
		if (error instanceof BodyTooLargeError) return error;
		if (error instanceof RequestAbortedError || this.options.signal?.aborted)
			return error instanceof RequestAbortedError
				? error
				: new RequestAbortedError(this.options.endpoint, { cause: error });
		// Name the host: "cannot reach api.example.com" is what a user can act on. URLs never hold keys.
		return this.afterAnswer(toNetworkError(error, this.options.endpoint, this.origin));
	}

	/** A connection lost after the status line: the fetch was made, and what it cost is on the error. */
	private afterAnswer(error: NetworkError): NetworkError {
		if (this.status === 0 || error.answeredStatus !== null) return error;
		const detail = error.message.slice(error.message.indexOf(" failed: ") + " failed: ".length);
		return new NetworkError(error.failure, this.options.endpoint, detail, {
			cause: error.cause,
			host: this.origin,
			answeredStatus: this.status,
			creditsUsed: this.credits,
			creditsRemaining: numberHeader(this.headers, "x-credits-remaining"),
			modeUsed: headerValue(this.headers, "x-mode-used"),
		});
	}
}

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

/** The requests in flight with one stop signal. */
interface InFlight {
	add(reader: AnswerReader): void;
	remove(reader: AnswerReader): void;
}

const inFlightBySignal = new WeakMap<AbortSignal, InFlight>();

/**
 * One in-flight list per AbortSignal, shared by every request sent with it; the list listens to the
 * signal once and aborts them all when it fires. Every fetch of a run shares one signal, and a
 * listener record on an AbortSignal (an EventTarget) per fetch cost ~2 % of the runner's CPU at a
 * million fetches.
 *
 * An array, not a Set: a Set that entries keep entering and leaving is rebuilt every few dozen
 * changes, and each table it leaves behind links to the next and keeps what it held. Once one of
 * them has outlived a young collection, that chain held every finished request's handler and
 * buffers through young collections until the next full one: 100,000 fetches promoted ~220 MB into
 * the old space this way against ~15 MB with the array (`--trace-gc-nvp`, a client alone against a
 * server that answers at once), and young collections took 3.5× as long.
 * `test/api/signal-relay.test.ts` holds the list to that.
 */
function watchOf(signal: AbortSignal): InFlight {
	const known = inFlightBySignal.get(signal);
	if (known) return known;
	let readers: AnswerReader[] = [];
	const inFlight: InFlight = {
		add(reader) {
			readers.push(reader);
		},
		remove(reader) {
			// The newest are at the end, and a run has at most its concurrency in flight: a short scan.
			const at = readers.lastIndexOf(reader);
			if (at < 0) return;
			const last = readers.pop() as AnswerReader;
			if (at < readers.length) readers[at] = last;
		},
	};
	signal.addEventListener(
		"abort",
		() => {
			const aborted = readers;
			readers = [];
			for (const reader of aborted) reader.abortBySignal();
		},
		{ once: true },
	);
	inFlightBySignal.set(signal, inFlight);
	return inFlight;
}

/** A 2xx that is the page itself: neither JSON for the client to read nor a target's error passed through. */
function spillable(status: number, headers: HttpResponse["headers"]): boolean {
	if (status < 200 || status > 299 || headers["x-target-status"] !== undefined) return false;
	const type = headerValue(headers, "content-type");
	return type !== undefined && type !== "" && !type.includes("json");
}

interface Spilling {
	/** Hash these chunks and hand them to the sink; a sink that throws ends the answer as `BodySinkError`. */
	write(chunks: readonly Buffer[]): void;
	/** The body is whole: the sink's `end()`, with the size and hash. */
	finish(bytes: number): SpilledBody;
	/** The body did not finish: the sink drops what it has (once; never throws). */
	abort(): void;
}

/**
 * One pass over the bytes: each chunk is hashed here and handed to the caller's sink, which stores it
 * (or, with no sink, only hashed). Every error of the sink is its own (`BodySinkError`, not a network
 * failure), and a sink that was opened always hears `end()` or `abort()`.
 */
function startSpill(spill: BodySpill, endpoint: string): Spilling {
	const hash: Hash = createHash("sha1");
	let sink: BodySink | null;
	try {
		sink = spill.open();
	} catch (error) {
		throw new BodySinkError(endpoint, error);
	}
	return {
		write(chunks) {
			for (const chunk of chunks) {
				hash.update(chunk);
				if (sink === null) continue;
				try {
					sink.write(chunk);
				} catch (error) {
					throw new BodySinkError(endpoint, error);
				}
			}
		},
		finish(bytes) {
			let stored: string | null = null;
			if (sink !== null) {
				try {
					stored = sink.end();
				} catch (error) {
					throw new BodySinkError(endpoint, error);
				}
				// Ended: an abort from here on (the answer failing after all) must not remove what it stored.
				sink = null;
			}
			return { stored, bytes, sha1: hash.digest("hex") };
		},
		abort() {
			const open = sink;
			sink = null;
			try {
				open?.abort();
			} catch {
				// A sink must not throw here; the answer's own failure is what the caller hears.
			}
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
