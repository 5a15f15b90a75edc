import { hash } from "node:crypto";
import { readSync, writeSync } from "node:fs";

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
/** hi, lo, status, latestAt, okAt, okHashHi, okHashLo, okRun, okOffset. */
const BYTES_PER_SLOT = 4 + 4 + 1 + 8 + 8 + 4 + 4 + 4 + 8;

/** 8 lowercase hex digits of `text` from `start` as a uint32, or -1 when they are not. */
function hexWord(text: string, start: number): number {
	let value = 0;
	for (let at = start; at < start + 8; at += 1) {
		const code = text.charCodeAt(at);
		const digit = code >= 48 && code <= 57 ? code - 48 : code >= 97 && code <= 102 ? code - 87 : -1;
		if (digit < 0) return -1;
		value = value * 16 + digit;
	}
	return value;
}

/**
 * A target id's 64-bit key: a derived id (16 hex digits) is one already; a chosen id is hashed. Parsed
 * by hand: this runs once per target per run (freshness, --retry-failed, change tracking), and a regex
 * plus two parseInt calls cost several times as much at a million targets (bench/history-bench.ts).
 */
export function idKey(id: string): [number, number] {
	let hi = id.length === 16 ? hexWord(id, 0) : -1;
	let lo = hi >= 0 ? hexWord(id, 8) : -1;
	if (lo < 0) {
		const hex = hash("sha256", id, "hex");
		hi = hexWord(hex, 0);
		lo = hexWord(hex, 8);
	}
	// 0 marks an empty slot in the table: a key whose high word is 0 is stored as 1.
	return [hi || 1, lo];
}

/**
 * The per-job history as an open-addressing table on typed arrays (45 bytes a slot, at most half the
 * slots used): no object per entry, and the file is the table itself, so opening it is one read and a
 * copy per column — ~80 ms for a million targets, where re-inserting them would cost seconds
 * (measured: bench/history-bench.ts, `npm run bench -- --only=history`).
 */
export class HistoryIndex {
	#capacity: number;
	#size = 0;
	#hi: Uint32Array;
	#lo: Uint32Array;
	#status: Uint8Array; // 0 none, 1 ok, 2 failed (latest)
	#latestAt: Float64Array; // the latest record's finish time (epoch ms), NaN before any
	#okAt: Float64Array;
	#okHashHi: Uint32Array;
	#okHashLo: Uint32Array;
	#okRun: Uint32Array;
	#okOffset: Float64Array;

	constructor(capacity = 1 << 12) {
		this.#capacity = capacity;
		this.#hi = new Uint32Array(capacity);
		this.#lo = new Uint32Array(capacity);
		this.#status = new Uint8Array(capacity);
		this.#latestAt = new Float64Array(capacity).fill(Number.NaN);
		this.#okAt = new Float64Array(capacity).fill(Number.NaN);
		this.#okHashHi = new Uint32Array(capacity);
		this.#okHashLo = new Uint32Array(capacity);
		this.#okRun = new Uint32Array(capacity);
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
			bigger.#latestAt[slot] = this.#latestAt[i]!;
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
		this.#latestAt = bigger.#latestAt;
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
		const hashHi = this.#okHashHi[slot]!;
		const hashLo = this.#okHashLo[slot]!;
		return {
			latest: status === 1 ? "ok" : status === 2 ? "failed" : null,
			okAt: Number.isNaN(okAt) ? null : okAt,
			// Spelled out only when asked (change tracking): freshness looks up every target and needs no string.
			get okHash() {
				return Number.isNaN(okAt) ? null : hex8(hashHi) + hex8(hashLo);
			},
			okRun: this.#okRun[slot]!,
			okOffset: this.#okOffset[slot]!,
		};
	}

	/**
	 * A record of run `runIndex` at byte `offset` of its results.jsonl. The later `finishedAt` wins, not
	 * the later call: run folders are folded in name order, and run ids made in the same second do not
	 * sort by time (nor does a resumed session's folder); on a tie the later call wins.
	 */
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
		const at = Number.isFinite(finishedAt) ? finishedAt : 0;
		if (!(at < this.#latestAt[slot]!)) {
			this.#status[slot] = status === "ok" ? 1 : 2;
			this.#latestAt[slot] = at;
		}
		if (status !== "ok" || at < this.#okAt[slot]!) return;
		this.#okAt[slot] = at;
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

	/** Room for `count` entries in all without growing (grown once now): a run that knows its target count. */
	reserve(count: number): void {
		while (count * 2 > this.#capacity) this.#grow();
	}

	#columns(): Array<Uint8Array | Uint32Array | Float64Array> {
		return [
			this.#hi,
			this.#lo,
			this.#status,
			this.#latestAt,
			this.#okAt,
			this.#okHashHi,
			this.#okHashLo,
			this.#okRun,
			this.#okOffset,
		];
	}

	/** Bytes `writeTo` writes: capacity and size, then each column. */
	get byteLength(): number {
		return 8 + this.#capacity * BYTES_PER_SLOT;
	}

	/**
	 * Write the table (capacity, size, then each column) at the file's position: each column straight
	 * from its own memory, so saving a million entries needs no second copy of them.
	 */
	writeTo(fd: number): void {
		const head = Buffer.alloc(8);
		head.writeUInt32LE(this.#capacity, 0);
		head.writeUInt32LE(this.#size, 4);
		writeAll(fd, head);
		for (const column of this.#columns())
			writeAll(fd, new Uint8Array(column.buffer, column.byteOffset, column.byteLength));
	}

	/**
	 * Read a table written by `writeTo`, `length` bytes from `position` of the file: each column is read
	 * straight into its own memory (no copy of the whole file first).
	 */
	static readFrom(fd: number, position: number, length: number): HistoryIndex {
		const head = Buffer.alloc(8);
		if (readAll(fd, head, position) !== 8) throw new Error("not a history index");
		const capacity = head.readUInt32LE(0);
		if (capacity === 0 || (capacity & (capacity - 1)) !== 0 || length !== 8 + capacity * BYTES_PER_SLOT) {
			throw new Error("not a history index");
		}
		const index = new HistoryIndex(capacity);
		let at = position + 8;
		for (const column of index.#columns()) {
			const bytes = new Uint8Array(column.buffer, column.byteOffset, column.byteLength);
			if (readAll(fd, bytes, at) !== bytes.length) throw new Error("not a history index");
			at += bytes.length;
		}
		index.#size = head.readUInt32LE(4);
		return index;
	}
}

function writeAll(fd: number, bytes: Uint8Array): void {
	for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
}

/** Fill `bytes` from `position`; returns how many bytes there were. */
function readAll(fd: number, bytes: Uint8Array, position: number): number {
	let read = 0;
	while (read < bytes.length) {
		const got = readSync(fd, bytes, read, bytes.length - read, position + read);
		if (got === 0) break;
		read += got;
	}
	return read;
}

function hex8(value: number): string {
	return value.toString(16).padStart(8, "0");
}
