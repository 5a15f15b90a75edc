import { createHash } from "node:crypto";
import { basename, extname, isAbsolute, relative, resolve } from "node:path";
import type { z } from "zod";
import { canonicalJson, DEFAULT_CSV_MAX_CELL, parseDuration, type ScrapeParams } from "../common/index.js";
import { DEFAULT_PAGE_TIMEOUT_MS } from "../extract/index.js";
import { normalizeBlockSignatures } from "./block-signatures.js";
import { type BrowserSession, browserSessionSchema, mergeBrowserSessions } from "./browser-session.js";
import { normalizeCrawl } from "./crawl-spec.js";
import type { DiscoverySpec } from "./discovery-spec.js";
import { contractOf, createExtractionBuilder, type ExtractionBuilder } from "./extract-normalize.js";
import type { DataPath, Position } from "./positions.js";
import type { JobFileOutput, ScrapeOptions, SourceFormat } from "./schema.js";
import {
	JOB_NAME_PATTERN,
	type mapSourceSchema,
	scrapeOptionsSchema,
	type searchSourceSchema,
	sourceSchema,
	targetSchema,
} from "./schema.js";
import { createListedTargetKey, identityOptionsJson } from "./target-id.js";
import type { Job, SourceSpec, Target } from "./types.js";

/** Everything normalization needs to know about where the job file is. */
export interface NormalizeContext {
	/** Absolute path of the job file. */
	file: string;
	displayFile: string;
	cwd: string;
	locate(path: DataPath): Position;
}

/** A path as users see it: relative to the working directory when below it, absolute otherwise. */
export function displayPathFor(absolutePath: string, cwd: string): string {
	const rel = relative(cwd, absolutePath);
	return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel : absolutePath;
}

/**
 * The default job name: the file's base name without extension, made safe as a folder name
 * (`my shop.yaml` → `my-shop`), since the user did not choose it and should not have to fix it.
 */
export function defaultJobName(file: string): string {
	const stem = basename(file, extname(file))
		.replace(/[^A-Za-z0-9._-]+/g, "-")
		.replace(/^[.-]+/, "")
		.slice(0, 100);
	if (stem === "") return "job";
	// `con.yaml` must not name a folder Windows cannot hold.
	return JOB_NAME_PATTERN.test(stem) ? stem : `${stem}-job`.slice(0, 100);
}

/** `format` as written, else csv when a column is named or the file is .csv/.tsv, else text. */
export function inferSourceFormat(file: string, format: unknown, column: unknown): SourceFormat {
	if (format === "csv" || format === "text") return format;
	if (column !== undefined || /\.[ct]sv$/i.test(file)) return "csv";
	return "text";
}

/** Scrape options of an object that also carries other keys (a target's `url`/`id`, a source's `file`…). */
function optionsOf(value: Record<string, unknown>, exclude: readonly string[]): ScrapeOptions {
	const options: Record<string, unknown> = {};
	for (const [key, member] of Object.entries(value)) {
		if (!exclude.includes(key) && member !== undefined) options[key] = member;
	}
	return options as ScrapeOptions;
}

export type TargetEntry = JobFileOutput extends { targets?: Array<infer T> } ? T : never;
type AnySourceEntry = JobFileOutput extends { sources?: Array<infer S> } ? S : never;
/** A file source (`map:` and `search:` sources are the service's: see discovery-spec.ts). */
type DiscoveryEntry = z.output<typeof mapSourceSchema> | z.output<typeof searchSourceSchema>;
export type SourceEntry = Exclude<AnySourceEntry, DiscoveryEntry>;

function isDiscoveryEntry(entry: AnySourceEntry): entry is DiscoveryEntry {
	return typeof entry === "object" && ("map" in entry || "search" in entry);
}

function normalizeDiscovery(entry: DiscoveryEntry, index: number, ctx: NormalizeContext): DiscoverySpec {
	const kind = "map" in entry ? "map" : "search";
	const at = ctx.locate(["sources", index, kind]);
	return {
		kind,
		request: "map" in entry ? { ...entry.map } : { ...entry.search },
		options: optionsOf(entry, [kind]),
		origin: { file: ctx.displayFile, line: at.line, col: at.col },
	};
}

