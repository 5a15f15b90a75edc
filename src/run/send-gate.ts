import type { Clock, Sleep } from "../shared/index.js";

/**
 * Every request to the scraper passes this gate first.
 *
 * It is how one 429 pauses the whole queue: the first 429 closes the gate for `reset` seconds and
 * every worker waits at it, instead of each worker sleeping and retrying on its own schedule.
 *
 * It also honours `X-RateLimit-Remaining`: a response reporting R free slots was counted as busy
 * itself, so R + 1 sends may follow it; with none left, sends wait for the next response (a fetch
 * finishing). While the queue runs at or under the account's limit this never blocks; it matters
 * when something else is using the same key.
 */
export interface SendGate {
	/** Resolves when a fetch may be sent now, and takes a send permit. */
	ready(signal?: AbortSignal): Promise<void>;
	/** Resolves when the gate is not paused (for free calls such as task polls: no permit taken). */
	unpaused(signal?: AbortSignal): Promise<void>;
	/** Close the gate for `ms` (a 429's reset). Overlapping pauses merge into one window. */
	pause(ms: number): void;
	/** A response arrived carrying `X-RateLimit-Remaining` (undefined when absent). */
	observe(remaining: number | undefined): void;
	/** A fetch ended without rate-limit headers (an error): its slot is free again. */
	settled(): void;
	/** Distinct pause windows so far. */
	readonly pauses: number;
	/** End of the current pause window (epoch ms), or 0. */
	readonly pausedUntil: number;
}

export function createSendGate(clock: Clock, sleep: Sleep): SendGate {
	let pausedUntil = 0;
	let pauses = 0;
	let permits = Number.POSITIVE_INFINITY;
	let waiters: Array<() => void> = [];

	async function unpaused(signal?: AbortSignal) {
		for (let wait = pausedUntil - clock(); wait > 0; wait = pausedUntil - clock()) await sleep(wait, signal);
	}

	function waitForResponse(signal?: AbortSignal) {
		return new Promise<void>((resolve, reject) => {
			if (signal?.aborted) {
				reject(signal.reason);
				return;
			}
			const onAbort = () => reject(signal?.reason);
			signal?.addEventListener("abort", onAbort, { once: true });
			waiters.push(() => {
				signal?.removeEventListener("abort", onAbort);
				resolve();
			});
		});
	}

	function wakeAll() {
		if (waiters.length === 0) return;
		const wake = waiters;
		waiters = [];
		for (const resolve of wake) resolve();
	}

	return {
		async ready(signal) {
			for (;;) {
				await unpaused(signal);
				if (permits > 0) {
					permits -= 1;
					return;
				}
				await waitForResponse(signal);
			}
		},
		unpaused,
		pause(ms) {
			const now = clock();
			const until = now + ms;
			if (until <= pausedUntil) return;
			if (pausedUntil <= now) pauses += 1;
			pausedUntil = until;
		},
		observe(remaining) {
			permits = remaining === undefined ? Number.POSITIVE_INFINITY : Math.max(0, remaining) + 1;
			wakeAll();
		},
		settled() {
			permits += 1;
			wakeAll();
		},
		get pauses() {
			return pauses;
		},
		get pausedUntil() {
			return pausedUntil;
		},
	};
}
