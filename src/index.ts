/**
 * scrapejob as a library: the same pieces the CLI is made of (the CLI itself is not loaded: importing
 * the library brings no commander and no terminal code). Most users want the CLI; these are for
 * running jobs from code and for testing an integration against the emulator.
 *
 * One call runs a job file: `await runJobFile("jobs/x.yaml", { sandbox, out, signal, onProgress })`.
 * The lower-level pieces below (`loadJob`, `surveyTargets`, `createScraperClient`, `runJob`, …) are
 * what it is made of, for those who need a different assembly.
 */

export {
	type AccountClient,
	type AccountClientOptions,
	classifyFailure,
	createAccountClient,
	createScraperClient,
	type FailureAction,
	NetworkError,
	type ScraperClient,
	type ScraperClientOptions,
	ScraperNotFoundError,
	ServiceError,
	type ServiceErrorFields,
	UnexpectedResponseError,
} from "./api/index.js";
export { type ErrorCode, ScrapejobError, UsageError } from "./common/index.js";
export { type ConfigFlags, type ResolvedConfig, resolveConfig } from "./config/index.js";
export {
	type DemoSite,
	type DemoSiteOptions,
	type Emulator,
	type Ledger,
	type LedgerEntry,
	loadScenarioFile,
	type ScenarioInput,
	type StartEmulatorOptions,
	startDemoSite,
	startEmulator,
} from "./emulator/index.js";
export {
	countTargets,
	type Job,
	type JobProblem,
	JobValidationError,
	type LoadedJob,
	type LoadJobOptions,
	loadJob,
	SourceScanStoppedError,
	type StreamTargetsOptions,
	streamTargets,
	type Target,
	type TargetCounts,
	type VariablesNeeded,
} from "./job/index.js";
export {
	type ExitCodeSummary,
	type ExtractJobFileOptions,
	extractJobFile,
	NoBrowserAccessError,
	NoScraperAccessError,
	type RunJobFileOptions,
	type RunJobFileResult,
	runExitCode,
	runJobFile,
} from "./library/index.js";
export {
	type BreakerReport,
	type BrokenRule,
	type ContractVerdict,
	type FleetSummary,
	formatSummary,
	type RecordStatus,
	type ResultRecord,
	type RunSummary,
	type SummaryHints,
} from "./output/index.js";
export {
	LayoutConflictError,
	LockHeldError,
	type LockLease,
	listRuns,
	lockJobOutput,
	type ProgressSnapshot,
	ResumeError,
	type RunInfo,
	type RunJobOptions,
	type RunJobResult,
	type RunLock,
	runJob,
	type StopReason,
	surveyTargets,
	type TargetSurvey,
} from "./run/index.js";
