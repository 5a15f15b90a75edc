// A dry run's crawl bound: what a crawl fetches per seed origin besides its pages.
export { type CrawlExtraFetches, crawlExtraFetches, MAX_SITEMAP_FILES } from "../crawl/index.js";
export {
	ResumeError,
	type RunSelection,
	readRunDigest,
	readRunSelection,
	runHasLiteralTargetIds,
} from "./core/open-run.js";
export {
	type ProgressSnapshot,
	type RunJobOptions,
	type RunJobResult,
	runJob,
	type StopReason,
} from "./core/run-job.js";
export { type CostCheck, checkCost } from "./economics/cost-check.js";
export type { Forecast } from "./economics/forecast.js";
export { forecastJob } from "./economics/forecast-job.js";
export { surveyTargets, type TargetSurvey, targetsDigest } from "./feed/survey-targets.js";
export { DEFAULT_FLEET_LEASE_MS, type FleetJoin, type FleetJoinOptions, joinFleetRun } from "./fleet/fleet-open.js";
export type { FleetWorkerSetup } from "./fleet/fleet-worker.js";
export { type CreditBudget, createCreditBudget } from "./flow/credit-budget.js";
export { type ConcurrencyPlan, MAX_LOCAL_CONCURRENCY, resolveConcurrency } from "./flow/resolve-concurrency.js";
export { createSendGate, type SendGate } from "./flow/send-gate.js";
export { lockForReextraction, lockJobOutput, tookOverMessage } from "./locks/job-lock.js";
export { LayoutConflictError } from "./locks/layout-guard.js";
export { LockHeldError, type LockLease, LockPathError, type RunLock } from "./locks/run-lock.js";
export { MERGE_FILE, type MergeResult, mergeShardRuns } from "./merge/merge-runs.js";
export { budgetToFinish } from "./records/budget-to-finish.js";
export { BASELINE_RUNS } from "./records/contract-check.js";
export { listLayoutRuns, listRuns, type RunInfo } from "./records/find-runs.js";
export {
	NOTIFY_EVENTS,
	type NotifyEvent,
	type NotifySpec,
	notifyRunEnd,
	runEvent,
	signature,
} from "./records/notify.js";
export { CorruptResultsError } from "./records/resume-state.js";
export { MISSING_PAGES_FILE, type ReextractOptions, reextractRun } from "./reextract/reextract.js";
export { runRedirectLandings } from "./target/crawl-hook.js";
export { type FetchResult, fetchTarget } from "./target/fetch-target.js";
export { fullJitterDelayMs } from "./target/retry-timing.js";
export { DEFAULT_TASK_POLL, type PollOutcome, pollTask, type TaskPollOptions } from "./target/task-poller.js";
