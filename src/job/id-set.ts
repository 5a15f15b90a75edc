import { hash } from "node:crypto";
import { createTargetKeySet } from "./dedupe.js";

/**
 * Ids seen in a source's `id_column`, compared ignoring case (they name files, and some file
 * systems fold case). Held as 64-bit hashes in the typed-array key set, not as strings, so a
 * million-row source costs megabytes, not tens of them.
 */
export function createCaseFoldedIdSet(): { add(id: string): boolean } {
	const keys = createTargetKeySet();
	return {
		add(id) {
			const hex = hash("sha256", id.toLowerCase(), "hex");
			return keys.add(Number.parseInt(hex.slice(0, 8), 16), Number.parseInt(hex.slice(8, 16), 16));
		},
	};
}
