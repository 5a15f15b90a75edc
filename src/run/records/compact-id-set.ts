import { createTargetKeySet } from "../../job/index.js";

const HEX_ID = /^[0-9a-f]{16}$/;

/**
 * A set of target ids that stays small at a million entries. Derived ids (16 hex digits, the job
 * loader's 64-bit key) go into the same typed-array table the loader dedupes with (8 bytes each);
 * ids users chose themselves fall back to a plain Set.
 */
export interface IdSet {
	add(id: string): void;
	has(id: string): boolean;
	readonly size: number;
}

export function createIdSet(): IdSet {
	const keys = createTargetKeySet(1 << 16);
	const others = new Set<string>();
	const high = (id: string) => Number.parseInt(id.slice(0, 8), 16);
	const low = (id: string) => Number.parseInt(id.slice(8), 16);
	return {
		add(id) {
			if (HEX_ID.test(id)) keys.add(high(id), low(id));
			else others.add(id);
		},
		has(id) {
			return HEX_ID.test(id) ? keys.has(high(id), low(id)) : others.has(id);
		},
		get size() {
			return keys.size + others.size;
		},
	};
}
