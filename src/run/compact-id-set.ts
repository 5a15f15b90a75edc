const HEX_ID = /^[0-9a-f]{16}$/;

/**
 * A set of target ids that stays small at a million entries. Derived ids (16 hex digits, 64 bits)
 * are kept exactly as two 32-bit words in an open-addressing table (8 bytes each, ~16 MB per
 * million at worst load); ids users chose themselves fall back to a plain Set.
 */
export interface IdSet {
	add(id: string): void;
	has(id: string): boolean;
	readonly size: number;
}

export function createIdSet(): IdSet {
	let capacity = 1 << 16;
	let table = new Uint32Array(capacity * 2);
	// 0/0 marks an empty slot; the rare real id 0000000000000000 is kept aside.
	let hasZero = false;
	let hexCount = 0;
	const others = new Set<string>();

	const slotOf = (hi: number, lo: number, cap: number) => (Math.imul(hi ^ lo, 0x9e3779b1) >>> 0) & (cap - 1);

	function insert(target: Uint32Array, cap: number, hi: number, lo: number): boolean {
		let slot = slotOf(hi, lo, cap);
		for (;;) {
			const h = target[slot * 2]!;
			const l = target[slot * 2 + 1]!;
			if (h === 0 && l === 0) {
				target[slot * 2] = hi;
				target[slot * 2 + 1] = lo;
				return true;
			}
			if (h === hi && l === lo) return false;
			slot = (slot + 1) & (cap - 1);
		}
	}

	function grow() {
		const old = table;
		const oldCapacity = capacity;
		capacity *= 2;
		table = new Uint32Array(capacity * 2);
		for (let slot = 0; slot < oldCapacity; slot += 1) {
			const hi = old[slot * 2]!;
			const lo = old[slot * 2 + 1]!;
			if (hi !== 0 || lo !== 0) insert(table, capacity, hi, lo);
		}
	}

	const words = (id: string): [number, number] => [
		Number.parseInt(id.slice(0, 8), 16) >>> 0,
		Number.parseInt(id.slice(8), 16) >>> 0,
	];

	return {
		add(id) {
			if (!HEX_ID.test(id)) {
				others.add(id);
				return;
			}
			const [hi, lo] = words(id);
			if (hi === 0 && lo === 0) {
				if (!hasZero) hexCount += 1;
				hasZero = true;
				return;
			}
			if ((hexCount + 1) * 2 > capacity) grow();
			if (insert(table, capacity, hi, lo)) hexCount += 1;
		},
		has(id) {
			if (!HEX_ID.test(id)) return others.has(id);
			const [hi, lo] = words(id);
			if (hi === 0 && lo === 0) return hasZero;
			let slot = slotOf(hi, lo, capacity);
			for (;;) {
				const h = table[slot * 2]!;
				const l = table[slot * 2 + 1]!;
				if (h === 0 && l === 0) return false;
				if (h === hi && l === lo) return true;
				slot = (slot + 1) & (capacity - 1);
			}
		},
		get size() {
			return hexCount + others.size;
		},
	};
}
