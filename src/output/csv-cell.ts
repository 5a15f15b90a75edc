import { DEFAULT_CSV_MAX_CELL, MIN_CSV_MAX_CELL } from "../common/index.js";

/**
 * Long CSV cells (docs/reference/limits.md): an `all: true` list of every link on a page
 * makes a cell of hundreds of thousands of characters, which spreadsheets cut at 32,767 and Python's
 * csv module refuses (131,072). Such a cell is cut, and says so; JSONL keeps the whole value.
 */

export { DEFAULT_CSV_MAX_CELL, MIN_CSV_MAX_CELL };

/** What ends a cut cell: the characters left out (UTF-16 code units, as spreadsheets count them). */
export function cutMarker(omitted: number): string {
	return `…[+${omitted} chars]`;
}

/**
 * `text` if it is at most `maxChars` long (or `maxChars` is 0: no limit); else its start and a trailing
 * `…[+N chars]`, the marker included within `maxChars`. A surrogate pair is never split.
 */
export function cutCell(text: string, maxChars: number): string {
	if (maxChars <= 0 || text.length <= maxChars) return text;
	// The marker's length depends on N, and N on what the marker leaves room for: settle both.
	let kept = Math.max(0, maxChars - cutMarker(text.length - maxChars).length);
	for (;;) {
		let end = kept;
		const last = text.charCodeAt(end - 1);
		if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
		const marker = cutMarker(text.length - end);
		if (end + marker.length <= maxChars || end === 0) return text.slice(0, end) + marker;
		kept = Math.max(0, maxChars - marker.length);
	}
}
