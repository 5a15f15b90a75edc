import type { FileHandle } from "node:fs/promises";
import { open, stat } from "node:fs/promises";
import { type Document, isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import { errorMessage, type OptionWords } from "../common/index.js";
import type { Position } from "./positions.js";

/**
 * The largest job file read: 10 MiB. Job files are written by hand; big URL lists belong in
 * `sources`, which are streamed. The size is checked before anything is read, so a 50 MB file
 * (or `/dev/zero`) costs nothing.
 */
export const MAX_JOB_FILE_BYTES = 10 * 1024 * 1024;

export interface TextProblem extends Position {
	message: string;
}

export type ReadResult = { ok: true; text: string } | { ok: false; problem: TextProblem };

/** 1-based line and column of a character offset. */
export function positionInText(text: string, offset: number): Position {
	let line = 1;
	let lineStart = 0;
	for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
		line++;
		lineStart = i + 1;
	}
	return { line, col: offset - lineStart + 1 };
}

/** Map an fs error to words a user acts on, without a stack trace. */
export function describeFsError(error: unknown): string {
	const code = (error as NodeJS.ErrnoException | undefined)?.code;
	switch (code) {
		case "ENOENT":
			return "no such file";
		case "EACCES":
		case "EPERM":
			return "permission denied";
		case "EISDIR":
			return "is a directory, not a file";
		case "ENOTDIR":
			return "a part of the path is not a directory";
		case "ELOOP":
			return "too many symbolic links";
		default:
			return errorMessage(error);
	}
}

/**
 * The file's bytes, at most `maxBytes`. The buffer starts at the size stat() gave (plus one byte, to
 * see a file that grew since) and grows only if the file did: a zero-filled buffer of the whole limit
 * (10 MiB) was resident memory at every run's start, twice.
 */
export async function readAtMost(handle: FileHandle, maxBytes: number, expectedBytes: number): Promise<Buffer> {
	let buffer = Buffer.alloc(Math.min(maxBytes, expectedBytes + 1));
	let length = 0;
	for (;;) {
		const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
		if (bytesRead === 0) break;
		length += bytesRead;
		if (length < buffer.length) continue;
		if (buffer.length === maxBytes) break;
		const bigger = Buffer.alloc(Math.min(maxBytes, buffer.length * 2));
		buffer.copy(bigger, 0, 0, length);
		buffer = bigger;
	}
	return buffer.subarray(0, length);
}

/**
 * Decode a job file's bytes as UTF-8 text, refusing what is not text: NUL bytes mean a binary
 * file (or UTF-16, which we name so the fix is obvious); invalid UTF-8 is pointed at.
 */
export function decodeJobText(bytes: Buffer): ReadResult {
	if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
		return { ok: false, problem: { line: 1, col: 1, message: "the file is UTF-16 text; save it as UTF-8" } };
	}
	const nul = bytes.indexOf(0);
	if (nul !== -1) {
		const before = new TextDecoder().decode(bytes.subarray(0, nul));
		const at = positionInText(before, before.length);
		return {
			ok: false,
			problem: { ...at, message: "the file is binary (it contains NUL bytes), not a YAML job file" },
		};
	}
	try {
		// The decoder drops a leading BOM, which YAML editors on Windows like to write.
		return { ok: true, text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
	} catch {
		const lossy = new TextDecoder().decode(bytes);
		const bad = lossy.indexOf("\uFFFD");
		const at = bad === -1 ? { line: 1, col: 1 } : positionInText(lossy, bad);
		return { ok: false, problem: { ...at, message: "the file is not valid UTF-8 text" } };
	}
}

