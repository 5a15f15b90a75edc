import { closeSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { openJsonlReader, parseJsonLine, writeFileAtomic } from "../common/index.js";
import type { ShardSpec } from "../job/index.js";
import { type FrontierEntry, isFrontierEntry } from "./frontier-file.js";

/** `<job>/inbox-shard-J-of-N.jsonl`: crawled links of shard J's hosts, found by the other shards. */
export function inboxName(index: number, count: number): string {
	return `inbox-shard-${index}-of-${count}.jsonl`;
}

/** `<job>/.inbox-shard-J-of-N.state`: how far shard J has read its inbox, and whether it is out of work. */
function stateName(index: number, count: number): string {
	return `.inbox-shard-${index}-of-${count}.state`;
}

interface InboxState {
	readonly run_id: string;
	/** Bytes of the inbox read (and journalled to the run's frontier). */
	readonly read: number;
	/** Out of work: nothing queued or in flight, the inbox read to `read`. */
	readonly idle: boolean;
	/** Where the run began reading: its `--resume` reads again from there (entries seen before are dropped). */
	readonly from: number;
	/** When this state was written, epoch ms. */
	readonly at: number;
}

export interface ShardInboxOptions {
	/**
	 * How long after this run's start a shard of the layout that is not running counts as not started
	 * yet (waited for) rather than ended, ms: shards of a layout start at about the same time, but
	 * not at once. @default 30000 (the lock's lease)
	 */
	readonly startGraceMs?: number;
	readonly now?: () => number;
}

export interface ShardInbox {
	/** Hand links of shard `index`'s hosts to it: one small O_APPEND write a line, so writers never interleave. */
	handOff(index: number, entries: readonly FrontierEntry[]): void;
	/** Entries written to this shard's inbox since the last call (whole lines only); any read makes it not idle. */
	readNew(): FrontierEntry[];
	/** Publish that this shard is out of work (true) or working again (false), with how far it read. */
	setIdle(idle: boolean): void;
	/**
	 * The layout is out of work: this shard's inbox is read to its end and every other shard has ended
	 * (`isRunning` false: its lock released or its lease lapsed; one not started yet is waited for during
	 * the start grace) or is idle with its own inbox read to the end.
	 */
	allSettled(isRunning: (index: number) => boolean): boolean;
	close(): void;
}

function readState(path: string): InboxState | null {
	try {
		const state = JSON.parse(readFileSync(path, "utf8")) as InboxState;
		return typeof state.read === "number" && typeof state.idle === "boolean" ? state : null;
	} catch {
		return null;
	}
}

function sizeOf(path: string): number {
	try {
		return statSync(path).size;
	} catch {
		return 0;
	}
}

/**
 * The inboxes of a sharded crawl, in the job's folder shared by every shard. A run starts reading its
 * inbox where the previous run of its shard stopped (`resume`: where this run began, entries already
 * journalled being dropped by the crawler's URL keys), so a new run does not fetch an old run's links.
 */
export function openShardInbox(
	jobDir: string,
	shard: ShardSpec,
	runId: string,
	resume: boolean,
	options: ShardInboxOptions = {},
): ShardInbox {
	const now = options.now ?? Date.now;
	const startedAt = now();
	const startGraceMs = options.startGraceMs ?? 30_000;
	const ownPath = join(jobDir, inboxName(shard.index, shard.count));
	const statePath = join(jobDir, stateName(shard.index, shard.count));
	const previous = readState(statePath);
	const from = previous === null ? 0 : resume && previous.run_id === runId ? previous.from : previous.read;
	let offset = Math.min(from, sizeOf(ownPath));
	let idle = false;
	const writers = new Map<number, number>();
	// Created if missing (a reader of a missing file would never see it appear), then read from `offset`.
	closeSync(openSync(ownPath, "a"));
	const reader = openJsonlReader(ownPath, { from: offset, chunkBytes: 64 * 1024 });

	const publish = () => {
		const state: InboxState = { run_id: runId, read: offset, idle, from, at: now() };
		writeFileAtomic(statePath, `${JSON.stringify(state)}\n`);
	};
	publish();

	return {
		handOff(index, entries) {
			if (entries.length === 0) return;
			let fd = writers.get(index);
			if (fd === undefined) {
				fd = openSync(join(jobDir, inboxName(index, shard.count)), "a");
				writers.set(index, fd);
			}
			for (const entry of entries) writeSync(fd, `${JSON.stringify(entry)}\n`);
		},
		readNew() {
			const entries: FrontierEntry[] = [];
			// Whole lines only: a line still being written is read next time; a torn one (a writer killed
			// mid-line) is passed over.
			for (let line = reader.next(); line !== null; line = reader.next()) {
				const entry = parseJsonLine(line.text);
				if (isFrontierEntry(entry)) entries.push(entry);
			}
			if (reader.position === offset) return entries;
			offset = reader.position;
			// Links read: working again, in the same write as the offset. Published as "read to here, idle"
			// first, a shard polling between two writes would take this one for out of work and end before
			// the links this one is about to find for it.
			if (entries.length > 0) idle = false;
			publish();
			return entries;
		},
		setIdle(value) {
			if (value === idle) return;
			idle = value;
			publish();
		},
		allSettled(isRunning) {
			if (sizeOf(ownPath) !== offset) return false;
			for (let index = 1; index <= shard.count; index += 1) {
				if (index === shard.index) continue;
				const state = readState(join(jobDir, stateName(index, shard.count)));
				if (!isRunning(index)) {
					// Ended during this run (or crashed, its lease lapsed): not waited for. Not seen yet: waited
					// for while the start grace lasts, so a shard that starts a little later gets its links.
					const seen = state !== null && state.at >= startedAt - startGraceMs;
					if (seen || now() - startedAt >= startGraceMs) continue;
					return false;
				}
				if (!state?.idle) return false;
				if (sizeOf(join(jobDir, inboxName(index, shard.count))) !== state.read) return false;
			}
			// Read again after the others: a link handed over meanwhile shows in this size.
			return sizeOf(ownPath) === offset;
		},
		close() {
			reader.close();
			for (const fd of writers.values()) closeSync(fd);
			writers.clear();
		},
	};
}

/**
 * Whether shard `index` of the layout said it is out of work in run `runId` (its inbox state): a crawl
 * shard waiting for links. A state of another run (an older run of the shard) says nothing.
 */
export function shardIsIdle(jobDir: string, index: number, count: number, runId: string): boolean {
	const state = readState(join(jobDir, stateName(index, count)));
	return state !== null && state.run_id === runId && state.idle;
}
