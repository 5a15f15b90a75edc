/**
 * Work that must still happen when the process ends at once (a second Ctrl-C): synchronous and quick
 * (a few ms: no fsync, no network). Each returns a phrase for the one line printed, or nothing.
 */
export type LastWord = () => string | undefined;

export interface LastWords {
	/** Register `word`; returns the function that removes it again (when its owner ended normally). */
	add(word: LastWord): () => void;
	/**
	 * Run every registered word, the latest first (like nested `finally` blocks: the runner writes its
	 * summary before the command around it clears the progress bar). A word that throws is skipped.
	 * Returns the phrases, in that order.
	 */
	say(): string[];
}

export function createLastWords(): LastWords {
	const words: LastWord[] = [];
	return {
		add(word) {
			words.push(word);
			return () => {
				const at = words.indexOf(word);
				if (at >= 0) words.splice(at, 1);
			};
		},
		say() {
			const phrases: string[] = [];
			for (const word of words.splice(0).reverse()) {
				try {
					const phrase = word();
					if (phrase) phrases.push(phrase);
				} catch {
					// The process is ending now: one word failing must not keep the others from running.
				}
			}
			return phrases;
		},
	};
}
