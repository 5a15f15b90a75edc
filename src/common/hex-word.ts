/**
 * 8 lowercase hex digits of `text` from `start` as a uint32, or -1 when they are not. By hand: ids and
 * hashes are read this way once or twice per target, and `parseInt(text.slice(...), 16)` costs a
 * substring and the runtime's general number parser each time (~10× the instructions).
 */
export function hexWord(text: string, start: number): number {
	if (start + 8 > text.length) return -1;
	let value = 0;
	for (let at = start; at < start + 8; at += 1) {
		const code = text.charCodeAt(at);
		const digit = code >= 48 && code <= 57 ? code - 48 : code >= 97 && code <= 102 ? code - 87 : -1;
		if (digit < 0) return -1;
		value = value * 16 + digit;
	}
	return value;
}
