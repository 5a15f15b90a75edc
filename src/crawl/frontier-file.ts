import { existsSync } from "node:fs";
import { closeEach, cutTornTail, openJsonlReader, parseJsonLine } from "../common/index.js";
import { type AppendFile, openAppendFile } from "../output/index.js";

/** `frontier.jsonl` in the run folder: every URL the crawl discovered, in discovery order. */
export const FRONTIER_FILE = "frontier.jsonl";

/**
 * A robots.txt or sitemap fetch given up (a stop, the account refused) after the service charged it `c`
 * credits: spent, though the file is not paid for and a resume fetches it again.
 */
export const CHARGED_UNPAID = -6;

/**
 * One discovered link: URL (normalized), depth, the linking page's id, and its seed's options profile.
 * `d < 0` lines journal the sitemap files (sitemaps.ts: queued, paid with `c` credits, read up to `n`
 * of their `<loc>`s, read), robots.txt files (robots.ts) and charges of either given up (`CHARGED_UNPAID`).
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
 * Where each page's redirects ended, as a finished or stopped run journalled it (`r: 1` lines): page id →
 * the address it landed on. Only those lines are parsed and held (a run's redirected pages, not its frontier).
 */
export function readLandings(path: string): Map<string, string> {
	const landings = new Map<string, string>();
	if (!existsSync(path)) return landings;
	const lines = openJsonlReader(path, { chunkBytes: CHUNK });
	try {
		for (let line = lines.next(); line !== null; line = lines.next()) {
			// `r` is the entry's last key as JSON.stringify writes it; other lines are passed over unparsed.
			if (!line.text.endsWith(',"r":1}')) continue;
			const parsed = parseJsonLine(line.text);
			if (isFrontierEntry(parsed) && parsed.r === 1 && parsed.p !== null) landings.set(parsed.p, parsed.u);
		}
	} finally {
		lines.close();
	}
	return landings;
}

/**
 * The crawl's frontier on disk: discovered links are appended (before the record of the page that
 * linked them, so a crash never loses them) and read back in order through a cursor, a chunk at a
 * time — the frontier is never held in memory, whatever its size. A resumed run reads it from the
 * start again; what already has a record is skipped by the caller.
 */
export interface FrontierFile {
	append(entries: readonly FrontierEntry[]): void;
	/** Bytes in the file: where the next append lands. */
	readonly size: number;
	/** The next entry after the cursor, or null at the end of what was written so far. */
	next(): FrontierEntry | null;
	/** Where the line of the entry `next` returned last ends (bytes from the file's start). */
	readonly cursor: number;
	/**
	 * The entries of depth `depth` among the whole lines of bytes [from, to) — one chunk's worth at most
	 * (past it, up to the chunk's last newline) — and where the next read of that range starts.
	 * `from` and `to` are line starts (appends are whole lines).
	 */
	readDepth(from: number, to: number, depth: number): { entries: FrontierEntry[]; next: number };
	sync(): void;
	close(): void;
}

const CHUNK = 256 * 1024;

export function openFrontierFile(path: string): FrontierFile {
	cutTornTail(path);
	const writer: AppendFile = openAppendFile(path);
	// The cursor of `next`: the one JSONL reader, following the file as the crawl appends to it.
	const lines = openJsonlReader(path, { chunkBytes: CHUNK });
	/** Where the line `next` returned last ends. */
	let cursor = 0;

	return {
		append(entries) {
			if (entries.length === 0) return;
			let text = "";
			for (const entry of entries) text += `${JSON.stringify(entry)}\n`;
			writer.append(text);
		},
		get size() {
			return writer.size;
		},
		get cursor() {
			return cursor;
		},
		next() {
			for (let line = lines.next(); line !== null; line = lines.next()) {
				cursor = line.end;
				// Not ours to guess at: a line that is not an entry is passed over.
				const parsed = parseJsonLine(line.text);
				if (isFrontierEntry(parsed)) return parsed;
			}
			return null;
		},
		readDepth(from, to, depth) {
			const entries: FrontierEntry[] = [];
			if (from >= to) return { entries, next: to };
			// Lines of another depth are passed over without parsing: an entry is written `{"u":…,"d":N,…`,
			// and `","d":` cannot occur inside a JSON string (its quotes are escaped).
			const mark = `","d":${depth},`;
			const range = openJsonlReader(path, { from, until: to, chunkBytes: CHUNK });
			try {
				// One chunk's worth of whole lines a call (a line longer than a chunk is read whole).
				for (let line = range.next(); line !== null; line = range.next()) {
					const text = line.text;
					if (text.includes(mark) || !text.includes('","d":')) {
						const parsed = parseJsonLine(text);
						if (isFrontierEntry(parsed) && parsed.d === depth) entries.push(parsed);
					}
					if (line.end - from >= CHUNK) return { entries, next: line.end };
				}
				return { entries, next: to };
			} finally {
				range.close();
			}
		},
		sync: () => writer.sync(),
		close() {
			closeEach([() => writer.close(), () => lines.close()]);
		},
	};
}
