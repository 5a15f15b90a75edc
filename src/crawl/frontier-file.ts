import { closeSync, fstatSync, ftruncateSync, openSync, readSync } from "node:fs";
import { type AppendFile, openAppendFile } from "../output/index.js";

/** `frontier.jsonl` in the run folder: every URL the crawl discovered, in discovery order. */
export const FRONTIER_FILE = "frontier.jsonl";

/**
 * One discovered link: URL (normalized), depth, the linking page's id, and its seed's options profile.
 * `d < 0` lines journal the sitemap files (sitemaps.ts: queued, paid with `c` credits, read up to `n`
 * of their `<loc>`s, read).
 * `r: 1` marks where page `p`'s redirects ended: that address was fetched (and paid) as `p`.
 */
export interface FrontierEntry {
	readonly u: string;
	readonly d: number;
	readonly p: string | null;
	readonly k: string;
	readonly c?: number;
	readonly n?: number;
	readonly r?: 1;
}

/** The disk is read as hostile: a line that is not an entry's shape is passed over, not trusted. */
export function isFrontierEntry(value: unknown): value is FrontierEntry {
	if (typeof value !== "object" || value === null) return false;
	const entry = value as Record<string, unknown>;
	return (
		typeof entry.u === "string" &&
		Number.isInteger(entry.d) &&
		(entry.p === null || typeof entry.p === "string") &&
		typeof entry.k === "string" &&
		(entry.c === undefined || (typeof entry.c === "number" && Number.isFinite(entry.c) && entry.c >= 0)) &&
		(entry.n === undefined || (Number.isSafeInteger(entry.n) && (entry.n as number) >= 0))
	);
}

/**
 * The crawl's frontier on disk: discovered links are appended (before the record of the page that
 * linked them, so a crash never loses them) and read back in order through a cursor, a chunk at a
 * time — the frontier is never held in memory, whatever its size. A resumed run reads it from the
 * start again; what already has a record is skipped by the caller.
 */
export interface FrontierFile {
	append(entries: readonly FrontierEntry[]): void;
	/** The next entry after the cursor, or null at the end of what was written so far. */
	next(): FrontierEntry | null;
	sync(): void;
	close(): void;
}

const CHUNK = 256 * 1024;

export function openFrontierFile(path: string): FrontierFile {
	cutTornTail(path);
	const writer: AppendFile = openAppendFile(path);
	const fd = openSync(path, "r");
	const chunk = Buffer.alloc(CHUNK);
	let readAt = 0;
	let lines: string[] = [];
	let lineIndex = 0;
	let carry = "";

	/** Read the next chunk of whole lines; false when nothing new was written. */
	const refill = (): boolean => {
		while (readAt < writer.size) {
			const length = readSync(fd, chunk, 0, Math.min(CHUNK, writer.size - readAt), readAt);
			if (length === 0) return false;
			readAt += length;
			const text = carry + chunk.toString("utf8", 0, length);
			const cut = text.lastIndexOf("\n");
			if (cut < 0) {
				carry = text;
				continue;
			}
			carry = text.slice(cut + 1);
			lines = text.slice(0, cut).split("\n");
			lineIndex = 0;
			return true;
		}
		return false;
	};

	return {
		append(entries) {
			if (entries.length === 0) return;
			let text = "";
			for (const entry of entries) text += `${JSON.stringify(entry)}\n`;
			writer.append(text);
		},
		next() {
			for (;;) {
				while (lineIndex < lines.length) {
					const line = lines[lineIndex++]!;
					if (line === "") continue;
					let parsed: unknown;
					try {
						parsed = JSON.parse(line);
					} catch {
						// Not ours to guess at: a line that is not an entry is passed over.
						continue;
					}
					if (isFrontierEntry(parsed)) return parsed;
				}
				if (!refill()) return null;
			}
		},
		sync: () => writer.sync(),
		close() {
			writer.close();
			closeSync(fd);
		},
	};
}

/** A crash can tear the last line: cut the file back to its last newline. */
function cutTornTail(path: string): void {
	let fd: number;
	try {
		fd = openSync(path, "r+");
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
		throw error;
	}
	try {
		const size = fstatSync(fd).size;
		const buffer = Buffer.alloc(Math.min(size, 64 * 1024));
		let end = size;
		while (end > 0) {
			const start = Math.max(0, end - buffer.length);
			readSync(fd, buffer, 0, end - start, start);
			const newline = buffer.subarray(0, end - start).lastIndexOf(0x0a);
			if (newline >= 0) {
				if (start + newline + 1 < size) ftruncateSync(fd, start + newline + 1);
				return;
			}
			end = start;
		}
		ftruncateSync(fd, 0);
	} finally {
		closeSync(fd);
	}
}
