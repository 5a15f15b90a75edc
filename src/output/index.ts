export { type AppendFile, openAppendFile } from "./append-file.js";
export { openBodyFile } from "./body-file.js";
export { cutCell, DEFAULT_CSV_MAX_CELL, MIN_CSV_MAX_CELL } from "./csv-cell.js";
export { columnValue, csvColumnsFor } from "./csv-columns.js";
export {
	createCsvSink,
	csvHeaderLine,
	csvLines,
	csvRow,
	neutraliseFormula,
	readCsvHeader,
	UTF8_BOM,
} from "./csv-sink.js";
export { createJsonlSink } from "./jsonl-sink.js";
export { OutputError } from "./output-error.js";
export { createPageStore, extensionFor, type PageStore } from "./page-store.js";
export {
	RECORD_CHANGES,
	RECORD_COLUMNS,
	RECORD_STATUSES,
	type RecordChange,
	type RecordStatus,
	type ResultRecord,
} from "./record.js";
export { findCorruptLines, isResultRecord, parseRecordLine } from "./record-lines.js";
export type { RecordSink } from "./record-sink.js";
export {
	createRunDir,
	jobOutputDir,
	newRunId,
	RUN_FILES,
	readSandboxRun,
	runStartedMs,
	SANDBOX_RUN_FILE,
	writeSandboxRun,
} from "./run-folder.js";
export { createRunLog } from "./run-log.js";
export { createRecordScrubber } from "./scrub-record.js";
export {
	type BreakerReport,
	type BrokenRule,
	type CarriedBreaker,
	type ContractVerdict,
	type FleetSummary,
	formatSummary,
	type RunSummary,
	type SummaryHints,
	writeSummary,
} from "./summary.js";
