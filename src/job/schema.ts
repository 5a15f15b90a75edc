import { z } from "zod";
import {
	AI_SOURCES,
	CONTENT_FORMATS,
	DEFAULT_CSV_MAX_CELL,
	DELIVERIES,
	DEVICES,
	DURATION_HINT,
	JOB_MODES,
	MIN_CSV_MAX_CELL,
	PROBLEMS,
	PROXY_TYPES,
	parseDuration,
	type SCRAPE_PARAM_NAMES,
	type ScrapeParams,
	WAIT_UNTIL,
} from "../common/index.js";
import { blockSignaturesSchema } from "./block-signatures.js";
import { browserSessionSchema } from "./browser-session.js";
import { crawlSchema } from "./crawl-spec.js";
import { mapRequestSchema, searchRequestSchema } from "./discovery-spec.js";
import { carrySchema, extractChecksSchema, extractSchema, idColumnSchema } from "./extract-schema.js";
import { countryHint, modeProblem } from "./param-hints.js";
import { describeValue } from "./problems.js";
import { SHARD_BY } from "./shard.js";

/**
 * The job file as written (habit 1: `JobInput` is this schema's input; the runner gets the
 * normalized `Job` of normalize.ts). Only shapes and single values are checked here; rules that
 * span keys (the service's parameter rules on merged options, unique ids, …) live in rules.ts, and nothing here
 * transforms, so the same schema yields the published JSON Schema.
 */

/** Scrape options: every documented realtime parameter but `url`, named as the service names them. */
export type ScrapeOptions = Omit<ScrapeParams, "url">;
type ScrapeOptionName = Exclude<(typeof SCRAPE_PARAM_NAMES)[number], "url">;

