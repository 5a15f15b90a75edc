import { describe, expect, it } from "vitest";
import { createSendGate } from "../../src/run/send-gate.js";
import type { Sleep } from "../../src/shared/index.js";

/** A clock that only moves when the gate sleeps, so waits are observed exactly. */
function virtualTime() {
	let now = 1_000;
	const sleeps: number[] = [];
	const sleep: Sleep = async (ms) => {
		sleeps.push(ms);
		now += ms;
	};
	return { clock: () => now, sleep, sleeps, advance: (ms: number) => (now += ms) };
}

describe("send gate", () => {
	it("passes at once when nothing paused it", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		await gate.ready();
		expect(time.sleeps).toEqual([]);
	});

	it("merges overlapping 429 pauses into one window and waits until its end", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		gate.pause(1000);
		time.advance(200);
		gate.pause(1000); // a second worker's 429 from the same burst
		gate.pause(500); // shorter: inside the window already
		expect(gate.pauses).toBe(1);
		expect(gate.pausedUntil).toBe(1000 + 200 + 1000);
		await gate.ready();
		expect(time.clock()).toBe(2200);
		gate.pause(100);
		expect(gate.pauses).toBe(2);
	});

	it("holds sends when the service reports no free slot, until the next response", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		gate.observe(0); // this response's own slot frees: one send may follow
		await gate.ready();
		let passed = false;
		const waiting = gate.ready().then(() => {
			passed = true;
		});
		await Promise.resolve();
		expect(passed).toBe(false);
		gate.observe(2);
		await waiting;
		expect(passed).toBe(true);
	});

	it("frees a permit when a fetch ends without headers, so a failed request cannot stall the queue", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		gate.observe(0);
		await gate.ready();
		const waiting = gate.ready();
		gate.settled();
		await expect(waiting).resolves.toBeUndefined();
	});

	it("lets an abort end a wait", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		gate.observe(0);
		await gate.ready();
		const controller = new AbortController();
		const waiting = gate.ready(controller.signal);
		controller.abort(new Error("stop"));
		await expect(waiting).rejects.toThrow("stop");
	});
});
