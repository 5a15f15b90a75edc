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
/** Bytes an entry takes in the entry columns: hi, lo, status, latestAt, okAt, okHashHi, okHashLo, okRun, okOffset. */
const BYTES_PER_ENTRY = 4 + 4 + 1 + 8 + 8 + 4 + 4 + 4 + 8;

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
 * The per-job history on typed arrays, no object per entry: entries are dense columns (45 bytes an
 * entry), found through an open-addressing table of entry numbers (4 bytes a slot, at most half the
 * slots used) — about 55 bytes a target where a table of whole entries took 90–180. The file holds the
 * slot table and the columns as they are, so opening it is a read per column, not a re-insertion
 * (measured: bench/history-bench.ts, `npm run bench -- --only=history`).
 */
export class HistoryIndex {
	/** Entry number + 1 per slot; 0 is an empty slot. */
	#slots: Uint32Array;
	#size = 0;
	/** Entries the columns have room for. */
	#room: number;
	#hi: Uint32Array;
	#lo: Uint32Array;
	#status: Uint8Array; // 0 none, 1 ok, 2 failed (latest)
	#latestAt: Float64Array; // the latest record's finish time (epoch ms), NaN before any
	#okAt: Float64Array;
	#okHashHi: Uint32Array;
	#okHashLo: Uint32Array;
	#okRun: Uint32Array;
	#okOffset: Float64Array;

	constructor(slots = 1 << 12, room = slots >>> 1) {
		this.#slots = new Uint32Array(slots);
		this.#room = room;
		this.#hi = new Uint32Array(room);
		this.#lo = new Uint32Array(room);
		this.#status = new Uint8Array(room);
		this.#latestAt = new Float64Array(room).fill(Number.NaN);
		this.#okAt = new Float64Array(room).fill(Number.NaN);
		this.#okHashHi = new Uint32Array(room);
		this.#okHashLo = new Uint32Array(room);
		this.#okRun = new Uint32Array(room);
		this.#okOffset = new Float64Array(room).fill(-1);
	}

	get size(): number {
		return this.#size;
	}

