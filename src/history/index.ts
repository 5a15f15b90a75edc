/**
 * Incremental runs (shared/design.md): the job's history across runs, change tracking, and what
 * freshness and --retry-failed select from it.
 */

export { CHANGES_FILE, type ChangeCounts, type ChangeTracker, createChangeTracker } from "./change-tracker.js";
export { EXPORT_FORMATS, type ExportFormat, exportLatest } from "./export-latest.js";
export { idKey, type TargetHistory } from "./history-rows.js";
export { HISTORY_FILE, type JobHistory, openJobHistory } from "./job-history.js";
