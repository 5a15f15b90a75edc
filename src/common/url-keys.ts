import { closeSync, mkdirSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { KeyTable, normalizedKeyLow } from "./key-table.js";

/**
 * The crawl's URL keys: every URL seen (seeded or discovered: journalled once) and, of those, the ones
 * claimed (handed out for fetching, or fetched as a redirect's final address: fetched once). A claimed
 * URL is always a seen one, so one structure holds both.
 *
 * Recent keys live in an open-addressing table of 64-bit keys (key-table.ts: SHA-256 bits of the
 * normalized URL) with a claimed bit per slot, outside the JS heap. When it holds `inMemory` keys they are sorted and
 * spilled to a file (a "run"), and the table starts again empty. A run keeps in memory only what
 * finds a key without reading the disk for most misses: a Bloom filter (10 bits a key, ~1 % false
 * positives), the first key of each 256-key block, and the claimed bits — about 1.5 bytes a URL
 * where the table takes 12–23. A lookup the filter lets through reads one 2 KiB block.
 */
export interface UrlKeys {
	/** Note the URL as seen; `true` when it was not seen before. */
	see(high: number, low: number): boolean;
	/** Note the URL as claimed (and seen); `true` when it was not claimed before. */
	claim(high: number, low: number): boolean;
	isClaimed(high: number, low: number): boolean;
	/** URLs seen. */
	readonly size: number;
	/** Bytes held in memory. */
	readonly bytes: number;
	/** Remove the spilled runs' files. */
	close(): void;
}

export interface UrlKeysOptions {
	/** Where spilled runs are written (created when the first run is); null keeps everything in memory. */
	readonly dir: string | null;
	/** Keys held in the in-memory table before it is spilled. @default 1,000,000 */
	readonly inMemory?: number;
}

/** Keys per block of a spilled run: the unit one lookup reads (2 KiB). */
const BLOCK = 256;
const BLOOM_BITS_PER_KEY = 10;
const BLOOM_HASHES = 7;

/** A spilled, sorted run of keys on disk, with what finds a key in it kept in memory. */
class SpilledRun {
	readonly #fd: number;
	readonly #count: number;
	readonly #bloom: Uint32Array;
	readonly #bloomBits: number;
	/** The first key of each block. */
	readonly #firsts: BigUint64Array;
	readonly #claimed: Uint32Array;
	readonly #block = new BigUint64Array(BLOCK);

	constructor(path: string, sorted: BigUint64Array, claimed: Uint32Array) {
		this.#count = sorted.length;
		this.#claimed = claimed;
		this.#bloomBits = Math.max(64, sorted.length * BLOOM_BITS_PER_KEY);
		this.#bloom = new Uint32Array(Math.ceil(this.#bloomBits / 32));
		this.#firsts = new BigUint64Array(Math.ceil(sorted.length / BLOCK));
		for (let at = 0; at < sorted.length; at++) {
			const key = sorted[at]!;
			this.#filter(Number(key >> 32n), Number(key & 0xffffffffn), true);
			if (at % BLOCK === 0) this.#firsts[at / BLOCK] = key;
		}
		this.#fd = openSync(path, "w+");
		const bytes = new Uint8Array(sorted.buffer, sorted.byteOffset, sorted.byteLength);
		for (let written = 0; written < bytes.length; ) written += writeSync(this.#fd, bytes, written);
	}

	/**
	 * The key's filter bits: two independent hashes combined for each probe (Kirsch–Mitzenmacher).
	 * `set` sets them; otherwise returns whether all are set (no closure: this runs per link).
	 */
	#filter(high: number, low: number, set: boolean): boolean {
		const a = Math.imul(low ^ (high >>> 7), 0x9e3779b1) >>> 0;
		const b = (Math.imul(high ^ (low >>> 11), 0x85ebca6b) | 1) >>> 0;
		for (let probe = 0; probe < BLOOM_HASHES; probe++) {
			const bit = (a + probe * b) % this.#bloomBits;
			if (set) this.#bloom[bit >>> 5]! |= 1 << (bit & 31);
			else if (((this.#bloom[bit >>> 5]! >>> (bit & 31)) & 1) === 0) return false;
		}
		return true;
	}

	/** The key's position in the run, or -1. */
	find(high: number, low: number): number {
		if (!this.#filter(high, low, false)) return -1;
		const key = (BigInt(high) << 32n) | BigInt(low);
		// The last block whose first key is not above the key.
		let lo = 0;
		let hi = this.#firsts.length - 1;
		while (lo < hi) {
			const mid = (lo + hi + 1) >>> 1;
			if (this.#firsts[mid]! <= key) lo = mid;
			else hi = mid - 1;
		}
		if (this.#firsts[lo]! > key) return -1;
		const start = lo * BLOCK;
		const length = Math.min(BLOCK, this.#count - start);
		const bytes = new Uint8Array(this.#block.buffer, 0, length * 8);
		for (let read = 0; read < bytes.length; ) {
			const got = readSync(this.#fd, bytes, read, bytes.length - read, start * 8 + read);
			if (got === 0) throw new Error("a spilled run of the crawl's URL keys is shorter than written");
			read += got;
		}
		let first = 0;
		let last = length - 1;
		while (first <= last) {
			const mid = (first + last) >>> 1;
			const at = this.#block[mid]!;
			if (at === key) return start + mid;
			if (at < key) first = mid + 1;
			else last = mid - 1;
		}
		return -1;
	}

	isClaimedAt(position: number): boolean {
		return ((this.#claimed[position >>> 5]! >>> (position & 31)) & 1) === 1;
	}

	setClaimed(position: number): void {
		this.#claimed[position >>> 5]! |= 1 << (position & 31);
	}

	get bytes(): number {
		return this.#bloom.byteLength + this.#firsts.byteLength + this.#claimed.byteLength;
	}

	close(): void {
		closeSync(this.#fd);
	}
}

export function createUrlKeys(options: UrlKeysOptions = { dir: null }): UrlKeys {
	const inMemory = options.inMemory ?? 1_000_000;
	// Runs left by a killed process are stale: the keys are rebuilt from the frontier journal.
	if (options.dir !== null) rmSync(options.dir, { recursive: true, force: true });
	const table = new KeyTable({ claims: true });
	const runs: SpilledRun[] = [];
	let spilledKeys = 0;

	/** Sort the table's keys into a run on disk, with their claimed bits, and start an empty table. */
	const spill = () => {
		const dir = options.dir!;
		const sorted = new BigUint64Array(table.size);
		let count = 0;
		for (let slot = 0; slot < table.slots; slot++) {
			if (table.isEmpty(slot)) continue;
			sorted[count++] = (BigInt(table.keys[slot * 2]!) << 32n) | BigInt(table.keys[slot * 2 + 1]!);
		}
		sorted.sort();
		const claimed = new Uint32Array(Math.ceil(sorted.length / 32));
		for (let at = 0; at < sorted.length; at++) {
			const key = sorted[at]!;
			if (table.isClaimedAt(table.find(Number(key >> 32n), Number(key & 0xffffffffn)))) {
				claimed[at >>> 5]! |= 1 << (at & 31);
			}
		}
		mkdirSync(dir, { recursive: true });
		runs.push(new SpilledRun(join(dir, `keys-${runs.length + 1}.bin`), sorted, claimed));
		spilledKeys += sorted.length;
		table.clear();
	};

	// Where `locate` found the key (no object per lookup: this runs for every link of every page):
	// a run and the key's position in it, or no run and its slot in the table (the empty slot where
	// it would go, when not found).
	let foundRun: SpilledRun | null = null;
	let foundAt = 0;
	const locate = (high: number, low: number): boolean => {
		foundRun = null;
		foundAt = table.find(high, low);
		if (!table.isEmpty(foundAt)) return true;
		for (let index = runs.length - 1; index >= 0; index--) {
			const position = runs[index]!.find(high, low);
			if (position >= 0) {
				foundRun = runs[index]!;
				foundAt = position;
				return true;
			}
		}
		return false;
	};

	const afterAdd = () => {
		if (options.dir !== null && table.size >= inMemory) spill();
	};

	return {
		see(high, low) {
			const h = high >>> 0;
			const l = normalizedKeyLow(h, low >>> 0);
			if (locate(h, l)) return false;
			table.insert(foundAt, h, l);
			afterAdd();
			return true;
		},
		claim(high, low) {
			const h = high >>> 0;
			const l = normalizedKeyLow(h, low >>> 0);
			if (!locate(h, l)) {
				table.setClaimed(table.insert(foundAt, h, l));
				afterAdd();
				return true;
			}
			const run = foundRun as SpilledRun | null;
			if (run ? run.isClaimedAt(foundAt) : table.isClaimedAt(foundAt)) return false;
			if (run) run.setClaimed(foundAt);
			else table.setClaimed(foundAt);
			return true;
		},
		isClaimed(high, low) {
			const h = high >>> 0;
			if (!locate(h, normalizedKeyLow(h, low >>> 0))) return false;
			const run = foundRun as SpilledRun | null;
			return run ? run.isClaimedAt(foundAt) : table.isClaimedAt(foundAt);
		},
		get size() {
			return spilledKeys + table.size;
		},
		get bytes() {
			return table.bytes + runs.reduce((sum, run) => sum + run.bytes, 0);
		},
		close() {
			for (const run of runs.splice(0)) run.close();
			if (options.dir !== null) rmSync(options.dir, { recursive: true, force: true });
		},
	};
}
