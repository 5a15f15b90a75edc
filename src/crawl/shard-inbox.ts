import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { type JsonlReader, openJsonlReader, parseJsonLine, writeFileAtomic } from "../common/index.js";
import type { ShardSpec } from "../job/index.js";
import { type AppendFile, OutputError, openAppendFile } from "../output/index.js";
import { type FrontierEntry, isFrontierEntry } from "./frontier-file.js";

/**
 * `<job>/inbox-shard-J-from-I-of-N.jsonl`: crawled links of shard J's hosts, found by shard I. Each file
 * has one writer: appends of several hosts to one file are not atomic on a network file system.
 */
export function inboxName(index: number, count: number, from: number): string {
	return `inbox-shard-${index}-from-${from}-of-${count}.jsonl`;
}

/** `<job>/inbox-shard-J-of-N.jsonl`: the one inbox every shard appended to before; read, never written. */
function sharedInboxName(index: number, count: number): string {
	return `inbox-shard-${index}-of-${count}.jsonl`;
}

const INBOX_PATTERN = /^inbox-shard-(\d+)-(?:from-\d+-)?of-(\d+)\.jsonl$/;

/** `<job>/.inbox-shard-J-of-N.state`: how far shard J has read its inboxes, and whether it is out of work. */
function stateName(index: number, count: number): string {
	return `.inbox-shard-${index}-of-${count}.state`;
}

/** One inbox file as its reader left it. */
interface FileOffsets {
	/** Bytes read (and journalled to the run's frontier). */
	readonly read: number;
	/** Where the run began reading: its `--resume` reads again from there (entries seen before are dropped). */
	readonly from: number;
}

interface InboxState {
	readonly run_id: string;
	/** Each inbox file of the shard (by name) read so far; a file not named here is read from its start. */
	readonly files: Readonly<Record<string, FileOffsets>>;
	/** Out of work: nothing queued or in flight, every inbox read to its `read`. */
	readonly idle: boolean;
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
	/**
	 * Hand links of shard `index`'s hosts to it: appended to the one file of theirs this shard writes, whole
	 * lines only. Throws `OutputError` naming the file (a full disk: the run stops, exit 5).
	 */
	handOff(index: number, entries: readonly FrontierEntry[]): void;
	/** Entries written to this shard's inboxes since the last call (whole lines only); any read makes it not idle. */
	readNew(): FrontierEntry[];
	/** Publish that this shard is out of work (true) or working again (false), with how far it read. */
	setIdle(idle: boolean): void;
	/**
	 * The layout is out of work: this shard's inboxes are read to their end and every other shard has
	 * ended (`isRunning` false: its lock released or its lease lapsed; one not started yet is waited for
	 * during the start grace) or is idle with its own inboxes read to the end.
	 */
	allSettled(isRunning: (index: number) => boolean): boolean;
	close(): void;
}

