import { join } from "node:path";
import { FRONTIER_FILE, type FrontierEntry, type FrontierFile, openFrontierFile } from "./frontier-file.js";

/**
 * The crawl's frontier.jsonl indexed by depth: every entry is appended through `journal`, and for each
 * depth the byte ranges that hold its entries not handed out yet (one range per run of appends of that
 * depth: a handful per level) are kept, then read back a chunk at a time — the entries stay on disk.
 */
export class DepthIndex {
	private readonly frontier: FrontierFile;
	/** Per depth: byte ranges of frontier.jsonl holding its entries not handed out yet, in file order. */
	private readonly ranges = new Map<number, Array<{ from: number; to: number }>>();
	/** Per depth: entries read from its first range and not handed out yet (reversed: pop() is file order). */
	private readonly buffered = new Map<number, FrontierEntry[]>();
	/** The depth whose range the last journalled entries extended (-1: none, or a mixed append). */
	private lastRangeDepth = -1;
	/** The deepest entry journalled (a link found shallower than it may have been journalled deeper first). */
	private deepestJournalled = 0;

	private readonly runDir: string;

	constructor(runDir: string) {
		this.runDir = runDir;
		this.frontier = openFrontierFile(join(runDir, FRONTIER_FILE));
	}

	/** The deepest depth any entry to hand out was journalled at. */
	get deepest(): number {
		return this.deepestJournalled;
	}

	/** Append `entries` to frontier.jsonl; those to hand out are indexed by their depth. */
	journal(entries: readonly FrontierEntry[]): void {
		if (entries.length === 0) return;
		const from = this.frontier.size;
		this.frontier.append(entries);
		const to = this.frontier.size;
		const depth = singleDepth(entries);
		if (depth === null) return;
		if (depth !== "mixed") {
			this.extendOrAdd(depth, from, to);
			return;
		}
		// Depths mixed in one append (an inbox read): each depth's range covers it, lines of others passed over.
		const depths = new Set(entries.filter(isHandedOut).map((entry) => entry.d));
		for (const each of depths) this.addRange(each, from, to, false);
		this.lastRangeDepth = -1;
	}

	/**
	 * A resumed run's frontier.jsonl, read from its start: `visit` sees each entry; the ones it returns
	 * true for are handed out again in depth order (what has a record or a claim is passed over then).
	 */
	replay(visit: (entry: FrontierEntry) => boolean): void {
		const reader = openFrontierFile(join(this.runDir, FRONTIER_FILE));
		try {
			for (let lineStart = 0, entry = reader.next(); entry !== null; lineStart = reader.cursor, entry = reader.next()) {
				if (visit(entry)) this.extendOrAdd(entry.d, lineStart, reader.cursor);
			}
		} finally {
			reader.close();
		}
	}

	/** The lowest depth with entries to hand out, or null. */
	lowestPending(): number | null {
		let lowest: number | null = null;
		for (const [depth, list] of this.ranges) {
			if ((lowest === null || depth < lowest) && (list.length > 0 || (this.buffered.get(depth)?.length ?? 0) > 0))
				lowest = depth;
		}
		return lowest;
	}

	/** The next entry of `depth` to hand out (read from its ranges a chunk at a time), or null. */
	next(depth: number): FrontierEntry | null {
		for (;;) {
			const held = this.buffered.get(depth);
			if (held && held.length > 0) return held.pop()!;
			const list = this.ranges.get(depth);
			const range = list?.[0];
			if (!list || !range) {
				this.ranges.delete(depth);
				this.buffered.delete(depth);
				return null;
			}
			const read = this.frontier.readDepth(range.from, range.to, depth);
			range.from = read.next;
			if (range.from >= range.to) list.shift();
			this.buffered.set(depth, read.entries.reverse());
		}
	}

	sync(): void {
		this.frontier.sync();
	}

	close(): void {
		this.frontier.close();
	}

	/** A run of appends of one depth grows that depth's last range instead of adding one. */
	private extendOrAdd(depth: number, from: number, to: number): void {
		this.addRange(depth, from, to, this.lastRangeDepth === depth);
		this.lastRangeDepth = depth;
	}

	/** Note that bytes [from, to) of frontier.jsonl hold entries of `depth` to hand out. */
	private addRange(depth: number, from: number, to: number, extend: boolean): void {
		let list = this.ranges.get(depth);
		if (!list) {
			list = [];
			this.ranges.set(depth, list);
		}
		const last = list.at(-1);
		if (extend && last && last.to <= from) last.to = to;
		else list.push({ from, to });
		if (depth > this.deepestJournalled) this.deepestJournalled = depth;
	}
}

/** Sitemap files (d < 0) and redirect landings (claimed when journalled) are not handed out. */
function isHandedOut(entry: FrontierEntry): boolean {
	return entry.d >= 0 && entry.r !== 1;
}

/** The one depth of an append's entries to hand out, "mixed" when they differ, null when there are none. */
function singleDepth(entries: readonly FrontierEntry[]): number | "mixed" | null {
	let depth: number | null = null;
	for (const entry of entries) {
		if (!isHandedOut(entry)) continue;
		if (depth === null) depth = entry.d;
		else if (entry.d !== depth) return "mixed";
	}
	return depth;
}