	/** The entry of key (hi, lo), or -1; `insert` adds it when missing. */
	#entry(hi: number, lo: number, insert: boolean): number {
		if (insert && (this.#size + 1) * 2 > this.#slots.length) this.#growSlots(this.#slots.length * 2);
		const mask = this.#slots.length - 1;
		let slot = (Math.imul(hi ^ lo, 0x9e3779b1) >>> 0) & mask;
		for (;;) {
			const held = this.#slots[slot]!;
			if (held === 0) {
				if (!insert) return -1;
				if (this.#size === this.#room) this.#growRoom(Math.max(16, Math.ceil(this.#room * 1.5)));
				const entry = this.#size;
				this.#hi[entry] = hi;
				this.#lo[entry] = lo;
				this.#slots[slot] = entry + 1;
				this.#size += 1;
				return entry;
			}
			const entry = held - 1;
			if (this.#hi[entry] === hi && this.#lo[entry] === lo) return entry;
			slot = (slot + 1) & mask;
		}
	}

	/** A bigger slot table: only the entry numbers move (4 bytes each). */
	#growSlots(count: number): void {
		const slots = new Uint32Array(count);
		const mask = count - 1;
		for (let entry = 0; entry < this.#size; entry += 1) {
			let slot = (Math.imul(this.#hi[entry]! ^ this.#lo[entry]!, 0x9e3779b1) >>> 0) & mask;
			while (slots[slot] !== 0) slot = (slot + 1) & mask;
			slots[slot] = entry + 1;
		}
		this.#slots = slots;
	}

	/** Room for `room` entries in the columns (the entries kept as they are). */
	#growRoom(room: number): void {
		const grow = <T extends Uint8Array | Uint32Array | Float64Array>(column: T, fill?: number): T => {
			const bigger = new (column.constructor as new (length: number) => T)(room);
			if (fill !== undefined) bigger.fill(fill, column.length);
			bigger.set(column);
			return bigger;
		};
		this.#hi = grow(this.#hi);
		this.#lo = grow(this.#lo);
		this.#status = grow(this.#status);
		this.#latestAt = grow(this.#latestAt, Number.NaN);
		this.#okAt = grow(this.#okAt, Number.NaN);
		this.#okHashHi = grow(this.#okHashHi);
		this.#okHashLo = grow(this.#okHashLo);
		this.#okRun = grow(this.#okRun);
		this.#okOffset = grow(this.#okOffset, -1);
		this.#room = room;
	}

	get(id: string): TargetHistory | null {
		const [hi, lo] = idKey(id);
		const entry = this.#entry(hi, lo, false);
		if (entry < 0) return null;
		const okAt = this.#okAt[entry]!;
		const status = this.#status[entry];
		const hashHi = this.#okHashHi[entry]!;
		const hashLo = this.#okHashLo[entry]!;
		return {
			latest: status === 1 ? "ok" : status === 2 ? "failed" : null,
			okAt: Number.isNaN(okAt) ? null : okAt,
			// Spelled out only when asked (change tracking): freshness looks up every target and needs no string.
			get okHash() {
				return Number.isNaN(okAt) ? null : hex8(hashHi) + hex8(hashLo);
			},
			okRun: this.#okRun[entry]!,
			okOffset: this.#okOffset[entry]!,
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
		const entry = this.#entry(hi, lo, true);
		const at = Number.isFinite(finishedAt) ? finishedAt : 0;
		if (!(at < this.#latestAt[entry]!)) {
			this.#status[entry] = status === "ok" ? 1 : 2;
			this.#latestAt[entry] = at;
		}
		if (status !== "ok" || at < this.#okAt[entry]!) return;
		this.#okAt[entry] = at;
		const hash = contentHash && HEX16.test(contentHash) ? contentHash : "0000000000000000";
		this.#okHashHi[entry] = Number.parseInt(hash.slice(0, 8), 16) >>> 0;
		this.#okHashLo[entry] = Number.parseInt(hash.slice(8, 16), 16) >>> 0;
		this.#okRun[entry] = runIndex;
		this.#okOffset[entry] = offset;
	}

	/** Where every target's latest ok record is: (run, offset) pairs, in no particular order. */
	*okPlaces(): Generator<{ run: number; offset: number }> {
		for (let entry = 0; entry < this.#size; entry += 1) {
			if (Number.isNaN(this.#okAt[entry]!) || this.#okOffset[entry]! < 0) continue;
			yield { run: this.#okRun[entry]!, offset: this.#okOffset[entry]! };
		}
	}

	/** Room for `count` entries in all without growing (grown once now): a run that knows its target count. */
	reserve(count: number): void {
		let slots = this.#slots.length;
		while (count * 2 > slots) slots *= 2;
		if (slots > this.#slots.length) this.#growSlots(slots);
		if (count > this.#room) this.#growRoom(count);
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

	/**
	 * Write the index (slot count, size, the slot table, then each column's `size` entries) at the
	 * file's position: each part straight from its own memory, so saving a million entries needs no
	 * second copy of them.
	 */
	writeTo(fd: number): void {
		const head = Buffer.alloc(8);
		head.writeUInt32LE(this.#slots.length, 0);
		head.writeUInt32LE(this.#size, 4);
		writeAll(fd, head);
		writeAll(fd, new Uint8Array(this.#slots.buffer, this.#slots.byteOffset, this.#slots.byteLength));
		for (const column of this.#columns()) {
			writeAll(fd, new Uint8Array(column.buffer, column.byteOffset, this.#size * column.BYTES_PER_ELEMENT));
		}
	}

	/**
	 * Read an index written by `writeTo`, `length` bytes from `position` of the file: each part is read
	 * straight into its own memory (no copy of the whole file first).
	 */
	static readFrom(fd: number, position: number, length: number): HistoryIndex {
		const head = Buffer.alloc(8);
		if (readAll(fd, head, position) !== 8) throw new Error("not a history index");
		const slots = head.readUInt32LE(0);
		const size = head.readUInt32LE(4);
		const valid =
			slots !== 0 &&
			(slots & (slots - 1)) === 0 &&
			size * 2 <= slots &&
			length === 8 + slots * 4 + size * BYTES_PER_ENTRY;
		if (!valid) throw new Error("not a history index");
		const index = new HistoryIndex(slots, size);
		let at = position + 8;
		for (const part of [index.#slots, ...index.#columns()]) {
			const bytes = new Uint8Array(part.buffer, part.byteOffset, part.byteLength);
			if (readAll(fd, bytes, at) !== bytes.length) throw new Error("not a history index");
			at += bytes.length;
		}
		index.#size = size;
		// A slot naming an entry that is not there would read past the columns: the file is not ours.
		for (const held of index.#slots) if (held > size) throw new Error("not a history index");
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
