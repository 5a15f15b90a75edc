import type { RequestedMode, ScrapeParams } from "../common/index.js";
import type { BlockSignatures, ExtractPlan } from "../extract/index.js";
import type { BrowserSession } from "./browser-session.js";
import type { CrawlSpec } from "./crawl-spec.js";
import type { DiscoverySpec } from "./discovery-spec.js";
import type { JobContract, JobExtraction } from "./extract-normalize.js";
import type { ScanWitness } from "./scan-witness.js";
import type { BadRowPolicy, ContentMode, OutputFormat, ScrapeOptions } from "./schema.js";
import type { ShardBy, ShardSpec } from "./shard.js";
import type { HostTally } from "./shard-balance.js";

/** Where a target was written: the job file or a source file, 1-based. */
export interface TargetOrigin {
	/** As shown in messages (relative to the working directory when below it). */
	file: string;
	line: number;
	col: number;
}

/** One fetch the runner makes, exactly once per run. */
export interface Target {
	/** Given in the job, or derived (see target-id.ts): safe as a file name, unique within the job. */
	id: string;
	url: string;
	/** Defaults merged with the source's and the target's own options; `url` included. */
	params: ScrapeParams;
	origin: TargetOrigin;
	/** Fetched in the remote browser with these settings and steps instead of the scraper (`browser_session:`). */
	browserSession?: BrowserSession;
	/** Fields extracted from its page (`extract:`), shared by every target with the same fields. */
	extract?: ExtractPlan | null;
	/** Set for a crawl's pages (seeds included): where the crawl found it. */
	crawl?: TargetCrawl;
	/** Values of the job's `carry:` columns from its CSV row (null where the source has none). */
	carried?: Readonly<Record<string, string | null>>;
}

interface SourceSpecBase {
	/** Absolute path. */
	path: string;
	/** The path as shown in messages. */
	displayPath: string;
	/** The source's own scrape options, applied over `defaults` to each of its rows. */
	options: ScrapeOptions;
	/** Where the source is declared in the job file. */
	origin: TargetOrigin;
	/** Fields extracted from its rows' pages: the job's, overridden by the source's own. */
	extract?: ExtractPlan | null;
}

export interface CsvSourceSpec extends SourceSpecBase {
	kind: "csv";
	/** Header naming the URL column. */
	column: string;
	/** @default "," */
	delimiter: string;
	/** Header of the column whose value is the target id (`id_column`). */
	idColumn?: string;
	/** The job's `carry:` columns, read from each row. */
	carry?: readonly string[];
}

export interface TextSourceSpec extends SourceSpecBase {
	kind: "text";
}

export type SourceSpec = CsvSourceSpec | TextSourceSpec;

/** The normalized job the runner gets: every default filled in, every path absolute. */
export interface Job {
	/** Absolute path of the job file. */
	file: string;
	/** The job file as shown in messages. */
	displayFile: string;
	/** Absolute directory of the job file; sources are relative to it. */
	dir: string;
	/** Output folder name; safe as a single path segment. */
	name: string;
	concurrency: "auto" | number;
	maxCredits: number | null;
	defaults: ScrapeOptions;
	/** The job's (and `defaults`') `browser_session`: every target without its own uses it. */
	browserSession: BrowserSession | null;
	/** Inline targets in file order, duplicates included (`streamTargets` drops them). */
	targets: Target[];
	sources: SourceSpec[];
	/**
	 * `csvBom`: results.csv starts with a UTF-8 BOM (`output.csv_bom`). `csvMaxCell`: longest CSV cell
	 * (`output.csv_max_cell`, 0 = no limit); absent = the default, 32767.
	 */
	output: { formats: OutputFormat[]; content: ContentMode; csvBom?: boolean; csvMaxCell?: number };
	retry: { attempts: number; backoffMs: number; maxBackoffMs: number };
	onBadRow: BadRowPolicy;
	taskTimeoutMs: number;
	/**
	 * Set by the runner for incremental runs: a target it returns false for is neither counted nor run
	 * (fresh with `freshness:`, or not failed with `--retry-failed`). It is given the target's id alone: the
	 * counting pass decides without building a target per row.
	 */
	select?: (target: Pick<Target, "id">) => boolean;
	/**
	 * Set by the runner for a crawl with `freshness:` (instead of `select`): null when the page is not
	 * fresh; else where its stored page is (`content: files` of its latest ok record), or null when
	 * none is kept, and where its redirects ended when that fetch said so. A fresh page is not paid for
	 * again, but its links are followed.
	 */
	freshPage?: (target: Target) => { readonly path: string | null; readonly landing?: string | null } | null;
	/** Set by the runner for a crawl with `--retry-failed` (instead of `select`): what to fetch again. */
	retryCrawl?: RetryCrawl;
	/**
	 * Set by the runner when it resumes a run started by a version that derived ids from URLs as written:
	 * the targets keep those ids, so `--resume` finds what that run did. Duplicates are found by the URL's
	 * identity all the same.
	 */
	literalTargetIds?: boolean;
	/** `notify:`: where the summary is POSTed when a run ends. */
	notify: {
		url: string;
		secret?: string;
		on?: Array<"completed" | "failed" | "stopped">;
		format?: "json" | "slack";
	} | null;
	/** `crawl:`: follow links from the seeds (absent: fetch the targets only). */
	crawl?: CrawlSpec;
	/** `sources:` entries `map:` / `search:`: URLs the service discovers, fetched after the other targets. */
	discovery?: DiscoverySpec[];
	/** `per_host_concurrency`: fetches in flight per target host at most. */
	perHostConcurrency?: number;
	/** `per_host_delay` in ms: least time between two fetch starts to one target host (absent: none). */
	perHostDelayMs?: number;
	/** `metrics:` as an absolute path: the Prometheus text file of the job's runs. */
	metricsFile?: string;
	/** `healthcheck:`: the ping URL (a secret: never logged). */
	healthcheck?: string;
	/** `freshness` in ms (0: fetch all). */
	freshnessMs: number;
	/** Set by `run --shard I/N`: only targets whose URL host hashes to shard `index` are counted and run. */
	shard?: ShardSpec;
	/** `shard_by: url`: shards split on the whole URL; absent, on its host. */
	shardBy?: ShardBy;
	/** `max_body_mb` in bytes: an answer body above it fails its target (`body_too_large`). */
	maxBodyBytes: number;
	/** `outage_timeout` in ms: how long an outage may last before the run stops. */
	outageTimeoutMs: number;
	/** `page_timeout` in ms: one page's parse + extract + links at most; past it, `page_too_complex`. */
	pageTimeoutMs: number;
	/** `extract:` / `carry:` / service-side extraction as a whole: CSV columns and fill checks; absent with none. */
	extraction?: JobExtraction | null;
	/**
	 * `block_signatures:` split by kind (the default set when the job sets none; absent here, the default
	 * set too): a page that matches one makes its record not useful.
	 */
	blockSignatures?: BlockSignatures;
	/**
	 * `breaker:` (docs/behaviour.md, "Breakers"): the per-domain paid-failure breaker; null with
	 * `breaker: false`. Absent (a Job built by hand): off.
	 */
	breaker?: BreakerSpec | null;
	/** The data contract (field rules, `extract_checks`): absent when the job declares none (every run is promoted). */
	contract?: JobContract;
	/**
	 * SHA-256 (hex) of what decides the fetches: defaults, inline targets, and the sources'
	 * paths (relative to the job file), columns and options — not the sources' contents (a changed
	 * row is a new target id anyway) and not run settings such as concurrency or retries.
	 */
	fingerprint: string;
}

