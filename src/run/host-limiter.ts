/**
 * `per_host_concurrency`: at most `limit` fetches in flight per target host (politeness), whatever the
 * account allows. A target waits for its host's slot inside its queue slot, so the run's total in
 * flight never exceeds the queue's concurrency either. Hosts with nothing running or waiting are
 * forgotten: memory follows the hosts busy now, not every host seen.
 */
export interface HostLimiter {
	run<T>(url: string, work: () => Promise<T>): Promise<T>;
}

interface HostState {
	active: number;
	waiting: Array<() => void>;
}

function hostOf(url: string): string {
	try {
		return new URL(url).host;
	} catch {
		return url;
	}
}

export function createHostLimiter(limit: number): HostLimiter {
	const hosts = new Map<string, HostState>();
	const release = (host: string, state: HostState) => {
		const next = state.waiting.shift();
		if (next) {
			next();
			return;
		}
		state.active -= 1;
		if (state.active === 0) hosts.delete(host);
	};
	return {
		async run(url, work) {
			const host = hostOf(url);
			let state = hosts.get(host);
			if (!state) {
				state = { active: 0, waiting: [] };
				hosts.set(host, state);
			}
			// A released slot passes straight to the next waiter (active stays the same).
			if (state.active < limit) state.active += 1;
			else await new Promise<void>((resolve) => state.waiting.push(resolve));
			try {
				return await work();
			} finally {
				release(host, state);
			}
		},
	};
}
