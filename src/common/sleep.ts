/** Injected wherever code waits, so tests can observe waits without patching timers. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export const sleep: Sleep = (ms, signal) =>
	new Promise<void>((resolve, reject) => {
		if (signal?.aborted) {
			reject(signal.reason);
			return;
		}
		const onAbort = () => {
			clearTimeout(timer);
			reject(signal?.reason);
		};
		const timer = setTimeout(() => {
			signal?.removeEventListener("abort", onAbort);
			resolve();
		}, ms);
		signal?.addEventListener("abort", onAbort, { once: true });
	});

/** Milliseconds since the epoch; injected so durations can be tested. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();
