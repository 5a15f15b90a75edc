import type { ResultRecord } from "./record.js";

/** Where finished records go. `write` is synchronous on purpose: a record is on disk before the next starts. */
export interface RecordSink {
	write(record: ResultRecord): void;
	/** Flush to stable storage (fsync); called periodically and at the end. */
	sync(): void;
	close(): Promise<void>;
}
