/**
 * scrapejob as a library: the same pieces the CLI is made of (the CLI itself is not loaded: importing
 * the library brings no commander and no terminal code). Most users want the CLI; these are for
 * running jobs from code and for testing an integration against the emulator.
 *
 * One call runs a job file: `await runJobFile("jobs/x.yaml", { sandbox, out, signal, onProgress })`.
 * The lower-level pieces below (`loadJob`, `surveyTargets`, `surveyNewRun`, `createScraperClient`, `runJob`,
 * …) are what it is made of, for those who need a different assembly.
 */

export {
	AccountApiNotFoundError,
	type AccountClient,
	type AccountClientOptions,
	BodySinkError,
	BodyTooLargeError,
	classifyFailure,
	createAccountClient,
	createScraperClient,
	type FailureAction,
	NetworkError,
	RequestAbortedError,
	type ScraperClient,
	type ScraperClientOptions,
	ScraperNotFoundError,
	ServiceError,
	type ServiceErrorFields,
	UnexpectedResponseError,
} from "./api/index.js";
export {
	type ErrorCode,
	FileTooLargeError,
	NativeModuleError,
	NotRegularFileError,
	ScrapejobError,
	UsageError,
} from "./common/index.js";
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
export { FleetDatabaseError, FleetSchemaTooNewError } from "./fleet/index.js";
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
	MissingKeyError,
	type NewRunSurvey,
	NoBrowserAccessError,
	NoScraperAccessError,
	type RunJobFileOptions,
	type RunJobFileResult,
	runExitCode,
	runJobFile,
	type SurveyNewRunOptions,
	surveyNewRun,
	UnknownSavedIdError,
} from "./library/index.js";
export {
	type BreakerReport,
	type BrokenRule,
	type ContractVerdict,
	type FleetSummary,
	formatSummary,
	OutputError,
	type RecordStatus,
	type ResultRecord,
	type RunSummary,
	type SummaryHints,
} from "./output/index.js";
export {
	CorruptResultsError,
	type Forecast,
	LayoutConflictError,
	LockHeldError,
	type LockLease,
	LockPathError,
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
