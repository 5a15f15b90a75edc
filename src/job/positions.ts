import { type Document, isAlias, isMap, isScalar, isSeq, type LineCounter, type Node } from "yaml";

/** A path into the job file's data, as zod reports it: `["targets", 2, "mode"]`. */
export type DataPath = ReadonlyArray<PropertyKey>;

/** 1-based line and column. */
export interface Position {
	line: number;
	col: number;
}

/** `targets[2].mode`: how a path is written in messages. */
export function formatPath(path: DataPath): string {
	let text = "";
	for (const segment of path) {
		if (typeof segment === "number") text += `[${segment}]`;
		else text += text === "" ? String(segment) : `.${String(segment)}`;
	}
	return text;
}

interface Located {
	node: Node | null;
	/** The key of the last map entry walked through, if any. */
	key: Node | null;
	/** True when every segment of the path was found. */
	complete: boolean;
}

function keyText(key: unknown): string | undefined {
	if (isScalar(key)) return String(key.value);
	return undefined;
}

function walk(doc: Document, path: DataPath): Located {
	let node = doc.contents as Node | null;
	let key: Node | null = null;
	for (const segment of path) {
		// Follow aliases so `*defaults` still leads somewhere; the position is then the anchor's.
		if (node && isAlias(node)) node = (node.resolve(doc) as Node | undefined) ?? node;
		if (node && isMap(node)) {
			const pair = node.items.find((item) => keyText(item.key) === String(segment));
			if (!pair) return { node, key, complete: false };
			key = pair.key as Node;
			node = pair.value as Node | null;
			continue;
		}
		if (node && isSeq(node) && typeof segment === "number") {
			const item = node.items[segment] as Node | undefined;
			if (!item) return { node, key, complete: false };
			key = null;
			node = item;
			continue;
		}
		return { node, key, complete: false };
	}
	return { node, key, complete: true };
}

/** `key:` with nothing after it parses to an empty null scalar; the key is the better place to point. */
function isEmptyValue(node: Node): boolean {
	return isScalar(node) && node.value === null && (node.source === "" || node.source === undefined);
}

/**
 * Where a path sits in the source: the value's first character, or the key's when asked for
 * (unknown keys) or when the value is empty. A path that does not exist (a missing required key)
 * points at the deepest part that does.
 */
export function locatePath(
	doc: Document,
	lineCounter: LineCounter,
	path: DataPath,
	options: { atKey?: boolean } = {},
): Position {
	const { node, key, complete } = walk(doc, path);
	let offset: number | undefined;
	if (complete && key && (options.atKey || !node || isEmptyValue(node))) offset = key.range?.[0];
	else offset = node?.range?.[0] ?? key?.range?.[0];
	return offset === undefined ? { line: 1, col: 1 } : lineCounter.linePos(offset);
}
