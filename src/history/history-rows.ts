import { hash } from "node:crypto";
import { hexWord } from "../shared/index.js";

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
	// A high word of 0 is kept as 1, as it always was (merge's key set relies on keys never being 0).
	return [hi || 1, lo];
}

/**
 * Bytes a history row takes, on disk as in memory. As 32-bit words: 0 key hi, 1 key lo, 2–3 latestAt,
 * 4–5 okAt, 6–7 okOffset (float64s: epoch ms, NaN before any; byte offset, -1 when none), 8–9 okHash
 * hi/lo, 10 okRun, 11 status (0 none, 1 ok, 2 failed). Fixed-size rows, so a file of them sorted by key
 * is searched by reading one block, and merged by streaming (the platform's byte order: a file from a
 * machine of the other order reads as unsorted and is rebuilt).
 */
export const ROW_BYTES = 48;
const WORDS = ROW_BYTES / 4;
const DOUBLES = ROW_BYTES / 8;

/** Rows in one ArrayBuffer, read and written through two typed views (no object per row). */
export class HistoryRows {
	readonly capacity: number;
	readonly bytes: Uint8Array;
	readonly #words: Uint32Array;
	readonly #doubles: Float64Array;

	constructor(capacity: number) {
		this.capacity = capacity;
		const buffer = new ArrayBuffer(capacity * ROW_BYTES);
		this.bytes = new Uint8Array(buffer);
		this.#words = new Uint32Array(buffer);
		this.#doubles = new Float64Array(buffer);
	}

	hi(row: number): number {
		return this.#words[row * WORDS]!;
	}

	lo(row: number): number {
		return this.#words[row * WORDS + 1]!;
	}

	/** Row `row` as one record of status `status` finished at `finishedAt` (epoch ms). */
	setRecord(
		row: number,
		id: string,
		status: "ok" | "failed",
		finishedAt: number,
		contentHash: string | null,
		run: number,
		offset: number,
	): void {
		// Indexed, not destructured: destructuring an array runs the iterator protocol (~450 instructions a row).
		const key = idKey(id);
		const words = this.#words;
		const doubles = this.#doubles;
		const w = row * WORDS;
		const d = row * DOUBLES;
		const at = Number.isFinite(finishedAt) ? finishedAt : 0;
		words[w] = key[0];
		words[w + 1] = key[1];
		doubles[d + 1] = at;
		words[w + 11] = status === "ok" ? 1 : 2;
		if (status === "ok") {
			// A hash that is not 16 hex digits is kept as zeros (as no hash).
			const hashHi = contentHash !== null && contentHash.length === 16 ? hexWord(contentHash, 0) : -1;
			const hashLo = hashHi >= 0 ? hexWord(contentHash!, 8) : -1;
			doubles[d + 2] = at;
			doubles[d + 3] = offset;
			words[w + 8] = hashLo >= 0 ? hashHi : 0;
			words[w + 9] = Math.max(hashLo, 0);
			words[w + 10] = run;
		} else {
			doubles[d + 2] = Number.NaN;
			doubles[d + 3] = -1;
			words[w + 8] = 0;
			words[w + 9] = 0;
			words[w + 10] = 0;
		}
	}

	/** Copy row `from` of `source` into row `row`. */
	copy(row: number, source: HistoryRows, from: number): void {
		this.bytes.set(source.bytes.subarray(from * ROW_BYTES, (from + 1) * ROW_BYTES), row * ROW_BYTES);
	}

