/**
 * A record of every request the emulator answered and every credit it charged, for tests to assert
 * on. Totals are always counted; entries are stored up to a cap (a benchmark pushing 200,000 fetches
 * can switch storage off and still read totals).
 */
import type { FaultKind } from "./scenario.js";

export type LedgerEndpoint =
	| "realtime"
	| "task"
	| "health"
	| "map"
	| "search"
	| "crawl"
	| "crawl-task"
	| "configs"
	| "config-generate"
	| "schemes"
	| "storage"
	| "schedule"
	/** Not a request: one run of a saved schedule, which is charged like a realtime fetch. */
	| "schedule-run"
	| "account/proxy-data"
	| "account/scraper"
	| "account/browser"
	| "account/settings"
	| "account/usage"
	| "account/generate"
	| "account/rotate-session"
	| "account/profiles"
	| "account/order-profile"
	| "unknown";

/** Where the key of a request was found (scraper: query `api_key`, header `x-api-key`, body `api_key`; account: query `apikey`, header `x-apikey`). */
export type KeyPlace = "query" | "header" | "body";

/** One request the emulator answered: what was asked, with which key, what it answered and charged. */
export interface LedgerEntry {
	/** 1, 2, 3… in arrival order. */
	readonly seq: number;
	/** Arrival time, ms since the epoch. */
	readonly at: number;
	/** Time the answer was sent (or the connection dropped), ms since the epoch; null while in progress. */
	finishedAt: number | null;
	readonly endpoint: LedgerEndpoint;
	readonly method: string;
	readonly path: string;
	keyPlace: KeyPlace | null;
	/** The key the request authenticated with (null when missing or rejected). */
	key: string | null;
	/** HTTP status answered; 0 when the connection was dropped without an answer. */
	status: number;
	/** Target URL (realtime, task). */
	url?: string;
	/** Mode requested (realtime). */
	mode?: string;
	/** Mode used as reported in `X-Mode-Used`: `request`, `browser`, `auto (request)`, `auto (browser)`. */
	modeUsed?: string;
	/** Credits charged for this request; a task's charge is added to the request that started it. */
	creditsCharged: number;
	taskId?: string;
	/** Final state of the task this request started: completed or failed. */
	taskStatus?: "processing" | "completed" | "failed";
	/** Status the target answered, when it was fetched. */
	targetStatus?: number;
	/** The injected fault that decided this answer. */
	fault?: FaultKind;
	/** The realtime parameters as received (without the key). */
	params?: Readonly<Record<string, unknown>>;
}

/** A 429 answer and the pause it asked for. */
export interface RateLimitWindow {
	/** When the 429 was answered, ms since the epoch. */
	readonly at: number;
	readonly key: string;
	readonly resetSeconds: number;
	/** `at + resetSeconds * 1000`: a well-behaved client sends nothing with this key before it. */
	readonly untilMs: number;
	/** `concurrency`: the key was at its limit; `fault`: an injected 429 burst. */
	readonly cause: "concurrency" | "fault";
}

export interface LedgerOptions {
	/** Most entries (and 429 windows) kept; later ones are counted but not stored. 0 stores none. @default 100000 */
	readonly maxEntries?: number;
}

/** The emulator's record of every request it answered and every credit it charged (`Emulator.ledger`), for tests. */
export class Ledger {
	readonly #maxEntries: number;
	#entries: LedgerEntry[] = [];
	#rateLimits: RateLimitWindow[] = [];
	#seq = 0;
	#totalCharged = 0;
	#statusCounts = new Map<number, number>();
	#maxInFlight = new Map<string, number>();

	constructor(options: LedgerOptions = {}) {
		this.#maxEntries = options.maxEntries ?? 100_000;
	}

	/** Stored entries, in arrival order. */
	get entries(): readonly LedgerEntry[] {
		return this.#entries;
	}

	/** Every 429 answered, in order. */
	get rateLimits(): readonly RateLimitWindow[] {
		return this.#rateLimits;
	}

	/** Requests received, stored or not. */
	get requestCount(): number {
		return this.#seq;
	}

	/** Requests counted but not stored because of `maxEntries`. */
	get unstoredCount(): number {
		return this.#seq - this.#entries.length;
	}

