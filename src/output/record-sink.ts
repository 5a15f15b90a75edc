import type { ResultRecord } from "./record.js";

/** Where finished records go. `write` is synchronous on purpose: a record is on disk before the next starts. */
export interface RecordSink {
	write(record: ResultRecord): void;
	/** Flush to stable storage (fsync); called periodically and at the end. */
	sync(): void;
	/**
	 * Take the last record's lines back when nothing was appended after them (a record written after the
	 * run's lease was lost: see AppendFile.retractLast). Returns whether they were taken back.
	 */
	retractLast?(): boolean;
	close(): Promise<void>;
}