	/**
	 * Fold row `from` of `source`, a later record of the same target, into row `row`. The later finish
	 * time wins, not the later fold: run folders are folded in name order, and run ids made in the same
	 * second do not sort by time (nor does a resumed session's folder); on a tie the later fold wins.
	 */
	combine(row: number, source: HistoryRows, from: number): void {
		const d = row * DOUBLES;
		const sd = from * DOUBLES;
		const latestAt = source.#doubles[sd + 1]!;
		if (!(latestAt < this.#doubles[d + 1]!)) {
			this.#doubles[d + 1] = latestAt;
			this.#words[row * WORDS + 11] = source.#words[from * WORDS + 11]!;
		}
		const okAt = source.#doubles[sd + 2]!;
		if (Number.isNaN(okAt) || okAt < this.#doubles[d + 2]!) return;
		this.#doubles[d + 2] = okAt;
		this.#doubles[d + 3] = source.#doubles[sd + 3]!;
		const w = row * WORDS;
		const sw = from * WORDS;
		this.#words[w + 8] = source.#words[sw + 8]!;
		this.#words[w + 9] = source.#words[sw + 9]!;
		this.#words[w + 10] = source.#words[sw + 10]!;
	}

	/** The latest ok record's place, or null when the target has none. */
	okPlace(row: number): { run: number; offset: number } | null {
		const d = row * DOUBLES;
		const offset = this.#doubles[d + 3]!;
		if (Number.isNaN(this.#doubles[d + 2]!) || offset < 0) return null;
		return { run: this.#words[row * WORDS + 10]!, offset };
	}

	/** Row `row` as the history of its target (its values copied out: the rows are reused). */
	target(row: number): TargetHistory {
		const w = row * WORDS;
		const d = row * DOUBLES;
		const status = this.#words[w + 11];
		const okAt = this.#doubles[d + 2]!;
		const hashHi = this.#words[w + 8]!;
		const hashLo = this.#words[w + 9]!;
		return {
			latest: status === 1 ? "ok" : status === 2 ? "failed" : null,
			okAt: Number.isNaN(okAt) ? null : okAt,
			// Spelled out only when asked (change tracking): freshness looks up every target and needs no string.
			get okHash() {
				return Number.isNaN(okAt) ? null : hex8(hashHi) + hex8(hashLo);
			},
			okRun: this.#words[w + 10]!,
			okOffset: this.#doubles[d + 3]!,
		};
	}
}

/** Whether key (hi1, lo1) sorts before (hi2, lo2): unsigned, high word first. */
export function keyBefore(hi1: number, lo1: number, hi2: number, lo2: number): boolean {
	return hi1 < hi2 || (hi1 === hi2 && lo1 < lo2);
}

/** Rows one chunk may hold: the row's place in the chunk fits the 16 bits `sortedOrder` packs it into. */
export const MAX_CHUNK_ROWS = 1 << 16;

/**
 * The rows 0..count-1 of a chunk in key order, ties in row order (the order they were recorded in).
 * Each row becomes one 64-bit number — its key's high 48 bits, then its place — sorted natively (no
 * comparator, no object per row); the rare neighbours whose keys share those 48 bits are put in order
 * by their full key after.
 */
export function sortedOrder(rows: HistoryRows, count: number): Uint32Array {
	if (count > MAX_CHUNK_ROWS) throw new RangeError(`a chunk of ${count} rows: at most ${MAX_CHUNK_ROWS}`);
	const packed = new BigUint64Array(count);
	const words = new Uint32Array(packed.buffer);
	// Little-endian: the low word of each 64-bit number comes first.
	for (let row = 0; row < count; row += 1) {
		words[row * 2] = ((rows.lo(row) & 0xffff0000) | row) >>> 0;
		words[row * 2 + 1] = rows.hi(row);
	}
	packed.sort();
	const order = new Uint32Array(count);
	for (let at = 0; at < count; at += 1) order[at] = words[at * 2]! & 0xffff;
	for (let at = 1; at < count; at += 1) {
		// Insertion within a run of equal 48-bit prefixes: by the full low word, then by place.
		for (let back = at; back > 0; back -= 1) {
			const a = order[back - 1]!;
			const b = order[back]!;
			if (rows.hi(a) !== rows.hi(b) || (rows.lo(a) ^ rows.lo(b)) >>> 16 !== 0) break;
			if (rows.lo(a) < rows.lo(b) || (rows.lo(a) === rows.lo(b) && a < b)) break;
			order[back - 1] = b;
			order[back] = a;
		}
	}
	return order;
}

function hex8(value: number): string {
	return value.toString(16).padStart(8, "0");
}
