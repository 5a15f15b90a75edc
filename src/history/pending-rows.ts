import { closeSync } from "node:fs";
import type { ResultRecord } from "../output/index.js";
import { parseIsoTime } from "../shared/index.js";
import { HistoryRows, MAX_CHUNK_ROWS, sortedOrder } from "./history-rows.js";
import { FileCursor, mergeRows, OrderCursor, openScratchFile, type RowCursor, RowWriter } from "./sorted-rows.js";

/**
 * Records not yet in the history's sorted file (this run's, or those folded in at open), kept in
 * bounded memory: one chunk of rows (3 MiB at the default 65,536), sorted into a scratch file each
 * time it fills. Saving merges the sorted file with every chunk in one pass, so a run's memory does
 * not grow with its target count.
 */
export class PendingRows {
	readonly #scratchDirs: readonly string[];
	readonly #chunkRows: number;
	#chunk: HistoryRows | null = null;
	#filled = 0;
	#spilled: Array<{ fd: number; count: number }> = [];
	#size = 0;

	/**
	 * @param scratchDirs where a full chunk is spilled: the first folder a file can be made in.
	 * @param chunkRows rows held in memory before they are spilled. @default 65,536
	 */
	constructor(scratchDirs: readonly string[], chunkRows = MAX_CHUNK_ROWS) {
		this.#scratchDirs = scratchDirs;
		this.#chunkRows = Math.min(Math.max(1, chunkRows), MAX_CHUNK_ROWS);
	}

	/** Records added (a target recorded twice counts twice). */
	get size(): number {
		return this.#size;
	}

	/** A record written at byte `offset` of run `run`'s results.jsonl; only ok and failed ones are history. */
	add(record: ResultRecord, run: number, offset: number): void {
		if (record.status !== "ok" && record.status !== "failed") return;
		// Allocated at the first record: opening a history to read it (export) never needs a chunk.
		this.#chunk ??= new HistoryRows(this.#chunkRows);
		if (this.#filled === this.#chunkRows) this.#spill();
		const finishedAt = parseIsoTime(record.finished_at);
		this.#chunk.setRecord(this.#filled, record.id, record.status, finishedAt, record.content_hash ?? null, run, offset);
		this.#filled += 1;
		this.#size += 1;
	}

	/** The chunk sorted into a scratch file (rows of one key folded into one), and emptied. */
	#spill(): void {
		const fd = openScratchFile(this.#scratchDirs);
		try {
			const chunk = this.#chunk!;
			const written = mergeRows(new RowWriter(fd, 0), [new OrderCursor(chunk, sortedOrder(chunk, this.#filled))]);
			this.#spilled.push({ fd, count: written.count });
		} catch (error) {
			closeSync(fd);
			throw error;
		}
		this.#filled = 0;
	}

	/** Every pending row, in key order per cursor, oldest cursor first (for `mergeRows`). */
	cursors(): RowCursor[] {
		const cursors: RowCursor[] = this.#spilled.map(({ fd, count }) => new FileCursor(fd, 0, count));
		if (this.#chunk && this.#filled > 0) {
			cursors.push(new OrderCursor(this.#chunk, sortedOrder(this.#chunk, this.#filled)));
		}
		return cursors;
	}

	/** Close the scratch files (removed from their folder when they were made) and forget every row. */
	close(): void {
		for (const { fd } of this.#spilled.splice(0)) closeSync(fd);
		this.#chunk = null;
		this.#filled = 0;
		this.#size = 0;
	}
}
