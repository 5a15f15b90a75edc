import { describe, expect, it } from "vitest";
import { createCreditBudget } from "../../src/run/flow/credit-budget.js";
import { fullJitterDelayMs } from "../../src/run/target/retry-timing.js";

describe("credit budget", () => {
	it("books worst cases synchronously and never lets reservations overshoot", () => {
		const budget = createCreditBudget(10);
		expect(budget.tryReserve(6)).toBe(true);
		expect(budget.tryReserve(5)).toBe(false);
		expect(budget.tryReserve(4)).toBe(true);
		expect(budget.reserved).toBe(10);
		budget.commit(6, 2); // auto mode that did not upgrade
		expect(budget.spent).toBe(2);
		expect(budget.tryReserve(4)).toBe(true);
		budget.release(4);
		budget.commit(4, 0);
		expect(budget.spent).toBe(2);
		expect(budget.reserved).toBe(0);
	});

	it("has no limit without max_credits and starts from credits already spent on resume", () => {
		expect(createCreditBudget(null).tryReserve(1e9)).toBe(true);
		const resumed = createCreditBudget(10, 9);
		expect(resumed.tryReserve(2)).toBe(false);
		expect(resumed.tryReserve(1)).toBe(true);
	});

	it("lets a reservation that does not fit wait for one in flight to settle, and gives up when none can free room", async () => {
		const budget = createCreditBudget(10);
		expect(budget.tryReserve(10)).toBe(true);
		const waiting = budget.reserve(5, () => false);
		let answer: boolean | null = null;
		void waiting.then((fits) => {
			answer = fits;
		});
		await Promise.resolve();
		expect(answer).toBeNull(); // waits: the 10 in flight may cost less
		budget.commit(10, 5); // it cost 5: 5 fit now
		expect(await waiting).toBe(true);
		expect(budget.reserved).toBe(5);
		// Nothing else in flight can free room: false at once, not a wait forever.
		budget.commit(5, 5);
		expect(await budget.reserve(1, () => false)).toBe(false);
	});

	it("stops waiting once the run is stopping", async () => {
		const budget = createCreditBudget(10);
		budget.tryReserve(5);
		budget.tryReserve(5);
		let stopping = false;
		const waiting = budget.reserve(6, () => stopping);
		stopping = true;
		budget.commit(5, 5); // 6 still does not fit beside the other 5 in flight: a running run would wait on
		expect(await waiting).toBe(false);
		expect(budget.reserved).toBe(5);
	});
});

describe("full-jitter backoff", () => {
	const options = { backoffMs: 1000, maxBackoffMs: 5000 };
	it("doubles the ceiling per retry up to the cap", () => {
		expect(fullJitterDelayMs(1, options, () => 0.999)).toBe(999);
		expect(fullJitterDelayMs(2, options, () => 0.999)).toBe(1998);
		expect(fullJitterDelayMs(3, options, () => 0.999)).toBe(3996);
		expect(fullJitterDelayMs(4, options, () => 0.999)).toBe(4995);
		expect(fullJitterDelayMs(30, options, () => 0.999)).toBe(4995);
	});
	it("draws the whole range down to zero", () => {
		expect(fullJitterDelayMs(3, options, () => 0)).toBe(0);
		expect(fullJitterDelayMs(3, options, () => 0.5)).toBe(2000);
	});
});
