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
	classifyFailure,
	createAccountClient,
	createScraperClient,
	NetworkError,
	type ScraperClient,
	ScraperNotFoundError,
	ServiceError,
	UnexpectedResponseError,
} from "./api/index.js";
export { ScrapejobError, UsageError } from "./common/index.js";
export { resolveConfig } from "./config/index.js";
export {
	type DemoSite,
	type Emulator,
	loadScenarioFile,
	type ScenarioInput,
	startDemoSite,
	startEmulator,
} from "./emulator/index.js";
export {
	countTargets,
	type Job,
	JobValidationError,
	loadJob,
	SourceScanStoppedError,
	streamTargets,
	type Target,
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
	type BrokenRule,
	type ContractVerdict,
	formatSummary,
	type ResultRecord,
	type RunSummary,
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