/**
 * An inline target: its params are `defaults` overridden by its own options; its id is given or derived.
 * A `browser_session` (the job's, overridden field by field by the target's) is part of its identity.
 */
export function normalizeTarget(
	entry: TargetEntry,
	defaults: ScrapeOptions,
	origin: Target["origin"],
	jobSession: BrowserSession | null = null,
): Target {
	const own = typeof entry === "string" ? {} : optionsOf(entry, ["url", "id", "browser_session", "extract"]);
	const url = typeof entry === "string" ? entry : entry.url;
	const params: ScrapeParams = { ...defaults, ...own, url };
	const session = mergeBrowserSessions(jobSession, typeof entry === "string" ? null : entry.browser_session);
	const id =
		typeof entry === "string" || entry.id === undefined
			? createListedTargetKey(url, identityOptionsJson(withSession(params, session))).id
			: entry.id;
	return session ? { id, url, params, origin, browserSession: session } : { id, url, params, origin };
}

/** Options as identified: the browser session, when there is one, is part of what a target is. */
export function withSession<T extends object>(options: T, session: BrowserSession | null): T {
	return session ? { ...options, browser_session: session } : options;
}

/** `defaults` split into the scrape options and the `browser_session` that rides along with them. */
function splitDefaults(raw: unknown): { defaults: ScrapeOptions; session: BrowserSession | null } {
	if (typeof raw !== "object" || raw === null) return { defaults: {}, session: null };
	const { browser_session: session, extract: _extract, ...options } = raw as Record<string, unknown>;
	const parsedSession = browserSessionSchema.safeParse(session);
	return {
		defaults: options as ScrapeOptions,
		session: session !== undefined && parsedSession.success ? parsedSession.data : null,
	};
}

export function normalizeSource(
	entry: SourceEntry,
	index: number,
	dir: string,
	ctx: NormalizeContext,
	extraction?: ExtractionBuilder,
): SourceSpec {
	const spec = typeof entry === "string" ? { file: entry } : entry;
	const path = resolve(dir, spec.file);
	const at = ctx.locate(typeof entry === "string" ? ["sources", index] : ["sources", index, "file"]);
	const base: Omit<SourceSpec, "kind"> = {
		path,
		displayPath: displayPathFor(path, ctx.cwd),
		options:
			typeof entry === "string"
				? {}
				: optionsOf(entry, ["file", "format", "column", "delimiter", "id_column", "extract"]),
		origin: { file: ctx.displayFile, line: at.line, col: at.col },
	};
	const plan = extraction?.planFor(typeof entry === "string" ? undefined : entry.extract);
	if (plan) base.extract = plan;
	const format = inferSourceFormat(
		spec.file,
		"format" in spec ? spec.format : undefined,
		"column" in spec ? spec.column : undefined,
	);
	if (format === "text") return { kind: "text", ...base };
	const column = "column" in spec && spec.column !== undefined ? spec.column : "url";
	const delimiter =
		"delimiter" in spec && spec.delimiter !== undefined ? spec.delimiter : /\.tsv$/i.test(spec.file) ? "\t" : ",";
	const idColumn = "id_column" in spec ? spec.id_column : undefined;
	const carry = extraction && extraction.carry.length > 0 ? { carry: extraction.carry } : {};
	return { kind: "csv", column, delimiter, ...base, ...(idColumn !== undefined ? { idColumn } : {}), ...carry };
}

/** SHA-256 of what decides the fetches (see `Job.fingerprint`). */
/** `crawl:` and `per_host_concurrency`, present only when the job sets them. */
function crawlOptions(parsed: JobFileOutput): Pick<Job, "crawl" | "perHostConcurrency" | "perHostDelayMs"> {
	const crawl = normalizeCrawl(parsed.crawl);
	const delayMs = parsed.per_host_delay === undefined ? 0 : (parseDuration(parsed.per_host_delay) ?? 0);
	return {
		...(crawl ? { crawl } : {}),
		...(parsed.per_host_concurrency ? { perHostConcurrency: parsed.per_host_concurrency } : {}),
		...(delayMs > 0 ? { perHostDelayMs: delayMs } : {}),
	};
}

