/**
 * Per-key concurrency slots (docs/service.md, "Concurrency and 429"): +1 when a fetch starts, −1 when it finishes (a task
 * keeps its slot until its fetch ends), and every slot expires after `slotExpiryMs` so a stuck one
 * cannot block a key forever. Expired slots are swept lazily, only when a count is needed.
 */
import type { Ledger } from "./ledger.js";

export interface Slot {
	readonly key: string;
	/** Free the slot; safe to call twice and after expiry. */
	release(): void;
}

interface KeySlots {
	/** Slot id → start time, ms since the epoch. Insertion order is start order. */
	readonly started: Map<number, number>;
	lastSweepMs: number;
}

/** How often a count may trigger a sweep when the key is below its limit, ms. */
const SWEEP_INTERVAL_MS = 250;

export class SlotTracker {
	#limit: number;
	readonly #expiryMs: number;
	readonly #ledger: Ledger;
	readonly #keys = new Map<string, KeySlots>();
	#nextId = 1;

	constructor(options: { limit: number; expiryMs: number; ledger: Ledger }) {
		this.#limit = options.limit;
		this.#expiryMs = options.expiryMs;
		this.#ledger = options.ledger;
	}

	/** Slots per key. */
	get limit(): number {
		return this.#limit;
	}

	set limit(value: number) {
		this.#limit = value;
	}

	/** Take a slot for `key`, or null when the key already holds `limit` live slots. */
	tryAcquire(key: string): Slot | null {
		const slots = this.#slotsOf(key);
		if (slots.started.size >= this.#limit) {
			this.#sweep(slots, Date.now());
			if (slots.started.size >= this.#limit) return null;
		}
		const id = this.#nextId++;
		slots.started.set(id, Date.now());
		this.#ledger.noteInFlight(key, slots.started.size);
		let released = false;
		return {
			key,
			release: () => {
				if (released) return;
				released = true;
				slots.started.delete(id);
			},
		};
	}

	/** Live slots the key holds now. */
	inFlight(key: string): number {
		const slots = this.#keys.get(key);
		if (!slots) return 0;
		const now = Date.now();
		if (now - slots.lastSweepMs >= SWEEP_INTERVAL_MS) this.#sweep(slots, now);
		return slots.started.size;
	}

	/** Free slots of the key now (the `X-RateLimit-Remaining` header). */
	remaining(key: string | null): number {
		return Math.max(0, this.#limit - (key === null ? 0 : this.inFlight(key)));
	}

	#slotsOf(key: string): KeySlots {
		let slots = this.#keys.get(key);
		if (!slots) {
			slots = { started: new Map(), lastSweepMs: 0 };
			this.#keys.set(key, slots);
		}
		return slots;
	}

	#sweep(slots: KeySlots, now: number): void {
		slots.lastSweepMs = now;
		const oldestAllowed = now - this.#expiryMs;
		for (const [id, startedMs] of slots.started) {
			// Start order = insertion order, so the first live slot ends the sweep.
			if (startedMs > oldestAllowed) break;
			slots.started.delete(id);
		}
	}
}
