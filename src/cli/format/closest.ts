/** Edit distance (insert, delete, substitute), for "did you mean" suggestions. Two rows, O(a·b) time. */
export function editDistance(a: string, b: string): number {
	let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
	for (let i = 1; i <= a.length; i++) {
		const current = [i];
		for (let j = 1; j <= b.length; j++) {
			const cost = a[i - 1] === b[j - 1] ? 0 : 1;
			current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
		}
		previous = current;
	}
	return previous[b.length] ?? 0;
}

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
