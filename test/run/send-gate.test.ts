import { describe, expect, it } from "vitest";
import type { Sleep } from "../../src/common/index.js";
import { createSendGate } from "../../src/run/flow/send-gate.js";

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
		await gate.acquire();
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
		await gate.acquire();
		expect(time.clock()).toBe(2200);
		gate.pause(100);
		expect(gate.pauses).toBe(2);
	});

	it("holds sends while the service reports no free slot, until one of our fetches finishes", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		await gate.acquire();
		await gate.acquire();
		gate.release(0); // someone else holds the key's other slots
		expect(gate.inFlight).toBe(1);
		let passed = false;
		const waiting = gate.acquire().then(() => {
			passed = true;
		});
		await Promise.resolve();
		await Promise.resolve();
		expect(passed).toBe(false);
		gate.release(1);
		await waiting;
		expect(passed).toBe(true);
		expect(time.sleeps).toEqual([]);
	});

	it("frees a permit when a fetch ends without headers, so a failed request cannot stall the queue", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		await gate.acquire();
		await gate.acquire();
		gate.release(0);
		const waiting = gate.acquire();
		gate.release(undefined);
		await expect(waiting).resolves.toBeUndefined();
	});

	it("probes after a while when no slot is free and nothing of ours is in flight to free one", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep, { probeAfterMs: 250 });
		await gate.acquire();
		gate.release(0);
		await gate.acquire();
		expect(time.sleeps).toEqual([250]);
	});

	it("with a key other processes share: slots heard before a quiet spell are asked again, and while none is free it asks again instead of sending blind", async () => {
		const time = virtualTime();
		const answers = [0, 0, 2];
		let probes = 0;
		const gate = createSendGate(time.clock, time.sleep, {
			probeAfterMs: 250,
			probeSlots: async () => {
				probes += 1;
				return answers.shift();
			},
		});
		await gate.acquire();
		gate.release(3); // three free when our fetch ended
		// Right after: what was heard still stands.
		expect(gate.tryAcquire()).toBe(true);
		gate.release(3);
		expect(probes).toBe(0);
		// A quiet spell (a crawl shard waiting for links): the others took those slots meanwhile.
		time.advance(50);
		expect(gate.tryAcquire()).toBe(false);
		await gate.acquire();
		// Asked: none free; asked again after 250 ms: none; then two: one send goes, the next waits for its answer.
		expect(probes).toBe(3);
		expect(time.sleeps).toEqual([250, 250]);
		expect(gate.inFlight).toBe(1);
		expect(gate.tryAcquire()).toBe(false);
		gate.release(2);
		expect(gate.tryAcquire()).toBe(true);
	});

	it("takes a send without waiting only while open and with a slot free", () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		expect(gate.tryAcquire()).toBe(true);
		gate.release(0);
		expect(gate.tryAcquire()).toBe(false);
		gate.release(3);
		gate.pause(500);
		expect(gate.tryAcquire()).toBe(false);
		time.advance(500);
		expect(gate.tryAcquire()).toBe(true);
		expect(gate.inFlight).toBe(1);
	});

	it("lets an abort end a wait", async () => {
		const time = virtualTime();
		const gate = createSendGate(time.clock, time.sleep);
		await gate.acquire();
		await gate.acquire();
		gate.release(0);
		const controller = new AbortController();
		const waiting = gate.acquire(controller.signal);
		controller.abort(new Error("stop"));
		await expect(waiting).rejects.toThrow("stop");
	});
});
