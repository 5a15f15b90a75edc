export { BASELINE_RUNS } from "./contract-check.js";
export { type CostCheck, checkCost } from "./cost-check.js";
export { type CreditBudget, createCreditBudget } from "./credit-budget.js";
export { type FetchResult, fetchTarget } from "./fetch-target.js";
export { listRuns, type RunInfo } from "./find-runs.js";
export { DEFAULT_FLEET_LEASE_MS, type FleetJoin, type FleetJoinOptions, joinFleetRun } from "./fleet-open.js";
export type { FleetWorkerSetup } from "./fleet-worker.js";
export type { Forecast } from "./forecast.js";
export { forecastJob } from "./forecast-job.js";
export { lockJobOutput, tookOverMessage } from "./job-lock.js";
export { LayoutConflictError } from "./layout-guard.js";
export { MERGE_FILE, type MergeResult, mergeShardRuns } from "./merge-runs.js";
export { NOTIFY_EVENTS, type NotifyEvent, type NotifySpec, notifyRunEnd, runEvent, signature } from "./notify.js";
export { ResumeError, type RunSelection, readRunDigest, readRunSelection, runHasLiteralTargetIds } from "./open-run.js";
export { MISSING_PAGES_FILE, type ReextractOptions, reextractRun } from "./reextract.js";
export { type ConcurrencyPlan, MAX_LOCAL_CONCURRENCY, resolveConcurrency } from "./resolve-concurrency.js";
export { CorruptResultsError } from "./resume-state.js";
export { fullJitterDelayMs } from "./retry-timing.js";
export {
	type ProgressSnapshot,
	type RunJobOptions,
	type RunJobResult,
	runJob,
	type StopReason,
} from "./run-job.js";
export { LockHeldError, type LockLease, type RunLock } from "./run-lock.js";
export { createSendGate, type SendGate } from "./send-gate.js";
export { surveyTargets, type TargetSurvey, targetsDigest } from "./survey-targets.js";
export { DEFAULT_TASK_POLL, type PollOutcome, pollTask, type TaskPollOptions } from "./task-poller.js";
