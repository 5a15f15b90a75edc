/**
 * Job files: load and validate (every problem with file:line:col), normalize, and stream targets.
 * The runner calls `loadJob`, then `streamTargets`; the CLI's `validate` and `schema` use the rest.
 */
export { JOB_SCHEMA_FILE, jobJsonSchema, jobJsonSchemaText } from "./json-schema.js";
export { type LoadedJob, type LoadJobOptions, loadJob } from "./load-job.js";
export { MAX_JOB_FILE_BYTES } from "./parse-yaml.js";
export { formatProblem, type JobProblem, JobValidationError } from "./problems.js";
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
export { countTargets, createEmptyCounts, type StreamTargetsOptions, streamTargets } from "./stream-targets.js";
export type { CsvSourceSpec, Job, SourceSpec, Target, TargetCounts, TargetOrigin, TextSourceSpec } from "./types.js";
