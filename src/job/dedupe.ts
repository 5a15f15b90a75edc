import { KeyTable, normalizedKeyLow } from "../common/index.js";

/**
 * A set of 64-bit target keys: the one key table (common/key-table.ts) without claimed bits, held
 * outside the JS heap (1,000,000 keys in 16 MiB where a `Set<string>` of ids grows the heap ~53 MB).
 */
export interface TargetKeySet {
	/** Adds the key; `false` when it was already there. */
	add(high: number, low: number): boolean;
	has(high: number, low: number): boolean;
	readonly size: number;
	/** Bytes held by the table. */
	readonly bytes: number;
}

export function createTargetKeySet(initialSlots?: number): TargetKeySet {
	const table = new KeyTable(initialSlots !== undefined ? { initialSlots } : {});
	return {
		has(high, low) {
			const h = high >>> 0;
			return !table.isEmpty(table.find(h, normalizedKeyLow(h, low >>> 0)));
		},
		add(high, low) {
			const h = high >>> 0;
			const l = normalizedKeyLow(h, low >>> 0);
			const slot = table.find(h, l);
			if (!table.isEmpty(slot)) return false;
			table.insert(slot, h, l);
			return true;
		},
		get size() {
			return table.size;
		},
		get bytes() {
			return table.bytes;
		},
	};
}
