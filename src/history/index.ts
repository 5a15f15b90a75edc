/**
 * Incremental runs (docs/guides/incremental-runs.md): the job's store across runs (`history.sqlite`), change tracking,
 * what freshness and --retry-failed select from it, and `export --latest`.
 */

export {
	CHANGES_FILE,
	type ChangeCounts,
	type ChangeTracker,
	createChangeTracker,
	type PreviousRecords,
} from "./change-tracker.js";
export {
	CONTRACT_FILE,
	CONTRACT_STATES,
	type ContractState,
	type ContractStateName,
	isHeldBack,
	promotedSummaries,
	readContractState,
	writeContractState,
} from "./contract-state.js";
export {
	addHostCosts,
	type DomainMode,
	type HostCost,
	readDomainModes,
	readLatestHostCosts,
	readStoredEconomics,
	writeDomainModes,
} from "./domain-modes.js";
export { EXPORT_FORMATS, type ExportFormat, exportLatest } from "./export-latest.js";
export { checkExportTarget } from "./export-target.js";
export { idKey } from "./id-key.js";
export {
	assertAcceptable,
	type FailedCrawledPage,
	HISTORY_FILE,
	type JobHistory,
	lockedHint,
	OLD_HISTORY_FILE,
	openJobHistory,
	type TargetHistory,
} from "./job-history.js";
export { assertStoreLoads } from "./open-store.js";
export { parseRecord } from "./results-lines.js";