/** `metrics:` (a path, relative to the job file) and `healthcheck:`, present only when the job sets them. */
function monitoringOptions(parsed: JobFileOutput, dir: string): Pick<Job, "metricsFile" | "healthcheck"> {
	return {
		...(parsed.metrics !== undefined ? { metricsFile: resolve(dir, parsed.metrics) } : {}),
		...(parsed.healthcheck !== undefined ? { healthcheck: parsed.healthcheck } : {}),
	};
}

export function jobFingerprint(job: Omit<Job, "fingerprint">): string {
	const identity = {
		v: 1,
		defaults: job.defaults,
		targets: job.targets.map((target) => [target.id, target.params, target.browserSession ?? null]),
		browserSession: job.browserSession ?? undefined,
		sources: job.sources.map((source) => ({
			kind: source.kind,
			path: relative(job.dir, source.path).split("\\").join("/"),
			column: source.kind === "csv" ? source.column : undefined,
			delimiter: source.kind === "csv" ? source.delimiter : undefined,
			options: source.options,
		})),
		// Shards split another way run other targets: merge refuses to mix them (absent for `host`: older digests hold).
		...(job.shardBy === "url" ? { shardBy: "url" } : {}),
	};
	return createHash("sha256").update(canonicalJson(identity)).digest("hex");
}

/** Step 2 of habit 2: the schema's output made into the `Job` the runner gets. */
export function normalizeJob(parsed: JobFileOutput, ctx: NormalizeContext): Job {
	const dir = resolve(ctx.file, "..");
	const split = splitDefaults(parsed.defaults);
	const defaults = split.defaults;
	const browserSession = mergeBrowserSessions(parsed.browser_session, split.session);
	const extraction = createExtractionBuilder({
		extract: parsed.extract,
		defaultsExtract: parsed.defaults?.extract,
		minFill: parsed.extract_checks?.min_fill,
		carry: parsed.carry,
	});
	extraction.noteServiceOptions(defaults);
	const targets = (parsed.targets ?? []).map((entry, index) => {
		const at = ctx.locate(["targets", index]);
		const target = normalizeTarget(
			entry,
			defaults,
			{ file: ctx.displayFile, line: at.line, col: at.col },
			browserSession,
		);
		extraction.noteServiceOptions(target.params);
		const plan = extraction.planFor(typeof entry === "string" ? undefined : entry.extract);
		return plan ? { ...target, extract: plan } : target;
	});
	const sources: SourceSpec[] = [];
	const discovery: DiscoverySpec[] = [];
	(parsed.sources ?? []).forEach((entry, index) => {
		if (isDiscoveryEntry(entry)) {
			discovery.push(normalizeDiscovery(entry, index, ctx));
			return;
		}
		const source = normalizeSource(entry, index, dir, ctx, extraction);
		extraction.noteServiceOptions(source.options);
		sources.push(source);
	});
	const job: Omit<Job, "fingerprint"> = {
		file: ctx.file,
		displayFile: ctx.displayFile,
		dir,
		name: parsed.name ?? defaultJobName(ctx.file),
		concurrency: parsed.concurrency,
		maxCredits: parsed.max_credits ?? null,
		defaults,
		browserSession,
		targets,
		sources,
		output: {
			formats: [...new Set(parsed.output.formats)],
			content: parsed.output.content,
			...(parsed.output.csv_bom ? { csvBom: true } : {}),
			...(parsed.output.csv_max_cell !== DEFAULT_CSV_MAX_CELL ? { csvMaxCell: parsed.output.csv_max_cell } : {}),
		},
		retry: {
			attempts: parsed.retry.attempts,
			backoffMs: parsed.retry.backoff_ms,
			maxBackoffMs: parsed.retry.max_backoff_ms,
		},
		onBadRow: parsed.on_bad_row,
		taskTimeoutMs: parsed.task_timeout_ms,
		outageTimeoutMs: parseDuration(parsed.outage_timeout) ?? 600_000,
		pageTimeoutMs:
			parsed.page_timeout === undefined
				? DEFAULT_PAGE_TIMEOUT_MS
				: (parseDuration(parsed.page_timeout) ?? DEFAULT_PAGE_TIMEOUT_MS),
		maxBodyBytes: Math.round(parsed.max_body_mb * 1024 * 1024),
		freshnessMs: parseDuration(parsed.freshness) ?? 0,
		notify: parsed.notify ?? null,
		blockSignatures: normalizeBlockSignatures(parsed.block_signatures),
		breaker:
			parsed.breaker === false
				? null
				: {
						window: parsed.breaker.window,
						trip: parsed.breaker.trip,
						coolDownMs: parseDuration(parsed.breaker.cool_down) ?? 0,
						by: parsed.breaker.by,
					},
		...crawlOptions(parsed),
		...monitoringOptions(parsed, dir),
		...(discovery.length > 0 ? { discovery } : {}),
		...(parsed.shard_by === "url" ? { shardBy: "url" as const } : {}),
	};
	const extractionSummary = extraction.finish();
	if (extractionSummary) job.extraction = extractionSummary;
	const contract = contractOf(extraction.fieldRules, parsed.extract_checks);
	if (contract) job.contract = contract;
	return { ...job, fingerprint: jobFingerprint(job) };
}

