export type { BodySink } from "../common/index.js";
export {
	type AccountClient,
	type AccountClientOptions,
	createAccountClient,
	DEFAULT_API_URL,
	type GeneratedProxies,
	USAGE_PERIODS,
	type UsagePeriod,
} from "./account-client.js";
export { likelyServiceAddresses, meantServiceAddress, type ServiceApi } from "./address-guess.js";
export {
	classifyFailure,
	classifyScrapingError,
	DEFAULT_RESET_SECONDS,
	errorKind,
	type FailureAction,
	isServiceSideKind,
	MAX_RESET_SECONDS,
} from "./classify.js";
export {
	AccountApiNotFoundError,
	BodySinkError,
	BodyTooLargeError,
	isNotTheService,
	NETWORK_FAILURES,
	NetworkError,
	type NetworkFailure,
	namingRefusedKey,
	RequestAbortedError,
	ScraperNotFoundError,
	ServiceError,
	type ServiceErrorFields,
	UnexpectedResponseError,
} from "./errors.js";
export { type GenerateProxiesParams, type ParsedProxy, parseProxyLine, parseProxyLines } from "./proxy-lines.js";
export type {
	BrowserAccess,
	ProxyData,
	ProxyProduct,
	RotateSessionResult,
	ScraperAccess,
	StaticResidential,
	TargetingCatalogue,
	TargetingPlace,
	TargetingSettings,
	TaskRecord,
	Usage,
} from "./records.js";
export {
	createSavedItemsClient,
	type SavedItemsClient,
	type SavedItemsClientOptions,
} from "./saved-items-client.js";
export type { SavedConfig, SavedScheme, Schedule, StorageConfig } from "./saved-records.js";
export {
	type ContentOutcome,
	createScraperClient,
	DEFAULT_SCRAPER_URL,
	type DiscoveryAnswer,
	type DiscoveryEndpoint,
	type RealtimeCallOptions,
	type RealtimeOutcome,
	type ScraperClient,
	type ScraperClientOptions,
	type TargetErrorOutcome,
	type TaskOutcome,
	type TaskState,
} from "./scraper-client.js";
export { contentOf, type ScraperHeaders, taskStatusKind } from "./scraper-response.js";
export { type BodySpill, createDispatcher, type SpilledBody } from "./transport.js";
