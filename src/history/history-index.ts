import { hash } from "node:crypto";

/** What the history keeps per target: its latest outcome and its latest ok record's time, hash and place. */
export interface TargetHistory {
	/** The latest record's status in the job's runs: "ok", "failed", or null when it has none. */
	readonly latest: "ok" | "failed" | null;
	/** The latest ok record's finish time (epoch ms), or null. */
	readonly okAt: number | null;
	/** Its `content_hash`, or null. */
	readonly okHash: string | null;
	/** Its run (index into `runs`) and byte offset in that run's results.jsonl, to read its data back. */
	readonly okRun: number;
	readonly okOffset: number;
}

const HEX16 = /^[0-9a-f]{16}$/;
const EMPTY = 0;

/** A target id's 64-bit key: a derived id is one already; a chosen id is hashed. */
export function idKey(id: string): [number, number] {
	const hex = HEX16.test(id) ? id : hash("sha256", id, "hex").slice(0, 16);
	return [Number.parseInt(hex.slice(0, 8), 16) >>> 0 || 1, Number.parseInt(hex.slice(8, 16), 16) >>> 0];
}

/**
 * The per-job history as an open-addressing table on typed arrays: about 40 bytes a target, no
 * object per entry, so a million targets load in milliseconds and hold ~60 MB at most.
 */
export class HistoryIndex {
	#capacity: number;
	#size = 0;
	#hi: Uint32Array;
	#lo: Uint32Array;
	#status: Uint8Array; // 0 none, 1 ok, 2 failed (latest)
	#okAt: Float64Array;
	#okHashHi: Uint32Array;
	#okHashLo: Uint32Array;
	#okRun: Uint16Array;
	#okOffset: Float64Array;

	constructor(capacity = 1 << 12) {
		this.#capacity = capacity;
		this.#hi = new Uint32Array(capacity);
		this.#lo = new Uint32Array(capacity);
		this.#status = new Uint8Array(capacity);
		this.#okAt = new Float64Array(capacity).fill(Number.NaN);
		this.#okHashHi = new Uint32Array(capacity);
		this.#okHashLo = new Uint32Array(capacity);
		this.#okRun = new Uint16Array(capacity);
		this.#okOffset = new Float64Array(capacity).fill(-1);
	}

	get size(): number {
		return this.#size;
	}

