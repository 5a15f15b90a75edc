/**
 * The library entry: `runJobFile` runs a job file as `scrapejob run` does, through the same code
 * (`runPlannedJob`); the CLI is a thin layer over these (flags in, words and exit codes out).
 */

export { connectBrowser, NoBrowserAccessError, type RunBrowserAccess } from "./browser-access.js";
export {
	type ExtractJobFileOptions,
	type ExtractOutcome,
	extractJobFile,
	extractPlanned,
} from "./extract-job-file.js";
export {
	exportFleetLatest,
	type FleetAddress,
	type FleetStatus,
	type FleetStatusOptions,
	fleetStatusOf,
	fleetUrlSecrets,
	targetCounts,
} from "./fleet.js";
export {
	type LoadedRunJob,
	type PrepareContext,
	type PreparedRuns,
	prepareRuns,
	type RunOptions,
	shardJobs,
} from "./prepare-runs.js";
export { type ExitCodeSummary, runExitCode, summarySucceeded } from "./run-exit-code.js";
export {
	fleetRunComplete,
	NoScraperAccessError,
	nothingToRetry,
	type RunJobFileOptions,
	type RunJobFileResult,
	runJobFile,
} from "./run-job-file.js";
export { checkHttpUrl, checkResumeOnlyOptions, checkRunOptions } from "./run-option-checks.js";
export {
	checkAccept,
	lockPlannedRuns,
	type PlannedRun,
	planFleetRuns,
	planRuns,
	type RunPlans,
	releasePlannedRuns,
} from "./run-plan.js";
export {
	checkFleetJob,
	type PlannedRunOutcome,
	previewSelection,
	type RunChoices,
	type RunServices,
	type RunStart,
	runPlannedJob,
	runSucceeded,
} from "./run-planned.js";
export { UnknownSavedIdError } from "./saved-ids.js";
export { connectScraper, type ScraperAccessPoint, savedItemsFor } from "./scraper-access.js";
export {
	type ConnectContext,
	connectService,
	MissingKeyError,
	noKeyError,
	requireAccount,
	SANDBOX_SCENARIO,
	type ServiceConnection,
	type ServiceFlags,
	withSandboxDemoSite,
} from "./service-connection.js";
export { type NewRunSurvey, type SurveyNewRunOptions, surveyNewRun } from "./survey-new-run.js";
