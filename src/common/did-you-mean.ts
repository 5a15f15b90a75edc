/**
 * Optimal-string-alignment distance (Damerau–Levenshtein without repeated edits of one substring):
 * insertions, deletions, substitutions and swaps of two neighbours each cost 1, so the common
 * typos — a dropped letter (`concurency`), a swapped pair (`mdoe`) — are one edit away.
 */
export function editDistance(a: string, b: string): number {
	if (a === b) return 0;
	if (a.length === 0) return b.length;
	if (b.length === 0) return a.length;
	const width = b.length + 1;
	// Three rows are enough: the swap rule looks back two rows.
	let before = new Array<number>(width).fill(0);
	let previous = Array.from({ length: width }, (_, j) => j);
	let current = new Array<number>(width).fill(0);
	for (let i = 1; i <= a.length; i++) {
		current[0] = i;
		for (let j = 1; j <= b.length; j++) {
			const cost = a[i - 1] === b[j - 1] ? 0 : 1;
			let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
			if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
				best = Math.min(best, before[j - 2]! + 1);
			}
			current[j] = best;
		}
		[before, previous, current] = [previous, current, before];
	}
	return previous[b.length]!;
}

/**
 * The closest candidate to a misspelt word, or `undefined` when none is close enough to be a
 * plausible typo. Case is ignored (`Name` → `name`). Short words allow one edit, longer ones two,
 * so `id` never "means" `url`.
 */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
	const lower = word.toLowerCase();
	const maxDistance = lower.length <= 3 ? 1 : 2;
	let best: string | undefined;
	let bestDistance = Number.POSITIVE_INFINITY;
	for (const candidate of candidates) {
		const distance = editDistance(lower, candidate.toLowerCase());
		if (distance < bestDistance) {
			best = candidate;
			bestDistance = distance;
		}
	}
	return bestDistance <= maxDistance ? best : undefined;
}