	/** Credits charged since start (or the last `clear()`), stored or not. */
	totalCharged(): number {
		return this.#totalCharged;
	}

	/** Answers by HTTP status (0 = dropped), stored or not. */
	statusCounts(): Record<number, number> {
		return Object.fromEntries(this.#statusCounts);
	}

	/** Credits charged per target URL (stored entries only). */
	chargesByUrl(): Map<string, number> {
		const charges = new Map<string, number>();
		for (const entry of this.#entries) {
			if (entry.url === undefined) continue;
			charges.set(entry.url, (charges.get(entry.url) ?? 0) + entry.creditsCharged);
		}
		return charges;
	}

	/** Highest number of scraper slots a key (or, without a key, any key) held at once. */
	maxInFlight(key?: string): number {
		if (key !== undefined) return this.#maxInFlight.get(key) ?? 0;
		let max = 0;
		for (const value of this.#maxInFlight.values()) max = Math.max(max, value);
		return max;
	}

	/**
	 * An endpoint's requests in flight over time, from the stored entries: each request from arrival to
	 * answer, one step per arrival or answer (answers first at one instant: a slot freed and taken again
	 * is not two at once). What users' tests and the shards bench measure a key's use with.
	 */
	inFlightOverTime(endpoint: LedgerEndpoint): Array<{ at: number; inFlight: number }> {
		const events = this.byEndpoint(endpoint)
			.flatMap((entry) => [
				{ at: entry.at, delta: 1 },
				{ at: entry.finishedAt ?? Number.POSITIVE_INFINITY, delta: -1 },
			])
			.sort((a, b) => a.at - b.at || a.delta - b.delta);
		let inFlight = 0;
		return events.map((event) => {
			inFlight += event.delta;
			return { at: event.at, inFlight };
		});
	}

	/** Stored entries that arrived in `[fromMs, toMs)`, optionally of one endpoint. */
	requestsDuring(fromMs: number, toMs: number, endpoint?: LedgerEndpoint): LedgerEntry[] {
		return this.#entries.filter(
			(entry) => entry.at >= fromMs && entry.at < toMs && (endpoint === undefined || entry.endpoint === endpoint),
		);
	}

	/** Stored entries of one endpoint. */
	byEndpoint(endpoint: LedgerEndpoint): LedgerEntry[] {
		return this.#entries.filter((entry) => entry.endpoint === endpoint);
	}

	/** Forget entries and totals (credits and slots are untouched). */
	clear(): void {
		this.#entries = [];
		this.#rateLimits = [];
		this.#seq = 0;
		this.#totalCharged = 0;
		this.#statusCounts.clear();
		this.#maxInFlight.clear();
	}

	/** @internal Start the entry of an arriving request. */
	open(endpoint: LedgerEndpoint, method: string, path: string): LedgerEntry {
		this.#seq += 1;
		const entry: LedgerEntry = {
			seq: this.#seq,
			at: Date.now(),
			finishedAt: null,
			endpoint,
			method,
			path,
			keyPlace: null,
			key: null,
			status: 0,
			creditsCharged: 0,
		};
		if (this.#entries.length < this.#maxEntries) this.#entries.push(entry);
		return entry;
	}

	/** @internal The request was answered with `status` (0: dropped). */
	finish(entry: LedgerEntry, status: number): void {
		entry.status = status;
		entry.finishedAt = Date.now();
		this.#statusCounts.set(status, (this.#statusCounts.get(status) ?? 0) + 1);
	}

	/** @internal Credits were charged for the fetch this entry started. */
	charge(entry: LedgerEntry, credits: number): void {
		entry.creditsCharged += credits;
		this.#totalCharged += credits;
	}

	/** @internal A key now holds `inFlight` slots. */
	noteInFlight(key: string, inFlight: number): void {
		if (inFlight > (this.#maxInFlight.get(key) ?? 0)) this.#maxInFlight.set(key, inFlight);
	}

	/** @internal A 429 was answered. */
	noteRateLimit(window: RateLimitWindow): void {
		if (this.#rateLimits.length < Math.max(this.#maxEntries, 1000)) this.#rateLimits.push(window);
	}
}
