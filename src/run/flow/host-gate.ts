import { type Clock, sleep as realSleep, type Sleep, systemClock } from "../../common/index.js";

/**
 * Politeness per target host: `per_host_concurrency` (at most `limit` fetches in flight per host) and
 * `per_host_delay` (at least `delayOf(host)` ms between two fetch starts to one host; a crawl's
 * robots.txt `Crawl-delay` raises it), whatever the account allows. A target whose host is busy or
 * not due waits *outside* the run's queue (parked), so it never holds a queue slot another host could
 * use: a slow host with many pages does not starve the rest. When one of the host's fetches ends, its
 * slot passes straight to the host's next parked target; a host that is not due yet gets one timer.
 * Hosts with nothing running or parked are forgotten once their delay has passed: memory follows the
 * hosts busy now.
 */
export interface HostGate {
	/** Hand `work` to the queue now if its host has a free slot and is due, else park it until then. */
	submit(url: string, work: () => Promise<void>): void;
	/** Targets parked, all hosts together: the feeder keeps this bounded. */
	readonly parked: number;
	/** Resolves once fewer than `count` targets are parked. */
	parkedBelow(count: number): Promise<void>;
}

export interface HostGateOptions {
	/** Fetches in flight per host at most. @default no limit */
	readonly limit?: number;
	/** Least time between two fetch starts to `host` (`new URL(url).host`), ms; 0: none. @default none */
	readonly delayOf?: (host: string) => number;
	readonly clock?: Clock;
	readonly sleep?: Sleep;
	/**
	 * Aborted as the run stops: parked targets are dropped (left for a resume) and a delay being waited out
	 * ends at once, its target not started — a stop waits for fetches in flight, never for hosts' delays.
	 */
	readonly stopped?: AbortSignal;
}

interface HostState {
	active: number;
	readonly waiting: Array<() => Promise<void>>;
	/** When the host's latest target was handed to the queue, ms. */
	bookedAt: number;
	/** When the host's latest fetch started (or is booked to start, waiting in its queue slot), ms. */
	startedAt: number;
	/** When the host's latest fetch really started (its timer may fire late), ms. */
	startedNow: number;
	/** Wakes a host whose parked targets are not due yet. */
	wake: NodeJS.Timeout | null;
	/** Forgets an idle host once it is due again. */
	forget: NodeJS.Timeout | null;
}

export function hostOf(url: string): string {
	try {
		return new URL(url).host;
	} catch {
		return url;
	}
}

/** @param enqueue puts work on the run's queue (which bounds the run's total in flight). */
export function createHostGate(enqueue: (work: () => Promise<void>) => void, options: HostGateOptions = {}): HostGate {
	const limit = options.limit ?? Number.POSITIVE_INFINITY;
	const delayOf = options.delayOf ?? (() => 0);
	const clock = options.clock ?? systemClock;
	const sleep = options.sleep ?? realSleep;
	const hosts = new Map<string, HostState>();
	let parked = 0;
	const drained: Array<{ count: number; resolve: () => void }> = [];
	const stopped = options.stopped;

	const notify = () => {
		for (let index = drained.length - 1; index >= 0; index--) {
			const waiter = drained[index]!;
			if (parked < waiter.count) {
				drained.splice(index, 1);
				waiter.resolve();
			}
		}
	};

	/** When the host may start its next fetch (ms): its delay after the later of its last booking and start. */
	const dueAt = (host: string, state: HostState) => Math.max(state.bookedAt, state.startedAt) + delayOf(host);

	const start = (host: string, state: HostState, work: () => Promise<void>) => {
		state.active += 1;
		state.bookedAt = clock();
		enqueue(async () => {
			try {
				// The queue may have held the one before: a fetch never starts sooner than the delay after
				// the host's previous start (booked synchronously, so two tasks of one host cannot both pass).
				const delay = delayOf(host);
				if (delay > 0) {
					let now = clock();
					const at = Math.max(now, state.startedAt + delay);
					state.startedAt = at;
					if (at > now && !(await waited(at - now))) return;
					// The one before may have started late (its timer fired late on a busy loop): the delay counts
					// from its real start.
					now = clock();
					const realDue = state.startedNow + delay;
					if (realDue > now) {
						if (!(await waited(realDue - now))) return;
						now = clock();
					}
					state.startedNow = now;
					state.startedAt = Math.max(state.startedAt, now);
				}
				await work();
			} finally {
				// Inside the queued task: the next target is queued before this one counts as done, so the
				// queue is never idle while a host still has parked targets that are due.
				state.active -= 1;
				drain(host, state);
			}
		});
	};

	/** Waits `ms` of a host's delay; false when the run stopped meanwhile (the target is not started). */
	const waited = async (ms: number): Promise<boolean> => {
		if (stopped?.aborted) return false;
		try {
			await sleep(ms, stopped);
			return true;
		} catch {
			return false;
		}
	};

	/** The run stops: no parked target will start (a resume takes them); the run's idle wait ends. */
	const dropParked = () => {
		for (const state of hosts.values()) {
			if (state.wake !== null) clearTimeout(state.wake);
			state.wake = null;
			state.waiting.length = 0;
		}
		parked = 0;
		notify();
	};
	stopped?.addEventListener("abort", dropParked, { once: true });

	const drain = (host: string, state: HostState) => {
		if (stopped?.aborted) return;
		while (state.waiting.length > 0 && state.active < limit) {
			const due = dueAt(host, state);
			const now = clock();
			if (due > now) {
				// Not due yet: one timer per host wakes it (the run's idle wait covers parked targets).
				state.wake ??= setTimeout(() => {
					state.wake = null;
					drain(host, state);
				}, due - now);
				return;
			}
			const next = state.waiting.shift()!;
			parked -= 1;
			notify();
			start(host, state, next);
		}
		if (state.active > 0 || state.waiting.length > 0) return;
		// Idle: a host with a delay is remembered until it is due again (a target of it arriving sooner waits).
		const left = dueAt(host, state) - clock();
		if (left <= 0) {
			hosts.delete(host);
			return;
		}
		state.forget ??= setTimeout(() => {
			state.forget = null;
			drain(host, state);
		}, left);
		state.forget.unref();
	};

	return {
		submit(url, work) {
			// Fed after the stop: never parked (nothing would release it), left for a resume.
			if (stopped?.aborted) return;
			const host = hostOf(url);
			let state = hosts.get(host);
			if (!state) {
				state = {
					active: 0,
					waiting: [],
					bookedAt: Number.NEGATIVE_INFINITY,
					startedAt: Number.NEGATIVE_INFINITY,
					startedNow: Number.NEGATIVE_INFINITY,
					wake: null,
					forget: null,
				};
				hosts.set(host, state);
			}
			if (state.forget !== null) {
				clearTimeout(state.forget);
				state.forget = null;
			}
			state.waiting.push(work);
			parked += 1;
			drain(host, state);
		},
		get parked() {
			return parked;
		},
		parkedBelow(count) {
			if (parked < count) return Promise.resolve();
			return new Promise((resolve) => drained.push({ count, resolve }));
		},
	};
}
