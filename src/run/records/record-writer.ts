import { join } from "node:path";
import type { FillStats } from "../../extract/index.js";
import type { ChangeTracker, JobHistory } from "../../history/index.js";
import type { Job } from "../../job/index.js";
import {
	createCsvSink,
	createJsonlSink,
	csvColumnsFor,
	type RecordSink,
	type ResultRecord,
	RUN_FILES,
} from "../../output/index.js";
import type { ReportCollector } from "../../report/index.js";
import type { StopController } from "../flow/stop-controller.js";
import type { ContractCheck } from "./contract-check.js";
import type { RunStatistics } from "./run-statistics.js";

/** A content body as change tracking hashes it: the bytes, or the SHA-1 of a body that streamed to disk. */
export type StampedBody = Buffer | { readonly sha1: string } | null;

export interface RecordWriterParts {
	/** Keys and URL credentials out of the record, first. */
	readonly scrub: (record: ResultRecord) => ResultRecord;
	readonly changes: ChangeTracker | null;
	readonly fill: FillStats | null;
	readonly contract: ContractCheck | null;
	/** results.jsonl: its size before a write is the record's place, kept by the history. */
	readonly jsonl: RecordSink & { readonly size: number };
	/** Every sink, results.jsonl included. */
	readonly sinks: readonly RecordSink[];
	/** Where records go into the job's store as they are written; null when the run's promotion waits for its end (a contract). */
	readonly history: Pick<JobHistory, "record"> | null;
	readonly historyRun: number;
	readonly stats: RunStatistics;
	readonly report: ReportCollector | null;
	/** After each record (progress). */
	readonly onWritten?: () => void;
	/**
	 * The lease fence (stop-controller.ts): asked right before the record's first byte goes out and again
	 * right after its last. None (re-extraction): the record is always written.
	 */
	readonly fence?: Pick<StopController, "mayWrite" | "wroteInTime">;
	/**
	 * A fleet worker's fence per target: true while the target's lease is surely this worker's. Asked with
	 * the run's fence, before and after the lines.
	 */
	readonly targetFence?: (targetId: string) => boolean;
	/** Each record as written (scrubbed): a fleet worker hands it to the fleet's records. */
	readonly onRecord?: (record: ResultRecord) => void;
}

/**
 * The one record path: scrubbed first (keys, URL credentials), then stamped
 * against the history (`content_hash`, `change`, the changes.jsonl line), checked against the contract,
 * then fanned out to the sinks, the history, the statistics and the report. Fetched runs and
 * re-extractions write through it; no record reaches a file by another route.
 */
export function createRecordWriter(parts: RecordWriterParts): (unsafe: ResultRecord, body: StampedBody) => boolean {
	const { fence } = parts;
	return (unsafe, body) => {
		const record = parts.scrub(unsafe);
		// Checked again here, after the page file and the scrub, right before the first line (changes.jsonl's
		// or results.jsonl's): the caller's check may be a page save and a page read older.
		if (fence && !fence.mayWrite()) return false;
		if (parts.targetFence && !parts.targetFence(record.id)) return false;
		parts.changes?.stamp(record, body);
		if (record.status === "ok") parts.fill?.add(record.data);
		parts.contract?.add(record);
		const offset = parts.jsonl.size;
		for (const sink of parts.sinks) sink.write(record);
		// A check before a write cannot see a pause between the two (SIGSTOP, a frozen VM) during which
		// another host took the lock over and resumed: the line then lands in a folder that is no longer
		// this run's. So the lease is asked again once the lines are out — free while the last beat is
		// recent, since the clock is read after the write — and lines written after a takeover are taken
		// back (each file cut back to before them, unless someone appended after them).
		if ((fence && !fence.wroteInTime()) || (parts.targetFence && !parts.targetFence(record.id))) {
			for (const sink of parts.sinks) sink.retractLast?.();
			parts.changes?.retractLast();
			return false;
		}
		parts.history?.record(record, parts.historyRun, offset, parts.jsonl.size);
		parts.stats.recordFinished(record);
		parts.report?.add(record);
		parts.onRecord?.(record);
		parts.onWritten?.();
		return true;
	};
}

/**
 * A run folder's record files: results.jsonl always (the record of truth `--resume` and the history
 * read), results.csv when the job asks for it, its columns declared once from the job's fields.
 */
export function openRecordSinks(job: Job, runDir: string): { jsonl: RecordWriterParts["jsonl"]; sinks: RecordSink[] } {
	const jsonl = createJsonlSink(join(runDir, RUN_FILES.jsonl));
	const sinks: RecordSink[] = [jsonl];
	if (job.output.formats.includes("csv")) {
		sinks.push(
			createCsvSink(join(runDir, RUN_FILES.csv), {
				bom: job.output.csvBom === true,
				columns: csvColumnsFor({ data: job.extraction?.dataColumns, carry: job.extraction?.carry }),
				maxCell: job.output.csvMaxCell,
			}),
		);
	}
	return { jsonl, sinks };
}
