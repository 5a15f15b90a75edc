/**
 * The crawl's URL keys: every URL seen (seeded or discovered: journalled once) and, of those, the ones
 * claimed (handed out for fetching, or fetched as a redirect's final address: fetched once). A claimed
 * URL is always a seen one, so one table holds both: 64-bit keys (SHA-256 bits of the normalized URL)
 * with open addressing and linear probing, and a claimed bit per slot — 8 bytes and a bit per slot,
 * outside the JS heap, where two sets of keys took twice that (16 MiB per million URLs at most).
 */
export interface UrlKeys {
	/** Note the URL as seen; `true` when it was not seen before. */
	see(high: number, low: number): boolean;
	/** Note the URL as claimed (and seen); `true` when it was not claimed before. */
	claim(high: number, low: number): boolean;
	isClaimed(high: number, low: number): boolean;
	/** URLs seen. */
	readonly size: number;
	/** Bytes held. */
	readonly bytes: number;
}

const INITIAL_SLOTS = 1024;
const MAX_LOAD = 0.7;

export function createUrlKeys(): UrlKeys {
	let slots = INITIAL_SLOTS;
	// Two uint32 per slot, high then low; (0, 0) is an empty slot, so a real (0, 0) key is stored as (0, 1).
	let keys = new Uint32Array(slots * 2);
	let claimed = new Uint32Array(slots / 32);
	let size = 0;

	/** The key's slot in `table`: where it is, or the empty slot where it would go. */
	const find = (table: Uint32Array, mask: number, high: number, low: number): number => {
		// The keys are SHA-256 bits already: the low word is a uniform hash as it is.
		let slot = low & mask;
		for (;;) {
			const h = table[slot * 2]!;
			const l = table[slot * 2 + 1]!;
			if ((h === 0 && l === 0) || (h === high && l === low)) return slot;
			slot = (slot + 1) & mask;
		}
	};

	const grow = () => {
		const nextSlots = slots * 2;
		const nextKeys = new Uint32Array(nextSlots * 2);
		const nextClaimed = new Uint32Array(nextSlots / 32);
		for (let slot = 0; slot < slots; slot++) {
			const h = keys[slot * 2]!;
			const l = keys[slot * 2 + 1]!;
			if (h === 0 && l === 0) continue;
			const to = find(nextKeys, nextSlots - 1, h, l);
			nextKeys[to * 2] = h;
			nextKeys[to * 2 + 1] = l;
			if ((claimed[slot >>> 5]! >>> (slot & 31)) & 1) nextClaimed[to >>> 5]! |= 1 << (to & 31);
		}
		keys = nextKeys;
		claimed = nextClaimed;
		slots = nextSlots;
	};

	/** The URL's slot, added as seen when it was not there; `added` says which. */
	let added = false;
	const slotOf = (high: number, low: number): number => {
		const h = high >>> 0;
		const l = h === 0 && low >>> 0 === 0 ? 1 : low >>> 0;
		let slot = find(keys, slots - 1, h, l);
		added = keys[slot * 2] === 0 && keys[slot * 2 + 1] === 0;
		if (added) {
			keys[slot * 2] = h;
			keys[slot * 2 + 1] = l;
			size++;
			if (size > slots * MAX_LOAD) {
				grow();
				slot = find(keys, slots - 1, h, l);
			}
		}
		return slot;
	};

	return {
		see(high, low) {
			slotOf(high, low);
			return added;
		},
		claim(high, low) {
			const slot = slotOf(high, low);
			const bit = 1 << (slot & 31);
			if (claimed[slot >>> 5]! & bit) return false;
			claimed[slot >>> 5]! |= bit;
			return true;
		},
		isClaimed(high, low) {
			const h = high >>> 0;
			const l = h === 0 && low >>> 0 === 0 ? 1 : low >>> 0;
			const slot = find(keys, slots - 1, h, l);
			if (keys[slot * 2] === 0 && keys[slot * 2 + 1] === 0) return false;
			return ((claimed[slot >>> 5]! >>> (slot & 31)) & 1) === 1;
		},
		get size() {
			return size;
		},
		get bytes() {
			return keys.byteLength + claimed.byteLength;
		},
	};
}
