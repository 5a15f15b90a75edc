export {
	type AtomicFile,
	type AtomicWriteOptions,
	isAtomicTemporaryName,
	openAtomicFile,
	writeAll,
	writeFileAtomic,
} from "./atomic-file.js";
export { isLoopbackHost, joinUrl, parseBaseUrl } from "./base-url.js";
export type { BodySink } from "./body-sink.js";
export { canonicalJson } from "./canonical-json.js";
export { closeEach } from "./close-each.js";
export { DEFAULT_CSV_MAX_CELL, MIN_CSV_MAX_CELL } from "./csv-cell-limit.js";
export { didYouMean, editDistance } from "./did-you-mean.js";
export { DURATION_HINT, DURATION_UNITS, formatDuration, parseDuration } from "./duration.js";
export {
	ERROR_CODES,
	type ErrorCode,
	errorMessage,
	isNativeLoadFailure,
	NativeModuleError,
	ScrapejobError,
	UsageError,
} from "./errors.js";
export { EXIT, type ExitCode } from "./exit-codes.js";
export { type FileMutexOptions, withFileMutex } from "./file-mutex.js";
export { formatNumber } from "./format-number.js";
export { hexWord } from "./hex-word.js";
export { isoTime, parseIsoTime } from "./iso-time.js";
export {
	cutTornTail,
	type JsonlLine,
	type JsonlReader,
	type JsonlReadOptions,
	jsonlLines,
	openJsonlReader,
	parseJsonLine,
} from "./jsonl-lines.js";
export { KeyTable, normalizedKeyLow } from "./key-table.js";
export { createLastWords, type LastWord, type LastWords } from "./last-words.js";
export { lazyModule } from "./lazy-module.js";
export { makeDirectory } from "./make-directory.js";
export { MIN_NODE_VERSION, NODE_TOO_OLD, nodeTooOld } from "./node-version.js";
export { checkOptions, checkPathArgument, type OptionKind, type OptionKinds } from "./option-checks.js";
export { CLI_WORDS, LIBRARY_WORDS, type OptionWords } from "./option-words.js";
export { plural } from "./plural.js";
export { ownStartTicks, type ProcessState, processState } from "./process-state.js";
export { RECORD_COLUMNS } from "./record-columns.js";
export { createDomainLookup, hostOfUrl } from "./registrable-domain.js";
export {
	FileTooLargeError,
	NotRegularFileError,
	openRegularFile,
	readRegularFile,
	SMALL_FILE_MAX_BYTES,
} from "./regular-file.js";
export {
	AI_SOURCES,
	CONTENT_FORMATS,
	CREDIT_COSTS,
	checkScrapeParams,
	checkScrapeUrl,
	creditCostRange,
	DELIVERIES,
	DEVICES,
	JOB_MODES,
	type JobMode,
	MODES,
	type Mode,
	type ParamProblem,
	PROBLEMS,
	PROXY_TYPES,
	type PriceClass,
	type PricedRange,
	type ProxyType,
	REQUESTED_MODES,
	type RequestedMode,
	SCRAPE_PARAM_NAMES,
	type ScrapeParams,
	WAIT_UNTIL,
} from "./scrape-params.js";
export {
	maskCredentialsInText,
	maskSecret,
	maskUrlCredentials,
	redactSecrets,
	stripUrlCredentials,
} from "./secrets.js";
export { CLI_NAME, cliCommand, shellWord } from "./shell-command.js";
export { type Clock, type Sleep, sleep, systemClock } from "./sleep.js";
export { createTaskQueue, type TaskQueue } from "./task-queue.js";
export { normalizeUrl, urlIdentity } from "./url-identity.js";
export { createUrlKeys, type UrlKeys, type UrlKeysOptions } from "./url-keys.js";
export {
	compileUserRegex,
	quoteUserRegex,
	toRe2Syntax,
	type UserRegex,
	UserRegexError,
	type UserRegexMatch,
	userRegexProblem,
} from "./user-regex.js";
