/**
 * scrapejob as a library: the same pieces the CLI is made of. Most users want the CLI; these are for
 * running jobs from code and for testing an integration against the emulator.
 */
export {
	type AccountClient,
	classifyFailure,
	createAccountClient,
	createScraperClient,
	NetworkError,
	type ScraperClient,
	ServiceError,
	UnexpectedResponseError,
} from "./api/index.js";
export { type CliContext, EXIT, main } from "./cli/index.js";
export { resolveConfig } from "./config/index.js";
export {
	type DemoSite,
	type Emulator,
	loadScenarioFile,
	type ScenarioInput,
	startDemoSite,
	startEmulator,
} from "./emulator/index.js";
export { countTargets, type Job, JobValidationError, loadJob, streamTargets, type Target } from "./job/index.js";
export type { ResultRecord, RunSummary } from "./output/index.js";
export { type RunJobOptions, type RunJobResult, runJob, surveyTargets } from "./run/index.js";
export { ScrapejobError, UsageError } from "./shared/index.js";
