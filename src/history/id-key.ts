import { hash } from "node:crypto";
import { hexWord } from "../common/index.js";

/**
 * A target id's 64-bit key as two unsigned 32-bit words: a derived id (16 hex digits) is one already; a
 * chosen id is hashed. `merge` keeps a set of these to tell shards that overlap. Parsed by hand: a regex
 * plus two parseInt calls cost several times as much at a million targets.
 */
export function idKey(id: string): [number, number] {
	let hi = id.length === 16 ? hexWord(id, 0) : -1;
	let lo = hi >= 0 ? hexWord(id, 8) : -1;
	if (lo < 0) {
		const hex = hash("sha256", id, "hex");
		hi = hexWord(hex, 0);
		lo = hexWord(hex, 8);
	}
	// A high word of 0 is kept as 1, as it always was (key sets rely on keys never being 0).
	return [hi || 1, lo];
}
