import type { Clock, Sleep } from "../../common/index.js";

/**
 * Every fetch to the scraper passes this gate first.
 *
 * It is how one 429 pauses the whole queue: the first 429 closes the gate for `reset` seconds and
 * every worker waits at it, instead of each worker sleeping and retrying on its own schedule.
 *
 * It also honours `X-RateLimit-Remaining`, the key's free slots as the service counts them when it
 * answers (after the answering fetch's own slot is freed). With none free, new sends wait until one
 * of our fetches finishes. While the queue runs at or under the account's limit this never blocks;
 * it matters when something else is using the same key.
 */
export interface SendGate {
	/** Take a send at once when the gate is open and a slot is free (the usual case, with no promise). */
	tryAcquire(): boolean;
	/** Resolves when a fetch may be sent now, and counts it in flight. */
	acquire(signal?: AbortSignal): Promise<void>;
	/** A fetch of ours finished; `remaining` is its `X-RateLimit-Remaining` (undefined when absent). */
	release(remaining: number | undefined): void;
	/** Free slots reported by a call that held no slot of ours (the health check before a run). */
	observe(remaining: number | undefined): void;
	/** Resolves when the gate is not paused (for free calls such as task polls). */
	unpaused(signal?: AbortSignal): Promise<void>;
	/** Close the gate for `ms` (a 429's reset). Overlapping pauses merge into one window. */
	pause(ms: number): void;
	/**
	 * Close the gate until the returned function is called: for a 429 whose body (with its reset) is
	 * still being read, and for an outage while `/scraper/health` is probed. Holds and pauses combine.
	 */
	hold(reason: PauseReason): () => void;
	/** Distinct pause windows so far (429 resets; holds are not counted). */
	readonly pauses: number;
	/** End of the current pause window (epoch ms), or 0. */
	readonly pausedUntil: number;
	/** Why sends are held now (a hold's reason, else `rate_limited` inside a pause window), or null. */
	pauseReason(): PauseReason | null;
	/** Fetches sent and not yet finished. */
	readonly inFlight: number;
}

export type PauseReason = "rate_limited" | "service_unavailable";

/**
 * Longest single timer, ms: Node's timers overflow above 2^31-1 ms (and warn); a longer wait is slept
 * in pieces. Pauses themselves are capped far below (a 429's reset at 3600 s).
 */
const MAX_TIMER_MS = 2_147_000_000;

export interface SendGateOptions {
	/** A new 429 window opened (not one merged into the current window), `ms` long. */
	readonly onPause?: (ms: number) => void;
	/**
	 * With no free slot reported and nothing of ours in flight, no answer will come to say a slot is
	 * free: try one send after this long. Milliseconds. @default 1000
	 */
	readonly probeAfterMs?: number;
	/**
	 * Ask the key's free slots without taking one (the free health check's `X-RateLimit-Remaining`).
	 * Given for a key other processes use (shards): free slots heard while nothing of ours was in
	 * flight go stale — the others take them — so a send after `staleAfterMs` of quiet, and a send
	 * while none is free, asks this first instead of sending blind into a 429 and its 60 s pause.
	 */
	readonly probeSlots?: () => Promise<number | undefined>;
	/**
	 * Quiet (nothing of ours in flight) after which free slots heard are stale, ms: longer than the gap
	 * between one fetch's end and the next one's start in a busy queue. @default 50
	 */
	readonly staleAfterMs?: number;
}

