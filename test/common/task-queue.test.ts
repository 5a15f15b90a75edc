import { describe, expect, it } from "vitest";
import { createTaskQueue } from "../../src/common/task-queue.js";

/** A task the test finishes by hand, recording when it started. */
function gatedTasks() {
	const started: number[] = [];
	const finish = new Map<number, { resolve: () => void; reject: (error: unknown) => void }>();
	const task = (id: number) => () =>
		new Promise<void>((resolve, reject) => {
			started.push(id);
			finish.set(id, { resolve, reject });
		});
	/** Finish task `id` and let the queue react (its settlement runs in a microtask). */
	const end = async (id: number, error?: unknown) => {
		const gate = finish.get(id);
		if (!gate) throw new Error(`task ${id} has not started`);
		if (error === undefined) gate.resolve();
		else gate.reject(error);
		await flush();
	};
	return { started, task, end };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the one task queue (targets, browser sessions, page workers)", () => {
	it("runs at most `concurrency` tasks at once and starts the rest in the order they came", async () => {
		const errors: unknown[] = [];
		const queue = createTaskQueue({ concurrency: 2, onError: (error) => errors.push(error) });
		const { started, task, end } = gatedTasks();
		for (let id = 1; id <= 5; id++) queue.add(task(id));
		expect(started).toEqual([1, 2]);
		expect(queue.pending).toBe(2);
		expect(queue.size).toBe(3);
		await end(2);
		expect(started).toEqual([1, 2, 3]);
		await end(1);
		await end(3);
		expect(started).toEqual([1, 2, 3, 4, 5]);
		expect(queue.size).toBe(0);
		await end(4);
		await end(5);
		expect(queue.pending).toBe(0);
		expect(errors).toEqual([]);
	});

	it("raising the concurrency starts waiting tasks at once; lowering it lets running ones finish first; 0 holds the waiting ones", async () => {
		const queue = createTaskQueue({ concurrency: 1, onError: () => undefined });
		const { started, task, end } = gatedTasks();
		for (let id = 1; id <= 6; id++) queue.add(task(id));
		expect(started).toEqual([1]);
		queue.concurrency = 3;
		expect(started).toEqual([1, 2, 3]);
		queue.concurrency = 1;
		await end(1);
		await end(2);
		// 3 still runs, at the new limit of one: nothing new starts until it ends.
		expect(started).toEqual([1, 2, 3]);
		await end(3);
		expect(started).toEqual([1, 2, 3, 4]);
		// No slot: what waits stays waiting until slots come back.
		queue.concurrency = 0;
		await end(4);
		expect(started).toEqual([1, 2, 3, 4]);
		queue.concurrency = 2;
		expect(started).toEqual([1, 2, 3, 4, 5, 6]);
		expect(() => {
			queue.concurrency = -1;
		}).toThrow(RangeError);
	});

	it("a task added while waiting ones start goes behind them", async () => {
		const queue = createTaskQueue({ concurrency: 1, onError: () => undefined });
		const { started, task } = gatedTasks();
		queue.add(task(1));
		// Task 2 adds task 4 as it starts, while task 3 still waits.
		queue.add(() => {
			queue.add(task(4));
			return task(2)();
		});
		queue.add(task(3));
		queue.concurrency = 3;
		expect(started).toEqual([1, 2, 3]);
		expect(queue.size).toBe(1);
	});

	it("clear drops the waiting tasks; the running ones finish and the queue goes idle", async () => {
		const queue = createTaskQueue({ concurrency: 2, onError: () => undefined });
		const { started, task, end } = gatedTasks();
		for (let id = 1; id <= 5; id++) queue.add(task(id));
		let idle = false;
		void queue.onIdle().then(() => {
			idle = true;
		});
		queue.clear();
		expect(queue.size).toBe(0);
		await end(1);
		expect(idle).toBe(false);
		await end(2);
		expect(idle).toBe(true);
		expect(started).toEqual([1, 2]);
	});

	it("onIdle waits for tasks added while it waits, and answers at once when idle", async () => {
		const queue = createTaskQueue({ concurrency: 1, onError: () => undefined });
		await queue.onIdle();
		const { task, end } = gatedTasks();
		queue.add(task(1));
		let idle = false;
		void queue.onIdle().then(() => {
			idle = true;
		});
		queue.add(task(2));
		await end(1);
		expect(idle).toBe(false);
		await end(2);
		expect(idle).toBe(true);
	});

	it("onSizeLessThan resolves once fewer than the limit wait", async () => {
		const queue = createTaskQueue({ concurrency: 1, onError: () => undefined });
		const { task, end } = gatedTasks();
		for (let id = 1; id <= 4; id++) queue.add(task(id));
		await queue.onSizeLessThan(4);
		let below = false;
		void queue.onSizeLessThan(2).then(() => {
			below = true;
		});
		await flush();
		expect(below).toBe(false);
		await end(1);
		expect(queue.size).toBe(2);
		expect(below).toBe(false);
		await end(2);
		expect(queue.size).toBe(1);
		expect(below).toBe(true);
	});

	it("a task that fails, even before its first await, is reported and frees its slot", async () => {
		const errors: unknown[] = [];
		const queue = createTaskQueue({ concurrency: 1, onError: (error) => errors.push(error) });
		const { started, task, end } = gatedTasks();
		const thrown = new Error("thrown at once");
		queue.add(task(1));
		queue.add(() => {
			throw thrown;
		});
		queue.add(task(3));
		const rejected = new Error("rejected");
		await end(1, rejected);
		expect(errors).toEqual([rejected, thrown]);
		expect(started).toEqual([1, 3]);
		await end(3);
		await queue.onIdle();
	});

	it("run gives its caller the task's result or failure, in a slot, and never reports to onError", async () => {
		const errors: unknown[] = [];
		const queue = createTaskQueue({ concurrency: 1, onError: (error) => errors.push(error) });
		const { started, task, end } = gatedTasks();
		queue.add(task(1));
		const answered = queue.run(async () => "answer");
		const thrownAtOnce = queue.run((): Promise<never> => {
			throw new Error("at once");
		});
		const rejected = queue.run(() => Promise.reject(new Error("later")));
		// One slot: nothing of `run`'s starts while task 1 holds it.
		expect(queue.size).toBe(3);
		const outcomes = Promise.allSettled([answered, thrownAtOnce, rejected]);
		await end(1);
		const [first, second, third] = await outcomes;
		expect(first).toEqual({ status: "fulfilled", value: "answer" });
		expect(second).toMatchObject({ status: "rejected", reason: { message: "at once" } });
		expect(third).toMatchObject({ status: "rejected", reason: { message: "later" } });
		await queue.onIdle();
		expect(started).toEqual([1]);
		expect(errors).toEqual([]);
	});
});
