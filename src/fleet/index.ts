/**
 * The fleet: many worker processes on any hosts running one job's run together, coordinated only through
 * PostgreSQL — one frontier claimed with leases and epochs, one budget, one concurrency limit, politeness
 * per host, a pause for everyone.
 */

export {
	admitTarget,
	breakerWatchList,
	type FleetAdmission,
	type FleetBreaker,
	type FleetBreakerState,
	openBreakers,
	parkTarget,
	probeLost,
	recordBreakerOutcome,
	releaseDueProbe,
	settleProbe,
} from "./breakers.js";
export { commitCredits, releaseCredits, reserveCredits, settleExtraCredits } from "./budget.js";
export { connectFleet, DEFAULT_FLEET_SCHEMA, type Fleet, type FleetOptions, fleetUrlSecrets } from "./connect.js";
export { addDiscovered, addLanding } from "./discovered.js";
export {
	type FleetDomainMode,
	type FleetDomainModeChanges,
	keepFleetDomainModes,
	readFleetDomainModes,
} from "./domain-modes.js";
export { FleetDatabaseError, FleetSchemaTooNewError, FleetSchemaUnreadableError } from "./errors.js";
export {
	type FailedCrawlPage,
	type FreshPage,
	failedCrawlPages,
	failedTargetIds,
	freshPages,
	freshTargetIds,
	okTargetIds,
} from "./fresh.js";
export { latestFleetRecords } from "./latest-records.js";
export {
	type ClaimOptions,
	claimTargets,
	completeTarget,
	fetchStarting,
	finishTarget,
	freshTarget,
	reapExpiredLeases,
	releaseTarget,
	renewLeases,
	storeTaskId,
} from "./leases.js";
export { LOAD_BATCH } from "./load-targets.js";
export { countLeasedPage, fillFreedRoom, insertWithinMaxPages, type PagesRoom } from "./max-pages.js";
export {
	loadingTakeOver,
	loadTargets,
	type OpenFleetRunOptions,
	type OpenFleetRunResult,
	openFleetRun,
} from "./open-run.js";
export { pauseFleet, setHostPoliteness } from "./politeness.js";
export { claimRobots, type FleetRobots, storeRobots } from "./robots.js";
export { FLEET_SCHEMA_VERSION } from "./schema.js";
export { addListedPages, addProgress, readProgress } from "./sitemaps.js";
export {
	acquireSlot,
	acquireSlots,
	exchangeSlot,
	type FleetLimit,
	type FleetSlot,
	readConcurrencyLimit,
	releaseSlot,
	setConcurrencyLimit,
} from "./slots.js";
export {
	type FleetStatus,
	finishFleetRun,
	fleetStatus,
	isComplete,
	listFleetRuns,
	onlyParkedLeft,
	targetCounts,
} from "./status.js";
export type {
	FleetLease,
	FleetPreviousRecord,
	FleetRun,
	FleetTargetInput,
	FleetTargetSource,
	FleetWorker,
} from "./types.js";
export { type FleetRunWatch, watchFleetRun } from "./watch.js";
export { endWorker, registerWorker, type WorkerIdentity } from "./workers.js";