export function createSendGate(clock: Clock, sleep: Sleep, options: SendGateOptions = {}): SendGate {
	const probeAfterMs = options.probeAfterMs ?? 1000;
	const { probeSlots } = options;
	const staleAfterMs = options.staleAfterMs ?? 50;
	let pausedUntil = 0;
	let pauses = 0;
	let permits = Number.POSITIVE_INFINITY;
	let inFlight = 0;
	/** When free slots were last heard (an answer, a probe) or our last fetch ended. */
	let heardAt = clock();
	let probing: Promise<void> | null = null;
	/** Whether a fetch of ours went out: the first sends take the slots the run's health check heard. */
	let sentBefore = false;
	const stale = () => probeSlots !== undefined && inFlight === 0 && clock() - heardAt >= staleAfterMs;
	/**
	 * One probe at a time, shared by every waiter (each may stop waiting for it on its own signal); a
	 * probe that fails or hears no figure lets one send go, as without probes.
	 */
	function probe(signal?: AbortSignal): Promise<void> {
		probing ??= (async () => {
			try {
				const remaining = await probeSlots?.();
				// Back from a quiet spell, one send first: the others may not have seen this one busy yet and
				// still fill the key to their old shares; its answer tells how many more are free.
				const free = remaining === undefined ? Math.max(permits, 1) : Math.max(0, remaining);
				permits = sentBefore ? Math.min(free, 1) : free;
			} catch {
				permits = Math.max(permits, 1);
			} finally {
				heardAt = clock();
				probing = null;
			}
		})();
		const done = probing;
		if (!signal) return done;
		return new Promise<void>((resolve, reject) => {
			if (signal.aborted) {
				reject(signal.reason);
				return;
			}
			const onAbort = () => reject(signal.reason);
			signal.addEventListener("abort", onAbort, { once: true });
			void done.then(() => {
				signal.removeEventListener("abort", onAbort);
				resolve();
			});
		});
	}
	let waiters: Array<() => void> = [];
	const holds = new Map<symbol, PauseReason>();
	let holdWaiters: Array<() => void> = [];

	/** Resolve when the next wake-up of `list` comes, or reject when the signal aborts first. */
	function nextWake(list: Array<() => void>, signal?: AbortSignal) {
		return new Promise<void>((resolve, reject) => {
			if (signal?.aborted) {
				reject(signal.reason);
				return;
			}
			const onAbort = () => reject(signal?.reason);
			signal?.addEventListener("abort", onAbort, { once: true });
			list.push(() => {
				signal?.removeEventListener("abort", onAbort);
				resolve();
			});
		});
	}

	async function unpaused(signal?: AbortSignal) {
		for (;;) {
			if (holds.size > 0) {
				await nextWake(holdWaiters, signal);
				continue;
			}
			const wait = pausedUntil - clock();
			if (wait <= 0) return;
			await sleep(Math.min(wait, MAX_TIMER_MS), signal);
		}
	}

	function wakeAll() {
		if (waiters.length === 0) return;
		const wake = waiters;
		waiters = [];
		for (const resolve of wake) resolve();
	}

	return {
		tryAcquire() {
			if (permits <= 0 || holds.size > 0 || pausedUntil > clock() || stale()) return false;
			permits -= 1;
			inFlight += 1;
			sentBefore = true;
			return true;
		},
		async acquire(signal) {
			for (;;) {
				await unpaused(signal);
				if (stale()) {
					await probe(signal);
					continue;
				}
				if (permits > 0) {
					permits -= 1;
					inFlight += 1;
					sentBefore = true;
					return;
				}
				if (inFlight === 0) {
					await sleep(probeAfterMs, signal);
					if (probeSlots) await probe(signal);
					else permits = Math.max(permits, 1);
					continue;
				}
				await nextWake(waiters, signal);
			}
		},
		release(remaining) {
			inFlight = Math.max(0, inFlight - 1);
			heardAt = clock();
			// Without the header, assume the slot this fetch held is free again.
			permits = remaining === undefined ? permits + 1 : Math.max(0, remaining);
			wakeAll();
		},
		observe(remaining) {
			if (remaining === undefined) return;
			heardAt = clock();
			permits = Math.max(0, remaining);
			wakeAll();
		},
		unpaused,
		pause(ms) {
			const now = clock();
			const until = now + ms;
			if (until <= pausedUntil) return;
			const opens = pausedUntil <= now;
			pausedUntil = until;
			if (opens) {
				pauses += 1;
				options.onPause?.(ms);
			}
		},
		hold(reason) {
			const key = Symbol(reason);
			holds.set(key, reason);
			return () => {
				if (!holds.delete(key) || holds.size > 0) return;
				const wake = holdWaiters;
				holdWaiters = [];
				for (const resolve of wake) resolve();
			};
		},
		pauseReason() {
			for (const reason of holds.values()) if (reason === "service_unavailable") return reason;
			if (holds.size > 0) return "rate_limited";
			return pausedUntil > clock() ? "rate_limited" : null;
		},
		get pauses() {
			return pauses;
		},
		get pausedUntil() {
			return pausedUntil;
		},
		get inFlight() {
			return inFlight;
		},
	};
}
