/**
 * A small seeded PRNG, so fault injection, generated proxies and usage figures are reproducible
 * from a scenario's `seed`. mulberry32: 32-bit state, good enough for test data, and a few ns a call.
 */

/** Returns numbers in [0, 1). */
export type Random = () => number;

export function createRandom(seed: number): Random {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** Derive a seed from a base seed and some text (FNV-1a), so independent streams stay independent. */
export function deriveSeed(seed: number, text: string): number {
	let hash = (0x811c9dc5 ^ seed) >>> 0;
	for (let i = 0; i < text.length; i++) {
		hash ^= text.charCodeAt(i);
		hash = Math.imul(hash, 0x01000193) >>> 0;
	}
	return hash;
}

const ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789";

export function randomAlnum(random: Random, length: number): string {
	let text = "";
	for (let i = 0; i < length; i++) text += ALNUM[Math.floor(random() * ALNUM.length)];
	return text;
}

export function pickOne<T>(random: Random, items: readonly T[]): T {
	const item = items[Math.floor(random() * items.length)];
	if (item === undefined) throw new Error("pickOne needs a non-empty list");
	return item;
}
