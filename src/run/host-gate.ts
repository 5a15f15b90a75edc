/**
 * `per_host_concurrency`: at most `limit` fetches in flight per target host (politeness), whatever the
 * account allows. A target whose host is busy waits *outside* the run's queue (parked), so it never
 * holds a queue slot another host could use: a slow host with many pages does not starve the rest.
 * When one of the host's fetches ends, its slot passes straight to the host's next parked target.
 * Hosts with nothing running or parked are forgotten: memory follows the hosts busy now.
 */
export interface HostGate {
	/** Hand `work` to the queue now if its host has a free slot, else park it until one frees. */
	submit(url: string, work: () => Promise<void>): void;
	/** Targets parked, all hosts together: the feeder keeps this bounded. */
	readonly parked: number;
	/** Resolves once fewer than `count` targets are parked. */
	parkedBelow(count: number): Promise<void>;
}

interface HostState {
	active: number;
	readonly waiting: Array<() => Promise<void>>;
}

function hostOf(url: string): string {
	try {
		return new URL(url).host;
	} catch {
		return url;
	}
}

/** @param enqueue puts work on the run's queue (which bounds the run's total in flight). */
export function createHostGate(limit: number, enqueue: (work: () => Promise<void>) => void): HostGate {
	const hosts = new Map<string, HostState>();
	let parked = 0;
	const drained: Array<{ count: number; resolve: () => void }> = [];

	const notify = () => {
		for (let index = drained.length - 1; index >= 0; index--) {
			const waiter = drained[index]!;
			if (parked < waiter.count) {
				drained.splice(index, 1);
				waiter.resolve();
			}
		}
	};

	const start = (host: string, state: HostState, work: () => Promise<void>) => {
		enqueue(async () => {
			try {
				await work();
			} finally {
				// Inside the queued task: the next target is queued before this one counts as done, so the
				// queue is never idle while a host still has parked targets.
				release(host, state);
			}
		});
	};

	const release = (host: string, state: HostState) => {
		const next = state.waiting.shift();
		if (next) {
			parked -= 1;
			notify();
			start(host, state, next);
			return;
		}
		state.active -= 1;
		if (state.active === 0) hosts.delete(host);
	};

	return {
		submit(url, work) {
			const host = hostOf(url);
			let state = hosts.get(host);
			if (!state) {
				state = { active: 0, waiting: [] };
				hosts.set(host, state);
			}
			if (state.active < limit) {
				state.active += 1;
				start(host, state, work);
				return;
			}
			state.waiting.push(work);
			parked += 1;
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
