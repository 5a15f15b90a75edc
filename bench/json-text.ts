/**
 * JSON as the repository's formatter (Biome: tabs, width 120) would print it, so that a results file
 * written by the bench never fails `npm run lint`: objects one key a line, arrays of plain values on
 * one line when they fit.
 */

const LINE_WIDTH = 120;
/** Columns a tab counts for in the width (Biome's default indent width). */
const TAB_WIDTH = 2;

function isPlain(value: unknown): boolean {
	return value === null || typeof value !== "object";
}

function fill(items: readonly string[], depth: number): string {
	const indent = "\t".repeat(depth);
	const lines: string[] = [];
	let line = "";
	for (const [index, item] of items.entries()) {
		const piece = index < items.length - 1 ? `${item},` : item;
		if (line !== "" && depth * TAB_WIDTH + line.length + 1 + piece.length > LINE_WIDTH) {
			lines.push(line);
			line = "";
		}
		line = line === "" ? piece : `${line} ${piece}`;
	}
	lines.push(line);
	return lines.map((text) => `${indent}${text}`).join("\n");
}

function format(value: unknown, depth: number, prefixLength: number): string {
	if (isPlain(value)) return JSON.stringify(value) ?? "null";
	const indent = "\t".repeat(depth + 1);
	const close = "\t".repeat(depth);
	if (Array.isArray(value)) {
		if (value.length === 0) return "[]";
		if (value.every(isPlain)) {
			const items = value.map((item) => JSON.stringify(item) ?? "null");
			const inline = `[${items.join(", ")}]`;
			if (depth * TAB_WIDTH + prefixLength + inline.length <= LINE_WIDTH) return inline;
			// Numbers are filled into as few lines as fit; other values go one a line.
			if (value.every((item) => typeof item === "number")) return `[\n${fill(items, depth + 1)}\n${close}]`;
		}
		return `[\n${value.map((item) => `${indent}${format(item, depth + 1, 0)}`).join(",\n")}\n${close}]`;
	}
	const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined);
	if (entries.length === 0) return "{}";
	const lines = entries.map(([key, item]) => {
		const name = `${JSON.stringify(key)}: `;
		return `${indent}${name}${format(item, depth + 1, name.length + 1)}`;
	});
	return `{\n${lines.join(",\n")}\n${close}}`;
}

/** `value` as formatted JSON text, with a final newline. */
export function jsonText(value: unknown): string {
	return `${format(value, 0, 0)}\n`;
}
