import type { Logger } from "pino";
import { type Clock, errorMessage } from "../../common/index.js";
import {
	type Fleet,
	type FleetLimit,
	type FleetRunWatch,
	pauseFleet,
	setConcurrencyLimit,
	watchFleetRun,
} from "../../fleet/index.js";
import type { Job } from "../../job/index.js";

/** How often a worker reads the fleet's pause (another worker's 429), its limit, its live workers and breakers. */
const PAUSE_POLL_MS = 250;
/** Changes of the fleet's limit a worker remembers (each answer is placed under the one it was sent under). */
const KNOWN_LIMITS = 16;

export interface FleetLimitDeps {
	readonly fleet: Fleet;
	readonly runId: number;
	/** The job's own `concurrency`: the fleet's limit never follows the service above a number. */
	readonly jobConcurrency: Job["concurrency"];
	/** How long a worker's heartbeat counts it alive, ms (its lease). */
	readonly leaseMs: number;
	readonly clock: Clock;
	readonly log: Logger;
}

/**
 * The fleet's pause and concurrency limit as one worker sees and changes them. Another worker's 429 reaches
 * this one within a poll (its sends wait at its gate until the reset), and so does a change of the limit
 * (spare slots above a lowered one go back). The service's `X-RateLimit-Limit` changes the limit only from
 * the change its fetch was sent under: answers arrive out of order. The same statement reads the breakers'
 * watch list for fleet-breakers.ts (`watchBreakers`): one round trip a poll, not one per part.
 */
export class FleetLimitWatch {
	readonly #deps: FleetLimitDeps;
	/** The fleet's limit as last read, and since when (on `clock`) this worker knew each of the latest changes. */
	readonly #known: Array<FleetLimit & { readonly knownSince: number }> = [];
	/** The last change this worker asked for, and under which change: the same request is not sent twice. */
	#asked: FleetLimit | null = null;
	/** This worker's changes of the fleet's limit, in the order its answers asked for them. */
	#writes: Promise<void> = Promise.resolve();
	/** Workers of the run alive at the last poll (null before the first). */
	#liveWorkers: number | null = null;
	/** What this worker does when another worker's 429 paused the fleet (`watchPause`). */
	#onPause: ((ms: number) => void) | null = null;
	/** Where each poll's breakers' watch list goes (`watchBreakers`). */
	#onBreakers: ((rows: FleetRunWatch["breakers"]) => void) | null = null;
	readonly #pollTimer: NodeJS.Timeout;

	constructor(deps: FleetLimitDeps) {
		this.#deps = deps;
		void this.#poll();
		this.#pollTimer = setInterval(() => void this.#poll(), PAUSE_POLL_MS);
		this.#pollTimer.unref();
	}

	/** The fleet's limit and its change count as this worker last read them (null: not yet). */
	get limit(): FleetLimit | null {
		const known = this.#known.at(-1);
		return known ? { limit: known.limit, epoch: known.epoch } : null;
	}

	/** The fleet's in-flight ceiling as last read (null: not yet). */
	get ceiling(): number | null {
		return this.#known.at(-1)?.limit ?? null;
	}

	/**
	 * How many targets this worker may hold: its part of the fleet's limit among the live workers (rounded
	 * up), at most `concurrency`. A settled target's slot stays with its worker for the next claim, so
	 * without a part the first worker kept every slot and a worker added to a busy fleet got none.
	 */
	share(concurrency: number): number {
		const ceiling = this.ceiling;
		if (ceiling === null || this.#liveWorkers === null) return concurrency;
		return Math.min(concurrency, Math.max(1, Math.ceil(ceiling / this.#liveWorkers)));
	}

	/** Another worker's 429: `pause` holds this worker's sends (its gate) until the reset. */
	watchPause(pause: (ms: number) => void): void {
		this.#onPause = pause;
	}

	/** Each poll's breakers' watch list goes to `seen` (the job's breakers, fleet-breakers.ts). */
	watchBreakers(seen: (rows: FleetRunWatch["breakers"]) => void): void {
		this.#onBreakers = seen;
	}

	/** A 429: every worker of the fleet waits until its reset (no claim, no slot before then). */
	paused(pauseMs: number): void {
		const { fleet, runId, log } = this.#deps;
		void pauseFleet(fleet, runId, new Date(Date.now() + pauseMs)).catch((error) =>
			log.warn({ event: "fleet_pause_failed", error: errorMessage(error) }, "could not pause the fleet"),
		);
	}

	/**
	 * The service's `X-RateLimit-Limit` on an answer to a fetch sent at `sentAt`: the fleet's limit follows
	 * it up and down (never above the job's own `concurrency`), as a learned local run's does. Written only
	 * while the limit is still the one the fetch was sent under: one that left the service before the
	 * limit's last change must not undo it.
	 */
	rateLimitSeen(limit: number | undefined, sentAt: number): void {
		if (limit === undefined || !Number.isSafeInteger(limit) || limit < 1) return;
		const { fleet, runId, jobConcurrency, log } = this.#deps;
		const next = typeof jobConcurrency === "number" ? Math.min(jobConcurrency, limit) : limit;
		if (next === this.ceiling) return;
		const sentUnder = this.#knownAt(sentAt);
		if (sentUnder === null) return;
		// Asked once per change: the answers after it say the same until this worker reads the new limit.
		if (this.#asked !== null && this.#asked.epoch === sentUnder.epoch && this.#asked.limit === next) return;
		this.#asked = { limit: next, epoch: sentUnder.epoch };
		// One at a time: a change this worker made is known before its next answer is weighed.
		this.#writes = this.#writes
			.then(() => setConcurrencyLimit(fleet, runId, next, sentUnder.epoch))
			.then((changed) => {
				if (changed) this.#learn(changed);
			})
			.catch((error) => {
				// Not written: the next answer asks again.
				this.#asked = null;
				log.warn({ event: "fleet_write", error: errorMessage(error) }, "fleet write failed");
			});
	}

	/** The polls end (the worker's work is over). */
	stop(): void {
		clearInterval(this.#pollTimer);
	}

	/** Resolves once this worker's changes of the limit are written (or failed). */
	written(): Promise<void> {
		return this.#writes;
	}

	#learn(known: FleetLimit): void {
		const last = this.#known.at(-1);
		if (last && last.epoch >= known.epoch) return;
		this.#known.push({ ...known, knownSince: this.#deps.clock() });
		if (this.#known.length > KNOWN_LIMITS) this.#known.shift();
	}

	/** The change this worker knew of when it sent at `sentAt` (null: before any it still remembers). */
	#knownAt(sentAt: number): FleetLimit | null {
		for (let index = this.#known.length - 1; index >= 0; index--)
			if (this.#known[index]!.knownSince <= sentAt) return this.#known[index]!;
		return null;
	}

	/** The fleet's pause (what is left of it), its limit, its live workers and its breakers, in one statement. */
	async #poll(): Promise<void> {
		const { fleet, runId, leaseMs } = this.#deps;
		try {
			const watch = await watchFleetRun(fleet, runId, leaseMs);
			if (!watch) return;
			this.#learn(watch.limit);
			this.#liveWorkers = Math.max(1, watch.liveWorkers);
			this.#onBreakers?.(watch.breakers);
			if (watch.pauseMs !== null && watch.pauseMs > 0) this.#onPause?.(watch.pauseMs);
		} catch {
			// A missed poll: the next one, a quarter second on, reads the same row.
		}
	}
}
