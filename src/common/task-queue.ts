/**
 * The one queue of the runner: at most `concurrency` tasks running, the rest waiting in order. The run's
 * targets (fetches and browser sessions alike), the account's browser sessions and the page workers'
 * slots each are one of these.
 *
 * What p-queue does for the run, without what the run does not use: priorities, timeouts, events, and
 * a promise per task for its result, which cost ~7 % of the runner's instructions a target
 * (bench/README.md). A task added with `add` reports its failure to `onError` (the run reports it as an
 * internal error) and settles nothing else; `run` is for the few tasks whose caller awaits a result.
 */
export interface TaskQueue {
	/** Start `task` now if a slot is free, else queue it behind the others. */
	add(task: () => Promise<void>): void;
	/** `add`, for a caller that awaits the task's result (or its failure). */
	run<T>(task: () => Promise<T>): Promise<T>;
	/** Tasks waiting for a slot. */
	readonly size: number;
	/** Tasks running. */
	readonly pending: number;
	/**
	 * Slots: raising it starts waiting tasks at once; lowering it lets running ones finish. 0 holds every
	 * waiting task until it is raised (a shard waiting for its turn on a shared key).
	 */
	concurrency: number;
	/** Drop every waiting task (running ones finish). */
	clear(): void;
	/** Resolves once nothing waits and nothing runs (at once if so already). */
	onIdle(): Promise<void>;
	/** Resolves once fewer than `limit` tasks wait (at once if so already). */
	onSizeLessThan(limit: number): Promise<void>;
}

/** Waiting tasks left at the front of the array before it is compacted. */
const COMPACT_AFTER = 1024;

export function createTaskQueue(options: {
	readonly concurrency: number;
	/** A failure of a task added with `add`. @default rethrown on its own (an unhandled rejection) */
	readonly onError?: (error: unknown) => void;
}): TaskQueue {
	const onError =
		options.onError ??
		((error: unknown) => {
			throw error;
		});
	let concurrency = slotsOf(options.concurrency);
	// A FIFO as an array and the index of its head: shift() would move every element per task.
	let waiting: Array<(() => Promise<void>) | undefined> = [];
	let head = 0;
	let running = 0;
	let sizeWaiters: Array<{ readonly limit: number; readonly resolve: () => void }> = [];
	let idleWaiters: Array<() => void> = [];

	const size = () => waiting.length - head;

	const settled = () => {
		running -= 1;
		drain();
	};
	const failed = (error: unknown) => {
		try {
			onError(error);
		} finally {
			settled();
		}
	};

	const start = (task: () => Promise<void>) => {
		running += 1;
		let promise: Promise<void>;
		try {
			promise = task();
		} catch (error) {
			promise = Promise.reject(error);
		}
		promise.then(settled, failed);
	};

	/** Start waiting tasks while slots are free; then tell whoever waits for a smaller queue or idleness. */
	function drain(): void {
		while (running < concurrency && head < waiting.length) {
			const task = waiting[head] as () => Promise<void>;
			waiting[head] = undefined;
			head += 1;
			if (head >= COMPACT_AFTER && head * 2 >= waiting.length) {
				waiting = waiting.slice(head);
				head = 0;
			}
			start(task);
		}
		if (sizeWaiters.length > 0) wakeSizeWaiters();
		if (running === 0 && head === waiting.length && idleWaiters.length > 0) {
			const wake = idleWaiters;
			idleWaiters = [];
			for (const resolve of wake) resolve();
		}
	}

	function wakeSizeWaiters(): void {
		const now = size();
		// Usually one waiter (the feeder), checked per finished task: no array unless one wakes.
		let woken = false;
		for (const waiter of sizeWaiters) woken ||= now < waiter.limit;
		if (!woken) return;
		const all = sizeWaiters;
		sizeWaiters = [];
		for (const waiter of all) {
			if (now < waiter.limit) waiter.resolve();
			else sizeWaiters.push(waiter);
		}
	}

	const add = (task: () => Promise<void>): void => {
		if (running < concurrency && head === waiting.length) {
			start(task);
			return;
		}
		waiting.push(task);
	};

	return {
		add,
		run<T>(task: () => Promise<T>): Promise<T> {
			return new Promise<T>((resolve, reject) =>
				add(async () => {
					// Settled here whether the task throws at once or later: nothing reaches `onError`.
					try {
						resolve(await task());
					} catch (error) {
						reject(error);
					}
				}),
			);
		},
		get size() {
			return size();
		},
		get pending() {
			return running;
		},
		get concurrency() {
			return concurrency;
		},
		set concurrency(value: number) {
			concurrency = slotsOf(value);
			drain();
		},
		clear() {
			waiting = [];
			head = 0;
			drain();
		},
		onIdle() {
			if (running === 0 && head === waiting.length) return Promise.resolve();
			return new Promise((resolve) => idleWaiters.push(resolve));
		},
		onSizeLessThan(limit) {
			if (size() < limit) return Promise.resolve();
			return new Promise((resolve) => sizeWaiters.push({ limit, resolve }));
		},
	};
}

function slotsOf(value: number): number {
	if (!(value >= 0)) throw new RangeError(`a queue's slots are a number of 0 or more (got ${value})`);
	return Math.floor(value);
}
