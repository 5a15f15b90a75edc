import { closeSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { KeyTable, normalizedKeyLow } from "./key-table.js";
import { makeDirectory } from "./make-directory.js";

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
 *
 * Every lookup asks each run in turn, so runs of one size are merged once there are four of them (up
 * to MAX_MERGED_KEYS): a duplicate check spilling every 262,144 keys asks 11 runs at ten million
 * keys, not 38 (2.4 against 7.0 µs a key there, random keys, one run each).
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
/** Runs of one size merged into one when there are this many. */
const MERGE_FANOUT = 4;
/**
 * No run larger than this is made by a merge: a merge runs on the event loop, and one of a million keys
 * holds it 0.3–0.6 s on a loaded 2-core machine (a spill of 262,144 keys 0.1–0.3 s), once a million keys.
 * Four million held it ~3 s.
 */
const MAX_MERGED_KEYS = 1_048_576;
/** Keys read or written per system call while merging (64 KiB). */
const IO_KEYS = 8192;

// A run's file holds its keys as the platform's 64-bit words, sorted; they are read as 32-bit halves so
// that no key becomes a BigInt on the lookup path.
const HIGH = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1 ? 1 : 0;
const LOW = 1 - HIGH;

/** Whether key (h1, l1) sorts before (h2, l2); all four are unsigned 32-bit numbers. */
const before = (h1: number, l1: number, h2: number, l2: number) => h1 < h2 || (h1 === h2 && l1 < l2);

/**
 * The key's filter bits: two independent hashes combined for each probe (Kirsch–Mitzenmacher).
 * `set` sets them; otherwise returns whether all are set (no closure: this runs per link).
 */
function filter(bloom: Uint32Array, bloomBits: number, high: number, low: number, set: boolean): boolean {
	const a = Math.imul(low ^ (high >>> 7), 0x9e3779b1) >>> 0;
	const b = (Math.imul(high ^ (low >>> 11), 0x85ebca6b) | 1) >>> 0;
	for (let probe = 0; probe < BLOOM_HASHES; probe++) {
		const bit = (a + probe * b) % bloomBits;
		if (set) bloom[bit >>> 5]! |= 1 << (bit & 31);
		else if (((bloom[bit >>> 5]! >>> (bit & 31)) & 1) === 0) return false;
	}
	return true;
}

/** A spilled, sorted run of keys on disk, with what finds a key in it kept in memory. */
class SpilledRun {
	/** How many merges made it (a spill is 0): runs of one level are merged together. */
	readonly level: number;
	readonly path: string;
	readonly fd: number;
	readonly count: number;
	readonly #bloom: Uint32Array;
	readonly #bloomBits: number;
	/** The first key of each block, as 32-bit halves (high, low). */
	readonly #firsts: Uint32Array;
	readonly #claimed: Uint32Array;
	readonly #block = new Uint32Array(BLOCK * 2);

	constructor(built: {
		level: number;
		path: string;
		fd: number;
		count: number;
		bloom: Uint32Array;
		bloomBits: number;
		firsts: Uint32Array;
		claimed: Uint32Array;
	}) {
		this.level = built.level;
		this.path = built.path;
		this.fd = built.fd;
		this.count = built.count;
		this.#bloom = built.bloom;
		this.#bloomBits = built.bloomBits;
		this.#firsts = built.firsts;
		this.#claimed = built.claimed;
	}

	/** The key's position in the run, or -1. */
	find(high: number, low: number): number {
		if (!filter(this.#bloom, this.#bloomBits, high, low, false)) return -1;
		const firsts = this.#firsts;
		// The last block whose first key is not above the key.
		let lo = 0;
		let hi = firsts.length / 2 - 1;
		while (lo < hi) {
			const mid = (lo + hi + 1) >>> 1;
			if (before(high, low, firsts[mid * 2]!, firsts[mid * 2 + 1]!)) hi = mid - 1;
			else lo = mid;
		}
		if (before(high, low, firsts[lo * 2]!, firsts[lo * 2 + 1]!)) return -1;
		const start = lo * BLOCK;
		const length = Math.min(BLOCK, this.count - start);
		readKeys(this.fd, this.#block, start, length);
		const block = this.#block;
		let first = 0;
		let last = length - 1;
		while (first <= last) {
			const mid = (first + last) >>> 1;
			const h = block[mid * 2 + HIGH]!;
			const l = block[mid * 2 + LOW]!;
			if (h === high && l === low) return start + mid;
			if (before(h, l, high, low)) first = mid + 1;
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

	/** Close the file and remove it. */
	remove(): void {
		closeSync(this.fd);
		rmSync(this.path, { force: true });
	}
}

/** Read `count` keys from position `at` of a run's file into `into` (as 32-bit halves). */
function readKeys(fd: number, into: Uint32Array, at: number, count: number): void {
	const bytes = new Uint8Array(into.buffer, into.byteOffset, count * 8);
	for (let read = 0; read < bytes.length; ) {
		const got = readSync(fd, bytes, read, bytes.length - read, at * 8 + read);
		if (got === 0) throw new Error("a spilled run of the URL keys is shorter than written");
		read += got;
	}
}

/** Writes a run's keys in ascending order and builds what finds them: its filter, block index and claimed bits. */
class RunWriter {
	readonly #path: string;
	readonly #fd: number;
	readonly #level: number;
	readonly #count: number;
	readonly #bloomBits: number;
	readonly #bloom: Uint32Array;
	readonly #firsts: Uint32Array;
	readonly #claimed: Uint32Array;
	readonly #buffer = new Uint32Array(IO_KEYS * 2);
	#buffered = 0;
	#at = 0;

	constructor(path: string, count: number, level: number) {
		this.#path = path;
		this.#level = level;
		this.#count = count;
		this.#bloomBits = Math.max(64, count * BLOOM_BITS_PER_KEY);
		this.#bloom = new Uint32Array(Math.ceil(this.#bloomBits / 32));
		this.#firsts = new Uint32Array(Math.ceil(count / BLOCK) * 2);
		this.#claimed = new Uint32Array(Math.ceil(count / 32));
		this.#fd = openSync(path, "w+");
	}

	add(high: number, low: number, claimed: boolean): void {
		const at = this.#at++;
		filter(this.#bloom, this.#bloomBits, high, low, true);
		if (at % BLOCK === 0) {
			this.#firsts[(at / BLOCK) * 2] = high;
			this.#firsts[(at / BLOCK) * 2 + 1] = low;
		}
		if (claimed) this.#claimed[at >>> 5]! |= 1 << (at & 31);
		this.#buffer[this.#buffered * 2 + HIGH] = high;
		this.#buffer[this.#buffered * 2 + LOW] = low;
		if (++this.#buffered === IO_KEYS) this.#flush();
	}

	#flush(): void {
		const bytes = new Uint8Array(this.#buffer.buffer, 0, this.#buffered * 8);
		for (let written = 0; written < bytes.length; ) written += writeSync(this.#fd, bytes, written);
		this.#buffered = 0;
	}

	finish(): SpilledRun {
		this.#flush();
		if (this.#at !== this.#count)
			throw new Error(`a run of the URL keys was given ${this.#at} keys, not ${this.#count}`);
		return new SpilledRun({
			level: this.#level,
			path: this.#path,
			fd: this.#fd,
			count: this.#count,
			bloom: this.#bloom,
			bloomBits: this.#bloomBits,
			firsts: this.#firsts,
			claimed: this.#claimed,
		});
	}
}

/** Reads a run's keys in order, a chunk at a time, for a merge. */
class RunReader {
	readonly run: SpilledRun;
	readonly #buffer = new Uint32Array(IO_KEYS * 2);
	#start = 0;
	#loaded = 0;
	/** The position of the current key in the run. */
	at = 0;
	high = 0;
	low = 0;

	constructor(run: SpilledRun) {
		this.run = run;
		this.#load();
	}

	get done(): boolean {
		return this.at >= this.run.count;
	}

	next(): void {
		this.at++;
		this.#load();
	}

	#load(): void {
		if (this.done) return;
		if (this.at >= this.#start + this.#loaded) {
			this.#start = this.at;
			this.#loaded = Math.min(IO_KEYS, this.run.count - this.at);
			readKeys(this.run.fd, this.#buffer, this.#start, this.#loaded);
		}
		const index = (this.at - this.#start) * 2;
		this.high = this.#buffer[index + HIGH]!;
		this.low = this.#buffer[index + LOW]!;
	}
}

/** One run holding the keys of `runs` (which never share a key) and their claimed bits; `runs` are removed. */
function mergeRuns(runs: readonly SpilledRun[], path: string): SpilledRun {
	const count = runs.reduce((sum, run) => sum + run.count, 0);
	const writer = new RunWriter(path, count, runs[0]!.level + 1);
	const readers = runs.map((run) => new RunReader(run));
	for (;;) {
		let least: RunReader | null = null;
		for (const reader of readers) {
			if (!reader.done && (least === null || before(reader.high, reader.low, least.high, least.low))) least = reader;
		}
		if (least === null) break;
		writer.add(least.high, least.low, least.run.isClaimedAt(least.at));
		least.next();
	}
	const merged = writer.finish();
	for (const run of runs) run.remove();
	return merged;
}

export function createUrlKeys(options: UrlKeysOptions = { dir: null }): UrlKeys {
	const inMemory = options.inMemory ?? 1_000_000;
	// Runs left by a killed process are stale: the keys are rebuilt from the frontier journal.
	if (options.dir !== null) rmSync(options.dir, { recursive: true, force: true });
	const table = new KeyTable({ claims: true });
	const runs: SpilledRun[] = [];
	let spilledKeys = 0;
	let files = 0;
	const nextPath = () => join(options.dir!, `keys-${++files}.bin`);

	/** Sort the table's keys into a run on disk, with their claimed bits, and start an empty table. */
	const spill = () => {
		const sorted = new BigUint64Array(table.size);
		const halves = new Uint32Array(sorted.buffer);
		let count = 0;
		for (let slot = 0; slot < table.slots; slot++) {
			if (table.isEmpty(slot)) continue;
			halves[count * 2 + HIGH] = table.keys[slot * 2]!;
			halves[count * 2 + LOW] = table.keys[slot * 2 + 1]!;
			count++;
		}
		sorted.sort();
		makeDirectory(options.dir!);
		const writer = new RunWriter(nextPath(), count, 0);
		for (let at = 0; at < count; at++) {
			const high = halves[at * 2 + HIGH]!;
			const low = halves[at * 2 + LOW]!;
			writer.add(high, low, table.isClaimedAt(table.find(high, low)));
		}
		runs.push(writer.finish());
		spilledKeys += count;
		table.clear();
		mergeTail();
	};

	/** Merge the last MERGE_FANOUT runs while they are of one level and their merge is not too large. */
	const mergeTail = () => {
		while (runs.length >= MERGE_FANOUT) {
			const tail = runs.slice(-MERGE_FANOUT);
			const level = tail[0]!.level;
			if (tail.some((run) => run.level !== level)) return;
			if (tail.reduce((sum, run) => sum + run.count, 0) > MAX_MERGED_KEYS) return;
			runs.splice(-MERGE_FANOUT, MERGE_FANOUT, mergeRuns(tail, nextPath()));
		}
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
			for (const run of runs.splice(0)) closeSync(run.fd);
			if (options.dir !== null) rmSync(options.dir, { recursive: true, force: true });
		},
	};
}
