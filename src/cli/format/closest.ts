import { editDistance } from "../../common/index.js";

export interface Candidate<T> {
	readonly item: T;
	/** Texts the input is compared with (e.g. an id and a display name); the best one counts. */
	readonly keys: readonly string[];
}

/**
 * The `limit` candidates closest to the input, case-insensitively. A key that contains the input (or
 * is contained in it) ranks as close as one edit, since a partial name is the commonest near miss.
 */
export function closestMatches<T>(input: string, candidates: ReadonlyArray<Candidate<T>>, limit = 3): T[] {
	const needle = input.toLowerCase();
	const scored = candidates.map((candidate) => {
		const score = Math.min(
			...candidate.keys.map((key) => {
				const hay = key.toLowerCase();
				const distance = editDistance(needle, hay);
				return needle !== "" && (hay.includes(needle) || needle.includes(hay)) ? Math.min(distance, 1) : distance;
			}),
		);
		return { item: candidate.item, score };
	});
	return scored
		.sort((a, b) => a.score - b.score)
		.slice(0, limit)
		.map((entry) => entry.item);
}