/**
 * The parts of an invalid job that are valid on their own — `defaults`, inline targets and
 * sources — so their sources can still be streamed and every problem reported in one round.
 */
export function normalizePartialJob(data: Record<string, unknown>, ctx: NormalizeContext): Job {
	const dir = resolve(ctx.file, "..");
	const split = splitDefaults(data.defaults);
	const parsedDefaults = scrapeOptionsSchema.safeParse(split.defaults);
	const defaults: ScrapeOptions = parsedDefaults.success ? parsedDefaults.data : {};
	const parsedSession = browserSessionSchema.safeParse(data.browser_session);
	const browserSession = mergeBrowserSessions(parsedSession.success ? parsedSession.data : null, split.session);
	const targets: Target[] = [];
	(Array.isArray(data.targets) ? data.targets : []).forEach((raw: unknown, index) => {
		const parsed = targetSchema.safeParse(raw);
		if (!parsed.success) return;
		const at = ctx.locate(["targets", index]);
		targets.push(
			normalizeTarget(parsed.data, defaults, { file: ctx.displayFile, line: at.line, col: at.col }, browserSession),
		);
	});
	const sources: SourceSpec[] = [];
	(Array.isArray(data.sources) ? data.sources : []).forEach((raw: unknown, index) => {
		const parsed = sourceSchema.safeParse(raw);
		if (parsed.success && !isDiscoveryEntry(parsed.data)) sources.push(normalizeSource(parsed.data, index, dir, ctx));
	});
	const job: Omit<Job, "fingerprint"> = {
		file: ctx.file,
		displayFile: ctx.displayFile,
		dir,
		name: defaultJobName(ctx.file),
		concurrency: "auto",
		maxCredits: null,
		defaults,
		browserSession,
		targets,
		sources,
		output: { formats: ["jsonl", "csv"], content: "files" },
		retry: { attempts: 1, backoffMs: 1, maxBackoffMs: 1 },
		onBadRow: data.on_bad_row === "skip" ? "skip" : "fail",
		taskTimeoutMs: 1,
		outageTimeoutMs: 600_000,
		pageTimeoutMs: DEFAULT_PAGE_TIMEOUT_MS,
		maxBodyBytes: 50 * 1024 * 1024,
		freshnessMs: 0,
		notify: null,
	};
	return { ...job, fingerprint: "" };
}