export const OUTPUT_FORMATS = ["jsonl", "csv"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
export const CONTENT_MODES = ["inline", "files", "none"] as const;
export type ContentMode = (typeof CONTENT_MODES)[number];
export const BAD_ROW_POLICIES = ["fail", "skip"] as const;
export type BadRowPolicy = (typeof BAD_ROW_POLICIES)[number];
export const SOURCE_FORMATS = ["csv", "text"] as const;
export type SourceFormat = (typeof SOURCE_FORMATS)[number];

export const DEFAULT_RETRY_ATTEMPTS = 5;
export const DEFAULT_BACKOFF_MS = 1000;
export const DEFAULT_MAX_BACKOFF_MS = 60_000;
/** How long a task (202/408 or `async: true`) is polled before the target fails: 10 minutes. */
export const DEFAULT_TASK_TIMEOUT_MS = 600_000;
/** How long an outage may last before the run stops (`service_unavailable`). */
export const DEFAULT_OUTAGE_TIMEOUT = "10m";
export const DEFAULT_OUTPUT_FORMATS: OutputFormat[] = ["jsonl", "csv"];
export const DEFAULT_CONTENT_MODE: ContentMode = "files";

/**
 * Names Windows keeps for devices, in any case and with any extension (`nul.html` is the device too):
 * results copied to such a machine must not lose files. Spelled without the `i` flag so the JSON
 * Schema's copy of the pattern means the same.
 */
const WINDOWS_DEVICE =
	"(?:[cC][oO][nN]|[pP][rR][nN]|[aA][uU][xX]|[nN][uU][lL]|[cC][oO][mM][0-9]|[lL][pP][tT][0-9])(?:\\.|$)";
/** Folder names under `output/`: no separators, no `..`, nothing hidden, no Windows device names. */
export const JOB_NAME_PATTERN = new RegExp(`^(?!\\.)(?!${WINDOWS_DEVICE})[A-Za-z0-9._-]{1,100}$`);
/**
 * Target ids name files under `pages/`, so they must be safe file names on every platform we run on;
 * and an id of 16 hex digits could be another target's derived id, so it is kept for those.
 */
export const TARGET_ID_PATTERN = new RegExp(
	`^(?!\\.{1,2}$)(?!${WINDOWS_DEVICE})(?![0-9a-fA-F]{16}$)[A-Za-z0-9._-]{1,128}$`,
);

const JOB_NAME_RULE = `must be a safe folder name: 1–100 letters, digits, ".", "_" or "-", not starting with ".", not a Windows device name (CON, NUL, LPT1, …)`;
const TARGET_ID_RULE = `must be 1–128 letters, digits, ".", "_" or "-" (not "." or "..", not a Windows device name such as CON or NUL, not 16 hex digits, which are kept for derived ids): it names files under pages/`;

/** `500ms`, `3s`, `10m`, `24h`, `7d`, or 0; kept as written here (normalize turns it into ms). */
/** `breaker:` by default (docs/behaviour.md, "Breakers"). */
export const DEFAULT_BREAKER = { window: 10, trip: 8, cool_down: "5m", by: "domain" } as const;
export const BREAKER_BY = ["domain", "host"] as const;

export const durationSchema = z
	.union([z.literal(0), z.string()], { error: `must be ${DURATION_HINT}` })
	.refine((value) => parseDuration(value) !== null, {
		error: (issue) => `must be ${DURATION_HINT} (got ${describeValue(issue.input)})`,
	});

const flag = (description: string) => z.boolean().describe(description);
const stringOrList = (description: string) => z.union([z.string(), z.array(z.string())]).describe(description);

/**
 * One zod type per documented parameter (docs/service.md, "Fetching a page"). The parameter rules get the service's own
 * problem texts so a value rejected here reads exactly as the service's 422 would.
 */
const scrapeOptionShape = {
	mode: z
		.enum(JOB_MODES, { error: (issue) => modeProblem(issue.input) })
		.describe(
			"request (plain HTTP, 1–2 credits), browser (full browser, 5), auto (default: 2, or 6 if upgraded), adaptive (the cheapest mode that gives useful records, learned per domain: 1–14)",
		),
	delivery: z.enum(DELIVERIES).describe("raw (the content itself, default) or json (wrapped with metadata)"),
	async: flag("Return a task id at once and poll it (the runner follows tasks)"),
	content: z
		.enum(CONTENT_FORMATS)
		.describe("html (default), markdown, pdf or screenshot (pdf/screenshot need a browser)"),
	include_content: flag("Put the full content into the JSON body (with delivery: json)"),
	no_html: flag("Drop HTML from the response to save bandwidth"),
	excluded_tags: stringOrList("Tag names to strip, e.g. [script, form]"),
	excluded_selectors: stringOrList("CSS selectors to strip"),
	extract_scheme: z
		.union([z.array(z.unknown()), z.record(z.string(), z.unknown())])
		.describe("CSS/XPath/regex extraction rules"),
	scheme_id: z.string().describe("Id of a saved extraction scheme"),
	js_instructions: z
		.array(z.unknown())
		.describe("Browser automation steps: {click: sel}, {fill: [sel, text]}, {wait: ms}, {wait_for: sel}"),
	execute_js: z.string().describe("JavaScript run in the page (browser and auto modes)"),
	networkCapture: z.array(z.unknown()).max(10).describe("Up to 10 network capture filters (browser and auto modes)"),
	capture_headers: flag("Capture the target's response and cookie headers"),
	block_resources: z.array(z.string()).describe("Resource types to block"),
	proxy_type: z.enum(PROXY_TYPES).describe("residential (default) or datacenter (request mode only)"),
	proxy_country: z
		.string({ error: (issue) => `${PROBLEMS.proxyCountry}${countryHint(issue.input)}` })
		.regex(/^[A-Za-z]{2}$/, { error: (issue) => `${PROBLEMS.proxyCountry}${countryHint(issue.input)}` })
		.describe("Two-letter ISO country code of the exit IP (default US)"),
	proxy_session_id: z
		.string({ error: PROBLEMS.proxySessionId })
		.regex(/^[A-Za-z0-9]{6,8}$/, { error: PROBLEMS.proxySessionId })
		.describe("6 to 8 letters or digits; the same id keeps the same IP"),
	proxy_overwrite: z.string().describe("A full proxy URL used instead of the service's proxies"),
	device: z.enum(DEVICES).describe("Browser device profile"),
	wait_until: z.enum(WAIT_UNTIL).describe("Page load event to wait for"),
	wait_seconds: z.number().nonnegative().describe("Seconds to wait after load (raise it after navigation timeouts)"),
	screenshot: flag("Capture a screenshot (requires mode: browser)"),
	pdf: flag("Capture a PDF (browser)"),
	ai_enhance: flag("AI post-processing (needs ai_source)"),
	ai_prompt: z.string().describe("Extraction or summary prompt for ai_enhance"),
	ai_source: z.enum(AI_SOURCES).describe("What the AI reads: markdown or screenshot (required with ai_enhance)"),
	ai_force_json: flag("Force the AI answer to be valid JSON"),
	additional_headers: z.record(z.string(), z.string()).describe("Extra headers sent to the target"),
	config_id: z.string().describe("Id of a saved scraper config"),
	storage_id: z.string().describe("Id of a saved cloud-storage config to upload results to"),
	use_default_storage: flag("Upload results to the default storage config"),
	webhook: z.record(z.string(), z.unknown()).describe("{url, type: discord|slack|custom, events, secret}"),
} satisfies Record<ScrapeOptionName, z.ZodType>;

/** Names of the scrape options a job may set (every documented parameter but `url`). */
export const SCRAPE_OPTION_NAMES = Object.keys(scrapeOptionShape) as ScrapeOptionName[];

export const scrapeOptionsSchema = z
	.strictObject(scrapeOptionShape)
	.partial()
	.describe("Scrape options, named as the service's realtime parameters");

/** `defaults`: scrape options for every target, and a `browser_session` for every target. */
export const defaultsSchema = scrapeOptionsSchema
	.extend({ browser_session: browserSessionSchema.optional() })
	.describe("Scrape options (and a browser_session) for every target; a target's own win");

const urlSchema = z
	.string({ error: (issue) => (issue.input === undefined ? PROBLEMS.urlRequired : PROBLEMS.urlFormat) })
	// biome-ignore lint/suspicious/noTemplateCurlyInString: `${VAR}` is the job format's own syntax
	.describe("http:// or https:// URL; ${ENV_VAR} is expanded");

export const targetObjectSchema = z
	.strictObject({
		url: urlSchema,
		id: z
			.string()
			.regex(TARGET_ID_PATTERN, { error: (issue) => `${TARGET_ID_RULE} (got ${describeValue(issue.input)})` })
			.optional()
			.describe("Stable id (default: derived from the URL and options); names the page file"),
		browser_session: browserSessionSchema.optional(),
		extract: extractSchema.optional(),
		...scrapeOptionsSchema.shape,
	})
	.describe("A target with its own id and scrape options (they override defaults)");

export const targetSchema = z.union([urlSchema, targetObjectSchema]).describe("A URL, or a target with options");

export const sourceObjectSchema = z
	.strictObject({
		file: z.string().min(1).describe("Path of a CSV or text file, relative to the job file"),
		format: z
			.enum(SOURCE_FORMATS)
			.optional()
			.describe("csv or text (default: csv when `column` is set or the file ends in .csv, else text)"),
		column: z.string().min(1).optional().describe("CSV header naming the URL column"),
		delimiter: z.string().length(1).optional().describe('CSV field delimiter (default ",")'),
		id_column: idColumnSchema.optional(),
		extract: extractSchema.optional(),
		...scrapeOptionsSchema.shape,
	})
	.describe("A list of URLs streamed from a file; scrape options here apply to its rows");

export const mapSourceSchema = z
	.strictObject({ map: mapRequestSchema, ...scrapeOptionsSchema.shape })
	.describe("URLs of a domain from the service's map endpoint (paid once per run); scrape options apply to them");
export const searchSourceSchema = z
	.strictObject({ search: searchRequestSchema, ...scrapeOptionsSchema.shape })
	.describe("Result URLs of web searches from the service's search endpoint (paid once per run)");

export const sourceSchema = z
	.union([z.string().min(1), sourceObjectSchema, mapSourceSchema, searchSourceSchema])
	.describe("A text file (one URL a line), a source with options, or the service's map or search");

export const outputSchema = z
	.strictObject({
		formats: z
			.array(z.enum(OUTPUT_FORMATS))
			.min(1)
			.default(DEFAULT_OUTPUT_FORMATS)
			.describe("Result files to write: jsonl, csv"),
		content: z
			.enum(CONTENT_MODES)
			.default(DEFAULT_CONTENT_MODE)
			.describe("Page content: inline (in results.jsonl), files (under pages/), none"),
		csv_bom: z
			.boolean()
			.default(false)
			.describe("Start results.csv with a UTF-8 byte order mark, so Excel shows non-ASCII text correctly"),
		csv_max_cell: z
			.int()
			.refine((value) => value === 0 || value >= MIN_CSV_MAX_CELL, {
				error: (issue) =>
					`must be 0 (no limit) or at least ${MIN_CSV_MAX_CELL}, room for the cut's marker (got ${describeValue(issue.input)})`,
			})
			.default(DEFAULT_CSV_MAX_CELL)
			.describe(
				"Longest results.csv cell in characters (default 32767, the spreadsheet limit; 0 = no limit): a longer one is cut, ending in …[+N chars]; JSONL keeps the whole value",
			),
	})
	.describe("What the run writes");

export const retrySchema = z
	.strictObject({
		attempts: z
			.int()
			.min(1)
			.max(100)
			.default(DEFAULT_RETRY_ATTEMPTS)
			.describe("Attempts per target, the first included"),
		backoff_ms: z
			.int()
			.positive()
			.default(DEFAULT_BACKOFF_MS)
			.describe("First wait in milliseconds; doubles each retry, with full jitter"),
		max_backoff_ms: z.int().positive().default(DEFAULT_MAX_BACKOFF_MS).describe("Longest wait in milliseconds"),
	})
	.describe("Retries of 5xx and network errors (never 401, 402, 422 or DNS failures)");

export const jobFileSchema = z
	.strictObject({
		name: z
			.string()
			.regex(JOB_NAME_PATTERN, { error: (issue) => `${JOB_NAME_RULE} (got ${describeValue(issue.input)})` })
			.optional()
			.describe("Output folder name (default: the file's base name)"),
		concurrency: z
			.union([z.literal("auto"), z.int().positive()], {
				error: (issue) => `must be "auto" or a positive integer (got ${describeValue(issue.input)})`,
			})
			.default("auto")
			.describe("auto = the account's concurrency; or a number not above it"),
		max_credits: z
			.int()
			.min(0)
			.optional()
			.describe(
				"Budget for the whole run, resumed sessions included: no fetch starts whose worst case could exceed it; reached, the run stops (0: nothing may be spent)",
			),
		browser_session: browserSessionSchema.optional(),
		defaults: defaultsSchema.extend({ extract: extractSchema.optional() }).optional(),
		targets: z.array(targetSchema).optional().describe("Inline targets"),
		sources: z.array(sourceSchema).optional().describe("Files of URLs, streamed (never loaded whole)"),
		extract: extractSchema.optional(),
		extract_checks: extractChecksSchema.optional(),
		block_signatures: blockSignaturesSchema.optional(),
		carry: carrySchema.optional(),
		output: outputSchema.prefault({}),
		retry: retrySchema.prefault({}),
		on_bad_row: z
			.enum(BAD_ROW_POLICIES)
			.default("fail")
			.describe("A bad source row (invalid URL, missing column): fail validation (default) or skip it and count it"),
		task_timeout_ms: z
			.int()
			.positive()
			.default(DEFAULT_TASK_TIMEOUT_MS)
			.describe("How long a task is polled before its target fails, in milliseconds (default 10 minutes)"),
		max_body_mb: z
			.number()
			.positive()
			.max(2048)
			.default(50)
			.describe(
				"Largest answer body read, in MB: a larger one fails its target with body_too_large after reading no more (default 50)",
			),
		notify: z
			.strictObject({
				url: z
					.string()
					.regex(/^https?:\/\/\S+$/, { error: "must be an http:// or https:// address" })
					.describe("Where the summary is POSTed when a run ends"),
				secret: z
					.string()
					.min(8, { error: "must be at least 8 characters" })
					.optional()
					// biome-ignore lint/suspicious/noTemplateCurlyInString: `${VAR}` is the job format's own syntax
					.describe("Signs the body: X-Scrapejob-Signature: sha256=<hex HMAC-SHA256>; use ${ENV_VAR}"),
				on: z
					.array(z.enum(["completed", "failed", "stopped"]))
					.min(1)
					.optional()
					.describe(
						"Which endings are sent (default all): completed (all ok), failed (some failed), stopped (incomplete)",
					),
				format: z
					.enum(["json", "slack"])
					.optional()
					.describe("json (the summary) or slack (an incoming webhook's text); default: slack for hooks.slack.com"),
			})
			.optional()
			.describe("A signed POST of the summary when a run ends; a failed notification never changes the exit code"),
		freshness: durationSchema
			.default(0)
			.describe(
				"Skip a target whose latest record in this job's earlier runs is ok and younger than this (e.g. 24h; a failed one is never fresh); 0 fetches all. --freshness wins",
			),
		crawl: crawlSchema.optional(),
		shard_by: z
			.enum(SHARD_BY)
			.default("host")
			.describe(
				"What `run --shard I/N` splits on: host (every URL of a host in one shard, its politeness with one worker; crawled links of another shard's host are handed to it) or url (each URL on its own: one big host spread over every shard)",
			),
		per_host_concurrency: z
			.int()
			.positive()
			.optional()
			.describe("Fetches in flight per target host at most (politeness), under the account's concurrency"),
		per_host_delay: durationSchema
			.optional()
			.describe(
				"Least time between two fetch starts to one target host (politeness, e.g. 500ms or 2s); a crawl's robots.txt Crawl-delay raises it",
			),
		breaker: z
			.union([
				z.literal(false),
				z
					.strictObject({
						window: z
							.int()
							.positive()
							.default(DEFAULT_BREAKER.window)
							.describe("How many of a domain's latest charged fetches are judged (default 10)"),
						trip: z
							.int()
							.positive()
							.default(DEFAULT_BREAKER.trip)
							.describe("How many of those, useless or failed, open the domain's breaker (default 8; at most window)"),
						cool_down: durationSchema
							.default(DEFAULT_BREAKER.cool_down)
							.describe(
								"How long an open breaker parks the domain's targets before one probe is let through (default 5m)",
							),
						by: z
							.enum(BREAKER_BY)
							.default("domain")
							.describe(
								"domain (registrable domain, default: shop.example.co.uk and www.example.co.uk are one) or host",
							),
					})
					.refine((value) => value.trip <= value.window, { error: "trip must not be above window" }),
			])
			.prefault({})
			.describe(
				"The per-domain paid-failure breaker: when trip of a domain's last window charged fetches were useless or failed, its remaining targets are parked (no fetch, no credit, no record; --resume / --continue take them) until a probe after cool_down is useful; a run that ends with one open exits 6. false: off",
			),
		metrics: z
			.string()
			.min(1)
			.optional()
			.describe(
				"Prometheus text file (node_exporter textfile collector) written atomically every 10 s and at exit; relative to the job file. --metrics wins",
			),
		healthcheck: z
			.string()
			.regex(/^https?:\/\/\S+$/, { error: "must be an http:// or https:// address" })
			.optional()
			.describe(
				// biome-ignore lint/suspicious/noTemplateCurlyInString: `${VAR}` is the job format's own syntax
				"Healthchecks.io-style pings: GET URL/start at start, URL on success, URL/fail when the exit code is not 0 (each within 10 s; never changes the exit code; never logged: use ${ENV_VAR}). --healthcheck wins",
			),
		page_timeout: durationSchema
			.refine((value) => (parseDuration(value) ?? 0) > 0, { error: "must be above 0" })
			.optional()
			.describe(
				"Longest one page's parse + extract + link discovery may take (in a worker thread); past it the target is failed with page_too_complex (default 10s)",
			),
		outage_timeout: durationSchema
			.default(DEFAULT_OUTAGE_TIMEOUT)
			.describe(
				"How long the service may be unreachable (or 5xx to every fetch) before the run stops with service_unavailable, exit 3 (default 10m)",
			),
	})
	.meta({
		title: "scrapejob job file",
		description: "A batch scraping job: targets, sources and scrape options. See `scrapejob validate --help`.",
	});

/** The job file as written. */
export type JobInput = z.input<typeof jobFileSchema>;
/** The job file after the schema (defaults filled in), before normalization. */
export type JobFileOutput = z.output<typeof jobFileSchema>;

// Compile-time guard: what the schema accepts must be what the service's parameter type allows.
type Assignable<T, U extends T> = U;
export type _ScrapeOptionsMatchService = Assignable<ScrapeOptions, z.output<typeof scrapeOptionsSchema>>;