/** What streaming the whole job found. */
export interface TargetCounts {
	/** Distinct targets (after dropping duplicates and skipped rows). */
	targets: number;
	duplicates: number;
	/** Bad source rows skipped with `on_bad_row: skip`. */
	skippedRows: number;
	/** Targets the run's selection left out (fresh ones with `freshness:`, not-failed ones with `--retry-failed`). */
	deselected: number;
	/** Credits if every target succeeds once, cheapest and dearest path (docs/service.md, "Modes and costs"). */
	creditRange: { min: number; max: number };
	/**
	 * The largest worst case of one target: what a budget stop's `--resume --max-credits` needs per target
	 * left to be sure to finish, whether or not the run reached a target that dear (cli/resume-hint.ts).
	 */
	dearest: number;
	/** Distinct targets per effective mode (`auto` when not set). */
	byMode: Record<RequestedMode, number>;
	/** `creditRange` split by mode. */
	creditRangeByMode: Record<RequestedMode, { min: number; max: number }>;
	/** A sharded job's survey: every shard's targets by host (shard-balance.ts), for the balance warning. */
	hosts?: HostTally;
	/**
	 * What the counting pass saw of the source files, for a run's feed that reads them next
	 * (scan-witness.ts); null when it cannot vouch for them (a file changed while it was read).
	 */
	witness?: ScanWitness | null;
}

/**
 * `--retry-failed` of a crawl: the seeds whose latest record failed, and the failed discovered pages at
 * their recorded depth and parent; links they newly find are followed within `max_depth`, but not to a
 * page whose latest record is ok.
 */
export interface RetryCrawl {
	/** Whether a seed's latest record failed. */
	failed(target: Target): boolean;
	/** Whether a page's latest record is ok (a link to it is not fetched again). */
	fetchedOk(id: string): boolean;
	/** The failed crawled pages, read once when the seeds have been read. */
	pages(): Iterable<{
		readonly id: string;
		readonly url: string;
		readonly depth: number;
		readonly parent: string | null;
	}>;
}

/** A crawled page's place in the crawl. */
export interface TargetCrawl {
	/** Links from a seed (0). */
	depth: number;
	/** Id of the page that linked it; null for a seed. */
	parent: string | null;
	/** Which seed options it was fetched with (see src/crawl: profiles). */
	profile: string;
	/**
	 * Fresh (`freshness:`) and not fetched: with its page stored, or at `max_depth` (its links not wanted),
	 * so it is no page record.
	 */
	fresh?: true;
	/** A fresh page's stored copy: its links are read from this file. */
	storedPage?: string;
	/** Where the stored page's redirects ended: its relative links resolve against it. */
	storedLanding?: string;
}

/** `breaker:` normalized: `trip` of a domain's last `window` charged fetches useless or failed open it. */
export interface BreakerSpec {
	readonly window: number;
	readonly trip: number;
	/** `cool_down` in ms: how long an open breaker parks targets before one probe goes. */
	readonly coolDownMs: number;
	/** What a breaker is per: the registrable domain or the host. */
	readonly by: "domain" | "host";
}