/** Read a job file as text, refusing directories, devices, oversized and binary files before parsing. */
export async function readJobText(absolutePath: string, maxBytes = MAX_JOB_FILE_BYTES): Promise<ReadResult> {
	// Checked before opening: opening a FIFO (or a device) for reading blocks until a writer appears.
	try {
		const kind = await stat(absolutePath);
		if (!kind.isFile() && !kind.isDirectory()) {
			return { ok: false, problem: { line: 1, col: 1, message: "is not a regular file (a pipe, socket or device)" } };
		}
	} catch (error) {
		return { ok: false, problem: { line: 1, col: 1, message: `cannot read the job file: ${describeFsError(error)}` } };
	}
	let handle: FileHandle;
	try {
		handle = await open(absolutePath, "r");
	} catch (error) {
		return { ok: false, problem: { line: 1, col: 1, message: `cannot read the job file: ${describeFsError(error)}` } };
	}
	try {
		const stats = await handle.stat();
		if (stats.isDirectory()) {
			return { ok: false, problem: { line: 1, col: 1, message: "is a directory, not a job file" } };
		}
		if (!stats.isFile()) {
			return { ok: false, problem: { line: 1, col: 1, message: "is not a regular file" } };
		}
		if (stats.size > maxBytes) {
			return {
				ok: false,
				problem: {
					line: 1,
					col: 1,
					message: `the job file is ${stats.size} bytes; the limit is ${maxBytes} bytes (${maxBytes / 1024 / 1024} MiB) — put long URL lists in a source file (sources:)`,
				},
			};
		}
		// Read one byte past the limit so a file that grew since stat() is still refused.
		const bytes = await readAtMost(handle, maxBytes + 1, stats.size);
		if (bytes.length > maxBytes) {
			return { ok: false, problem: { line: 1, col: 1, message: `the job file is larger than ${maxBytes} bytes` } };
		}
		return decodeJobText(bytes);
	} catch (error) {
		return { ok: false, problem: { line: 1, col: 1, message: `cannot read the job file: ${describeFsError(error)}` } };
	} finally {
		await handle.close();
	}
}

export interface ParsedYaml {
	doc: Document;
	lineCounter: LineCounter;
	errors: TextProblem[];
	warnings: TextProblem[];
}

/**
 * Parse with positions kept (habit 2): every later problem is mapped back to `line:col` through
 * the document's nodes and the line counter. Syntax errors, and a document that is not a mapping,
 * are reported here; nothing else can be checked meaningfully after them.
 */
export function parseJobYaml(text: string, words: OptionWords): ParsedYaml {
	const lineCounter = new LineCounter();
	// Refused before the parser sees it: 8 MB of "[" would take the parser minutes and gigabytes.
	const deep = flowNestingBeyond(text, MAX_NESTING);
	if (deep !== null) {
		const at = positionInText(text, deep);
		const doc = parseDocument("{}");
		return {
			doc,
			lineCounter,
			errors: [{ ...at, message: `the job file nests deeper than ${MAX_NESTING} levels` }],
			warnings: [],
		};
	}
	// Refused before the parser sees it too: a million aliases (`*a`) in 3 MB are a million nodes to
	// build (a gigabyte, minutes) before their expansion could even be counted.
	const aliases = aliasTokensBeyond(text, MAX_ALIASES);
	if (aliases !== null) {
		const doc = parseDocument("{}");
		return {
			doc,
			lineCounter,
			errors: [
				{
					...positionInText(text, aliases),
					message: `the job file uses more than ${MAX_ALIASES} aliases (*name); put long URL lists in a source file (sources:)`,
				},
			],
			warnings: [],
		};
	}
	const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
	const at = (offset: number | undefined) => (offset === undefined ? { line: 1, col: 1 } : lineCounter.linePos(offset));
	const errors: TextProblem[] = [];
	const seen = new Set<string>();
	for (const error of doc.errors) {
		const message =
			error.code === "MULTIPLE_DOCS"
				? "YAML: a job file holds one document; remove the `---` line or put each job in its own file"
				: `YAML syntax error: ${error.message}`;
		const problem = { ...at(error.pos[0]), message };
		// The parser may report one mistake several times from different levels.
		const key = `${problem.line}:${problem.col}:${message}`;
		if (seen.has(key)) continue;
		seen.add(key);
		errors.push(problem);
	}
	const warnings: TextProblem[] = doc.warnings.map((warning) => ({
		...at(warning.pos[0]),
		message: `YAML: ${warning.message}`,
	}));
	if (errors.length === 0) {
		const contents = doc.contents;
		const expected = `expected a mapping of keys such as name, defaults, targets and sources (see ${words.schema})`;
		if (contents === null || (isScalar(contents) && contents.value === null)) {
			errors.push({ line: 1, col: 1, message: `the job file is empty; ${expected}` });
		} else if (isSeq(contents)) {
			errors.push({ ...at(contents.range?.[0]), message: `the job file is a list; ${expected}` });
		} else if (!isMap(contents)) {
			const what = isScalar(contents) ? "a single value, not YAML keys" : "not a mapping";
			errors.push({ ...at(contents.range?.[0]), message: `the job file is ${what}; ${expected}` });
		}
	}
	if (errors.length === 0) {
		const limit = sizeBeyondLimits(doc);
		if (limit) errors.push({ ...at(limit.offset), message: limit.message });
	}
	return { doc, lineCounter, errors, warnings };
}