function readState(jobDir: string, index: number, count: number): InboxState | null {
	try {
		const state = JSON.parse(readFileSync(join(jobDir, stateName(index, count)), "utf8")) as Record<string, unknown>;
		if (typeof state.idle !== "boolean" || typeof state.run_id !== "string") return null;
		const at = typeof state.at === "number" ? state.at : 0;
		if (typeof state.files === "object" && state.files !== null) {
			// The disk is read as hostile: an entry that is not two offsets counts as a file not read yet.
			const files: Record<string, FileOffsets> = {};
			for (const [name, offsets] of Object.entries(state.files as Record<string, Partial<FileOffsets>>)) {
				if (Number.isSafeInteger(offsets?.read) && Number.isSafeInteger(offsets?.from))
					files[name] = { read: offsets.read!, from: offsets.from! };
			}
			return { run_id: state.run_id, idle: state.idle, at, files };
		}
		// A state of a version with one shared inbox: its offsets are that file's.
		if (typeof state.read !== "number") return null;
		const from = typeof state.from === "number" ? state.from : state.read;
		const files = { [sharedInboxName(index, count)]: { read: state.read, from } };
		return { run_id: state.run_id, idle: state.idle, at, files };
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

/** The inbox files in the job folder now, by the shard (1-based) they are for. */
function inboxFiles(jobDir: string, count: number): Map<number, string[]> {
	const found = new Map<number, string[]>();
	let names: string[];
	try {
		names = readdirSync(jobDir);
	} catch {
		return found;
	}
	for (const name of names) {
		const match = INBOX_PATTERN.exec(name);
		if (!match || Number(match[2]) !== count) continue;
		const index = Number(match[1]);
		const list = found.get(index) ?? [];
		list.push(name);
		found.set(index, list);
	}
	return found;
}

/** Whether the file's last byte is a newline (or it is empty): a writer killed mid-line leaves it not. */
function endsWithNewline(path: string, size: number): boolean {
	if (size === 0) return true;
	const fd = openSync(path, "r");
	try {
		const last = Buffer.alloc(1);
		readSync(fd, last, 0, 1, size - 1);
		return last[0] === 10;
	} finally {
		closeSync(fd);
	}
}

/**
 * The inboxes of a sharded crawl, in the job's folder shared by every shard: one file per writer and
 * reader. A run starts reading each inbox where the previous run of its shard stopped (`resume`: where
 * this run began, entries already journalled being dropped by the crawler's URL keys), so a new run
 * does not fetch an old run's links.
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
	const previous = readState(jobDir, shard.index, shard.count);
	const sameRun = resume && previous?.run_id === runId;
	const offsets = new Map<string, FileOffsets>();
	const readers = new Map<string, JsonlReader>();
	let idle = false;
	const writers = new Map<number, AppendFile>();

	const publish = () => {
		const state: InboxState = { run_id: runId, files: Object.fromEntries(offsets), idle, at: now() };
		const path = join(jobDir, stateName(shard.index, shard.count));
		try {
			writeFileAtomic(path, `${JSON.stringify(state)}\n`);
		} catch (error) {
			// A full disk or a read-only folder: the run stops as for any output (exit 5), naming the file.
			throw new OutputError(path, error);
		}
	};

	/** The file of shard `index`'s inbox this shard writes, opened at its first hand-off. Throws `OutputError`. */
	const writerFor = (index: number): AppendFile => {
		const open = writers.get(index);
		if (open) return open;
		const path = join(jobDir, inboxName(index, shard.count, shard.index));
		const file = openAppendFile(path);
		try {
			// An earlier run of this shard killed mid-line: the torn line is ended, so it is passed over
			// alone and the next entry is whole.
			if (!endsWithNewline(path, file.size)) file.append("\n");
		} catch (error) {
			file.close();
			throw error instanceof OutputError ? error : new OutputError(path, error);
		}
		writers.set(index, file);
		return file;
	};

	/** Start reading the inbox files that appeared since (a writer's first hand-off creates its file). */
	const openNewFiles = (names: readonly string[]) => {
		for (const name of names) {
			if (readers.has(name)) continue;
			const before = previous?.files[name];
			const start = before === undefined ? 0 : sameRun ? before.from : before.read;
			const from = Math.min(start, sizeOf(join(jobDir, name)));
			offsets.set(name, { read: from, from });
			readers.set(name, openJsonlReader(join(jobDir, name), { from, chunkBytes: 64 * 1024 }));
		}
	};
	const ownFiles = () => inboxFiles(jobDir, shard.count).get(shard.index) ?? [];
	const readToEnd = () => {
		openNewFiles(ownFiles());
		for (const [name, { read }] of offsets) if (sizeOf(join(jobDir, name)) !== read) return false;
		return true;
	};
	openNewFiles(ownFiles());
	publish();

	return {
		handOff(index, entries) {
			if (entries.length === 0) return;
			const file = writerFor(index);
			// A line the disk takes only part of is cut back off (an append file's failed write): the reader
			// never waits on a torn line, and the error (`OutputError`) names the file.
			for (const entry of entries) file.appendLine(JSON.stringify(entry));
		},
		readNew() {
			openNewFiles(ownFiles());
			const entries: FrontierEntry[] = [];
			let moved = false;
			for (const [name, reader] of readers) {
				// Whole lines only: a line still being written is read next time; a torn one (a writer killed
				// mid-line, its line ended when it comes back) is passed over.
				for (let line = reader.next(); line !== null; line = reader.next()) {
					const entry = parseJsonLine(line.text);
					if (isFrontierEntry(entry)) entries.push(entry);
				}
				const offset = offsets.get(name)!;
				if (reader.position === offset.read) continue;
				offsets.set(name, { read: reader.position, from: offset.from });
				moved = true;
			}
			if (!moved) return entries;
			// Links read: working again, in the same write as the offsets. Published as "read to here, idle"
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
			if (!readToEnd()) return false;
			const files = inboxFiles(jobDir, shard.count);
			for (let index = 1; index <= shard.count; index += 1) {
				if (index === shard.index) continue;
				const state = readState(jobDir, index, shard.count);
				if (!isRunning(index)) {
					// Ended during this run (or crashed, its lease lapsed): not waited for. Not seen yet: waited
					// for while the start grace lasts, so a shard that starts a little later gets its links.
					const seen = state !== null && state.at >= startedAt - startGraceMs;
					if (seen || now() - startedAt >= startGraceMs) continue;
					return false;
				}
				if (!state?.idle) return false;
				for (const name of files.get(index) ?? []) {
					if (sizeOf(join(jobDir, name)) !== (state.files[name]?.read ?? 0)) return false;
				}
			}
			// Read again after the others: a link handed over meanwhile shows in these sizes.
			return readToEnd();
		},
		close() {
			for (const reader of readers.values()) reader.close();
			readers.clear();
			// Every file is closed even when one's last sync fails; that failure (`OutputError`) is then thrown.
			let failure: unknown = null;
			for (const file of writers.values()) {
				try {
					file.close();
				} catch (error) {
					failure ??= error;
				}
			}
			writers.clear();
			if (failure !== null) throw failure;
		},
	};
}

/**
 * Whether links were handed to a shard's crawl run `runId` after it last read its inboxes: a shard that
 * started late (or was resumed) found them once this one had ended. That run is then not complete:
 * its `--resume` reads them. False when a later run of the shard has read the inboxes since (they are
 * that run's), and when no inbox file is there (a run folder moved off the job folder).
 */
export function hasUnreadLinks(jobDir: string, shard: ShardSpec, runId: string): boolean {
	const names = inboxFiles(jobDir, shard.count).get(shard.index) ?? [];
	if (names.length === 0) return false;
	const state = readState(jobDir, shard.index, shard.count);
	if (state !== null && state.run_id !== runId) return false;
	return names.some((name) => sizeOf(join(jobDir, name)) > (state?.files[name]?.read ?? 0));
}

/**
 * Whether shard `index` of the layout said it is out of work in run `runId` (its inbox state): a crawl
 * shard waiting for links. A state of another run (an older run of the shard) says nothing.
 */
export function shardIsIdle(jobDir: string, index: number, count: number, runId: string): boolean {
	const state = readState(jobDir, index, count);
	return state !== null && state.run_id === runId && state.idle;
}
