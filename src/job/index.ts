/**
 * Job files: load and validate (every problem with file:line:col), normalize, and stream targets.
 * The runner calls `loadJob`, then `streamTargets`; the CLI's `validate` and `schema` use the rest.
 *
 * Map: load-job (the pipeline) → parse-yaml (read with a size cap, parse keeping positions) →
 * expand-env (`${VAR}`) → schema (zod, as written) + zod-issues (messages, "did you mean") →
 * rules (the service's parameter rules on merged options, cross-field) → normalize (→ `Job`) → stream-targets
 * (inline + sources, dedupe, bad rows) over sources (CSV/text, streamed) and url-check;
 * positions, target-id (ids and duplicate keys from each URL's identity; literal-ids for resuming runs
 * of older versions), dedupe, did-you-mean and problems are helpers; json-schema publishes it.
 */
export {
	BROWSER_OS,
	BROWSER_STEP_KINDS,
	type BrowserSession,
	type BrowserStep,
	type BrowserStepKind,
	jobUsesBrowser,
} from "./browser-session.js";
export { CRAWL_SCOPES, type CrawlScope, type CrawlSpec } from "./crawl-spec.js";
export { createTargetKeySet, type TargetKeySet } from "./dedupe.js";
export type { DiscoverySpec } from "./discovery-spec.js";
export type { JobContract, JobExtraction } from "./extract-normalize.js";
export { JOB_SCHEMA_FILE, jobJsonSchema, jobJsonSchemaText } from "./json-schema.js";
export { withLiteralTargetIds } from "./literal-ids.js";
export { type LoadedJob, type LoadJobOptions, loadJob, loadJobWorded } from "./load-job.js";
export { MAX_JOB_FILE_BYTES } from "./parse-yaml.js";
export { formatProblem, type JobProblem, JobValidationError, SourceScanStoppedError } from "./problems.js";
export type { ScanWitness } from "./scan-witness.js";
export {
	BAD_ROW_POLICIES,
	type BadRowPolicy,
	CONTENT_MODES,
	type ContentMode,
	type JobInput,
	jobFileSchema,
	OUTPUT_FORMATS,
	type OutputFormat,
	type ScrapeOptions,
} from "./schema.js";
export {
	isOwnShard,
	parseShard,
	SHARD_BY,
	SHARD_SUFFIX_PATTERN,
	type ShardBy,
	type ShardSpec,
	shardOf,
	shardSuffix,
} from "./shard.js";
export { createHostTally, type HostTally, shardBalanceWarning, shardTurnsWarning } from "./shard-balance.js";
export {
	countTargets,
	createEmptyCounts,
	type SeenKeys,
	type StreamTargetsOptions,
	streamTargetBatches,
	streamTargets,
} from "./stream-targets.js";
export { createListedTargetKey, createTargetKey, identityOptionsJson } from "./target-id.js";
export type {
	BreakerSpec,
	CsvSourceSpec,
	Job,
	RetryCrawl,
	SourceSpec,
	Target,
	TargetCounts,
	TargetCrawl,
	TargetOrigin,
	TextSourceSpec,
} from "./types.js";
export { checkTargetUrl, MAX_TARGET_URL_CHARS } from "./url-check.js";
export { EXTRACTION_VARIABLES, RECORD_VARIABLES, type VariablesNeeded } from "./variables-needed.js";