/** Most alias tokens (`*name`) in a job file: real jobs use a few, to share settings. */
export const MAX_ALIASES = 10_000;

/**
 * The offset of the alias token past `limit`, or null: a `*` that starts a token (after a line start,
 * a space, `[`, `,` or `{`), counted in one pass over the text without parsing it. A `*` of that shape
 * inside a quoted string counts too: harmless, a real job has nowhere near the limit of either.
 */
function aliasTokensBeyond(text: string, limit: number): number | null {
	let count = 0;
	let index = text.indexOf("*");
	while (index !== -1) {
		const before = index === 0 ? "\n" : text[index - 1]!;
		if (before === " " || before === "\n" || before === "[" || before === "," || before === "{" || before === "\t") {
			count += 1;
			if (count > limit) return index;
		}
		index = text.indexOf("*", index + 1);
	}
	return null;
}

/** Deepest nesting of a job file (flow brackets or block indentation): real jobs use a handful of levels. */
export const MAX_NESTING = 64;
/** Most YAML nodes (scalars, maps, lists) in a job file, aliases expanded. Long URL lists belong in sources. */
export const MAX_NODES = 500_000;

/** The offset where `[`/`{` nesting first goes past `limit`, outside quoted strings and comments; else null. */
function flowNestingBeyond(text: string, limit: number): number | null {
	let depth = 0;
	let quote: string | null = null;
	let comment = false;
	for (let i = 0; i < text.length; i += 1) {
		const char = text[i];
		if (comment) {
			if (char === "\n") comment = false;
			continue;
		}
		if (quote) {
			if (char === quote && text[i - 1] !== "\\") quote = null;
			continue;
		}
		if (char === '"' || char === "'") quote = char;
		else if (char === "#" && (i === 0 || /\s/.test(text[i - 1] ?? ""))) comment = true;
		else if (char === "[" || char === "{") {
			depth += 1;
			if (depth > limit) return i;
		} else if ((char === "]" || char === "}") && depth > 0) depth -= 1;
	}
	return null;
}

/**
 * Nodes the document becomes once its aliases are expanded, and its nesting depth, counted without
 * expanding anything (an anchor's size is counted once and reused): 98 aliases to a 200,000-item list
 * are refused here in milliseconds instead of building 20 million values.
 */
function sizeBeyondLimits(doc: Document): { offset: number | undefined; message: string } | null {
	const sizes = new Map<unknown, number>();
	let tooDeep: { offset: number | undefined } | null = null;
	const sizeOf = (node: unknown, depth: number): number => {
		if (depth > MAX_NESTING) {
			tooDeep ??= { offset: (node as { range?: [number] } | null)?.range?.[0] };
			return 1;
		}
		if (isAlias(node)) {
			const target = node.resolve(doc);
			if (!target) return 1;
			const known = sizes.get(target);
			if (known !== undefined) return known;
			return sizeOf(target, depth);
		}
		const known = sizes.get(node);
		if (known !== undefined) return known;
		let size = 1;
		if (isMap(node)) for (const pair of node.items) size += sizeOf(pair.key, depth + 1) + sizeOf(pair.value, depth + 1);
		else if (isSeq(node)) for (const item of node.items) size += sizeOf(item, depth + 1);
		sizes.set(node, size);
		return size;
	};
	const total = sizeOf(doc.contents, 0);
	if (tooDeep)
		return {
			...(tooDeep as { offset: number | undefined }),
			message: `the job file nests deeper than ${MAX_NESTING} levels`,
		};
	if (total > MAX_NODES) {
		return {
			offset: undefined,
			message: `the job file expands to ${total} values (aliases included); the limit is ${MAX_NODES}: put long URL lists in a source file (sources:)`,
		};
	}
	return null;
}