	#slot(hi: number, lo: number, insert: boolean): number {
		if (insert && (this.#size + 1) * 2 > this.#capacity) this.#grow();
		let slot = (Math.imul(hi ^ lo, 0x9e3779b1) >>> 0) & (this.#capacity - 1);
		for (;;) {
			const atHi = this.#hi[slot]!;
			if (atHi === EMPTY) {
				if (!insert) return -1;
				this.#hi[slot] = hi;
				this.#lo[slot] = lo;
				this.#size += 1;
				return slot;
			}
			if (atHi === hi && this.#lo[slot] === lo) return slot;
			slot = (slot + 1) & (this.#capacity - 1);
		}
	}

	/** Twice the slots: every entry is moved into a new table (a load factor of at most one half). */
	#grow(): void {
		const bigger = new HistoryIndex(this.#capacity * 2);
		for (let i = 0; i < this.#capacity; i += 1) {
			if (this.#hi[i] === EMPTY) continue;
			const slot = bigger.#slot(this.#hi[i]!, this.#lo[i]!, true);
			bigger.#status[slot] = this.#status[i]!;
			bigger.#okAt[slot] = this.#okAt[i]!;
			bigger.#okHashHi[slot] = this.#okHashHi[i]!;
			bigger.#okHashLo[slot] = this.#okHashLo[i]!;
			bigger.#okRun[slot] = this.#okRun[i]!;
			bigger.#okOffset[slot] = this.#okOffset[i]!;
		}
		this.#capacity = bigger.#capacity;
		this.#hi = bigger.#hi;
		this.#lo = bigger.#lo;
		this.#status = bigger.#status;
		this.#okAt = bigger.#okAt;
		this.#okHashHi = bigger.#okHashHi;
		this.#okHashLo = bigger.#okHashLo;
		this.#okRun = bigger.#okRun;
		this.#okOffset = bigger.#okOffset;
	}

	get(id: string): TargetHistory | null {
		const [hi, lo] = idKey(id);
		const slot = this.#slot(hi, lo, false);
		if (slot < 0) return null;
		const okAt = this.#okAt[slot]!;
		const status = this.#status[slot];
		return {
			latest: status === 1 ? "ok" : status === 2 ? "failed" : null,
			okAt: Number.isNaN(okAt) ? null : okAt,
			okHash: Number.isNaN(okAt) ? null : hex8(this.#okHashHi[slot]!) + hex8(this.#okHashLo[slot]!),
			okRun: this.#okRun[slot]!,
			okOffset: this.#okOffset[slot]!,
		};
	}

	/** A record of run `runIndex` at byte `offset` of its results.jsonl (later records win). */
	record(
		id: string,
		status: string,
		finishedAt: number,
		contentHash: string | null,
		runIndex: number,
		offset: number,
	): void {
		if (status !== "ok" && status !== "failed") return;
		const [hi, lo] = idKey(id);
		const slot = this.#slot(hi, lo, true);
		this.#status[slot] = status === "ok" ? 1 : 2;
		if (status !== "ok") return;
		this.#okAt[slot] = finishedAt;
		const hash = contentHash && HEX16.test(contentHash) ? contentHash : "0000000000000000";
		this.#okHashHi[slot] = Number.parseInt(hash.slice(0, 8), 16) >>> 0;
		this.#okHashLo[slot] = Number.parseInt(hash.slice(8, 16), 16) >>> 0;
		this.#okRun[slot] = runIndex;
		this.#okOffset[slot] = offset;
	}

	/** Where every target's latest ok record is: (run, offset) pairs, in no particular order. */
	*okPlaces(): Generator<{ run: number; offset: number }> {
		for (let slot = 0; slot < this.#capacity; slot += 1) {
			if (this.#hi[slot] === EMPTY || Number.isNaN(this.#okAt[slot]!) || this.#okOffset[slot]! < 0) continue;
			yield { run: this.#okRun[slot]!, offset: this.#okOffset[slot]! };
		}
	}

	/** The table as bytes (capacity, size, then each column), for the index file. */
	toBuffer(): Buffer {
		const head = Buffer.alloc(8);
		head.writeUInt32LE(this.#capacity, 0);
		head.writeUInt32LE(this.#size, 4);
		return Buffer.concat([
			head,
			...[
				this.#hi,
				this.#lo,
				this.#status,
				this.#okAt,
				this.#okHashHi,
				this.#okHashLo,
				this.#okRun,
				this.#okOffset,
			].map((column) => Buffer.from(column.buffer, column.byteOffset, column.byteLength)),
		]);
	}

	static fromBuffer(bytes: Buffer): HistoryIndex {
		const capacity = bytes.readUInt32LE(0);
		if (capacity === 0 || (capacity & (capacity - 1)) !== 0 || bytes.length !== 8 + capacity * 35) {
			throw new Error("not a history index");
		}
		const index = new HistoryIndex(capacity);
		let at = 8;
		const take = <T extends { set(source: ArrayLike<number>): void }>(
			column: T,
			width: number,
			make: (b: ArrayBuffer) => ArrayLike<number>,
		) => {
			const slice = bytes.subarray(at, at + capacity * width);
			// A copy into a fresh, aligned buffer (the file's bytes may start at any offset).
			column.set(make(new Uint8Array(slice).buffer));
			at += capacity * width;
		};
		take(index.#hi, 4, (b) => new Uint32Array(b));
		take(index.#lo, 4, (b) => new Uint32Array(b));
		take(index.#status, 1, (b) => new Uint8Array(b));
		take(index.#okAt, 8, (b) => new Float64Array(b));
		take(index.#okHashHi, 4, (b) => new Uint32Array(b));
		take(index.#okHashLo, 4, (b) => new Uint32Array(b));
		take(index.#okRun, 2, (b) => new Uint16Array(b));
		take(index.#okOffset, 8, (b) => new Float64Array(b));
		index.#size = bytes.readUInt32LE(4);
		return index;
	}
}

function hex8(value: number): string {
	return value.toString(16).padStart(8, "0");
}
