import { randomBytes } from "node:crypto";
import { readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
	checkOptions,
	createUrlKeys,
	creditCostRange,
	maskUrlCredentials,
	type OptionKinds,
	processState,
	REQUESTED_MODES,
	type RequestedMode,
	type ScrapeParams,
} from "../common/index.js";
import { createCaseFoldedIdSet } from "./id-set.js";
import { type JobProblem, JobValidationError, SourceScanStoppedError } from "./problems.js";
import {
	createWitnessRecorder,
	fileIdentity,
	type ScanWitness,
	type WitnessRecorder,
	witnessedKeys,
} from "./scan-witness.js";
import { isOwnShard } from "./shard.js";
import { createHostTally } from "./shard-balance.js";
import { readSourceRows, type SourceRow } from "./sources.js";
import { createListedTargetKey, createTargetKey, identityOptionsJson, type TargetKey } from "./target-id.js";
import type { Job, SourceSpec, Target, TargetCounts, TargetOrigin } from "./types.js";

/** Row keys a scan's duplicate check holds in memory (~4 MB) before older ones spill to sorted files. */
const SCAN_KEYS_IN_MEMORY = 262_144;

/** Options of `streamTargets`. */
export interface StreamTargetsOptions {
	/**
	 * Receives duplicates and skipped rows (warnings) and, just before the stream throws, the
	 * error that stopped it. Per file, the first `problemsPerFile` are passed, then one summary.
	 */
	onProblem?: (problem: JobProblem) => void;
	/** @default 100 */
	problemsPerFile?: number;
	/** Filled in while streaming (distinct targets, duplicates, skipped rows, modes, credit range). */
	counts?: TargetCounts;
	/**
	 * Where the keys of the rows seen so far are kept, to drop duplicates: by default keys that spill
	 * to a temporary folder past SCAN_KEYS_IN_MEMORY; a run's feed passes its own, spilling to its folder.
	 */
	seenKeys?: SeenKeys;
	/**
	 * What the validation pass saw of these very files (`counts.witness` of `countTargets`): the
	 * duplicate check then holds only the keys it found repeated, and a source file that changed since
	 * ends the stream with `JobValidationError`. Takes the place of `seenKeys`.
	 */
	witness?: ScanWitness;
}

/** The duplicate check's set of 64-bit target keys. */
export interface SeenKeys {
	/** Adds the key; `false` when it was there already. */
	add(high: number, low: number): boolean;
}

/** @default 100 problems shown per file; a million bad rows must not become a million lines. */
export const DEFAULT_PROBLEMS_PER_FILE = 100;

export function createEmptyCounts(): TargetCounts {
	return {
		targets: 0,
		duplicates: 0,
		skippedRows: 0,
		deselected: 0,
		creditRange: { min: 0, max: 0 },
		dearest: 0,
		byMode: Object.fromEntries(REQUESTED_MODES.map((mode) => [mode, 0])) as Record<RequestedMode, number>,
		creditRangeByMode: Object.fromEntries(REQUESTED_MODES.map((mode) => [mode, { min: 0, max: 0 }])) as Record<
			RequestedMode,
			{ min: number; max: number }
		>,
	};
}

interface ScanOptions {
	report: (problem: JobProblem) => void;
	/** Throw at the first error (a run), or note it and go on (validation, which wants them all). */
	stopOnError: boolean;
	problemsPerFile: number;
	counts: TargetCounts;
	/** False when only the counts are wanted: rows are checked and counted, but no target is built. */
	materialize: boolean;
	seenKeys?: SeenKeys;
	witness?: ScanWitness;
	/** Notes what the witness needs (a counting pass). */
	recorder?: WitnessRecorder;
	/** Whether a duplicate's warning names the row it repeats (a map of the first rows is kept for it). */
	namesFirstRows: boolean;
	/** Stops the scan between batches of rows with `SourceScanStoppedError`: a 10M-row file takes ~30 s. */
	signal?: AbortSignal;
}

const NO_COST = { min: 0, max: 0 } as const;

function countTarget(
	counts: TargetCounts,
	params: Pick<ScrapeParams, "mode">,
	cost: { min: number; max: number },
	browserSession: boolean,
): void {
	const mode: RequestedMode = browserSession ? "browser_session" : (params.mode ?? "auto");
	counts.targets++;
	counts.byMode[mode]++;
	counts.creditRange.min += cost.min;
	counts.creditRange.max += cost.max;
	if (cost.max > counts.dearest) counts.dearest = cost.max;
	counts.creditRangeByMode[mode].min += cost.min;
	counts.creditRangeByMode[mode].max += cost.max;
}

/** Limits the problems passed on per file, then sums up the rest in one line. */
function createFileReporter(report: (p: JobProblem) => void, limit: number) {
	let shown = 0;
	let hidden = 0;
	let firstHidden: JobProblem | undefined;
	return {
		add(problem: JobProblem) {
			if (shown < limit) {
				shown++;
				report(problem);
				return;
			}
			hidden++;
			firstHidden ??= problem;
		},
		finish() {
			if (!firstHidden) return;
			report({
				...firstHidden,
				message: `${hidden} more ${hidden === 1 ? "problem" : "problems"} in this file not shown (the first is here: ${firstHidden.message})`,
			});
		},
	};
}

/**
 * The scan behind `streamTargets`, `countTargets` and `loadJob`: inline targets, then each source
 * in order, lazily; duplicates (same URL and effective options) dropped with a warning; bad rows
 * per `job.onBadRow`.
 */
async function* scanTargets(job: Job, options: ScanOptions): AsyncGenerator<Target[]> {
	// Bounded whatever the row count: past SCAN_KEYS_IN_MEMORY keys, older ones go to sorted files in a
	// temporary folder (removed when the scan ends). A set in memory took 16 MB at a million rows, and
	// its growth by doubling left the allocator holding large blocks for the rest of the run.
	const given = options.witness ? witnessedKeys(options.witness) : options.seenKeys;
	if (!given) removeOrphanedKeyFolders(tmpdir());
	const ownKeys = given
		? null
		: createUrlKeys({
				dir: join(tmpdir(), `${KEY_FOLDER_PREFIX}${process.pid}-${randomBytes(4).toString("hex")}`),
				inMemory: SCAN_KEYS_IN_MEMORY,
			});
	const keys: SeenKeys = given ?? { add: (high, low) => ownKeys!.see(high, low) };
	const { recorder } = options;
	const seen: SeenKeys = recorder
		? {
				add(high, low) {
					if (keys.add(high, low)) return true;
					recorder.repeated(high, low);
					return false;
				},
			}
		: keys;
	try {
		yield* scanWith(job, options, seen);
	} finally {
		ownKeys?.close();
	}
}

/** The scan's temporary key folders: `scrapejob-keys-<pid>-<random>` in the system's temporary folder. */
const KEY_FOLDER_PREFIX = "scrapejob-keys-";
/**
 * A folder untouched this long whose pid is not running is an orphan. The age is the guard for a /tmp
 * shared with processes this one cannot see (another container's pid namespace): a live scan writes
 * its folder at every spill, every 262,144 rows.
 */
const ORPHAN_AFTER_MS = 60 * 60 * 1000;
let orphansSwept = false;

/**
 * Remove the key folders of scans whose process died before its scan ended (SIGKILL, the OOM killer:
 * ~8 bytes a spilled row, left in /tmp by every such death). Once per process; a folder whose pid is
 * running, that changed within the last hour, or that belongs to another user is left alone.
 */
function removeOrphanedKeyFolders(dir: string): void {
	if (orphansSwept) return;
	orphansSwept = true;
	let names: string[];
	try {
		names = readdirSync(dir);
	} catch {
		return;
	}
	for (const name of names) {
		if (!name.startsWith(KEY_FOLDER_PREFIX)) continue;
		const pid = Number(name.slice(KEY_FOLDER_PREFIX.length, name.indexOf("-", KEY_FOLDER_PREFIX.length)));
		if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue;
		if (processState(pid).state === "running") continue;
		const folder = join(dir, name);
		try {
			if (Date.now() - statSync(folder).mtimeMs < ORPHAN_AFTER_MS) continue;
			rmSync(folder, { recursive: true, force: true });
		} catch {
			// Someone else's, or already gone: not ours to insist on.
		}
	}
}

type DuplicateMessage = (url: string, key: TargetKey) => string;

/**
 * Where the first rows were, so a duplicate's warning names the row it repeats. Only the first
 * FIRST_ROWS_KEPT distinct targets are remembered (the check itself spills to disk; this must not grow
 * with the list): a later one's duplicate names its target id instead.
 */
interface FirstRows {
	note(key: TargetKey, url: string, at: { readonly file: string; readonly line: number }): void;
	get(key: TargetKey): { readonly file: string; readonly line: number; readonly url: string } | undefined;
}

const FIRST_ROWS_KEPT = 16_384;

/** For a scan whose warnings go nowhere (a run's feed): nothing noted. */
const NO_FIRST_ROWS: FirstRows = { note: () => undefined, get: () => undefined };

function createFirstRows(): FirstRows {
	const rows = new Map<string, { file: string; line: number; url: string }>();
	return {
		note(key, url, at) {
			if (rows.size < FIRST_ROWS_KEPT) rows.set(key.id, { file: at.file, line: at.line, url });
		},
		get: (key) => rows.get(key.id),
	};
}

/** The scan itself, with its duplicate check. */
async function* scanWith(job: Job, options: ScanOptions, seen: SeenKeys): AsyncGenerator<Target[]> {
	const { counts } = options;
	const firstRows = options.namesFirstRows ? createFirstRows() : NO_FIRST_ROWS;
	const duplicateMessage: DuplicateMessage = (url, key) => {
		const first = firstRows.get(key);
		// The first row's spelling when it differs: `HTTP://X/p` repeats `https://x/p#top`.
		// Rows are quoted as written, so a `user:pass@` in either is masked: warnings reach logs and --json.
		const where = first
			? ` at ${first.file}:${first.line}${first.url === url ? "" : ` (${maskUrlCredentials(first.url)})`}`
			: "";
		return `duplicate target ${maskUrlCredentials(url)}: the same page and options as target ${key.id}${where}; it runs once`;
	};

	const inline = createFileReporter(options.report, options.problemsPerFile);
	const inlineTargets: Target[] = [];
	for (const target of job.targets) {
		const identity = target.browserSession
			? { ...target.params, browser_session: target.browserSession }
			: target.params;
		const key = createListedTargetKey(target.url, identityOptionsJson(identity));
		if (!seen.add(key.high, key.low)) {
			counts.duplicates++;
			inline.add({ ...target.origin, severity: "warning", message: duplicateMessage(target.url, key) });
			continue;
		}
		firstRows.note(key, target.url, target.origin);
		// Another shard's target: seen (so duplicates are still found) but neither counted nor run here.
		if (job.shard) {
			counts.hosts?.add(target.url);
			if (!isOwnShard(job, target.url)) continue;
		}
		if (job.select && !job.select(target)) {
			counts.deselected++;
			continue;
		}
		// A browser session is paid from the browser credits, not the scraper's: no scraper estimate.
		countTarget(
			counts,
			target.params,
			target.browserSession ? NO_COST : creditCostRange(target.params),
			target.browserSession !== undefined,
		);
		inlineTargets.push(target);
	}
	inline.finish();
	// Ids from a source's `id_column` must not repeat each other or an inline target's.
	const ids = createCaseFoldedIdSet();
	for (const target of inlineTargets) ids.add(target.id);
	if (inlineTargets.length > 0) yield inlineTargets;

	// Batches, not single targets: every async hop costs a promise, and there are a million rows.
	let rowsRead = 0;
	for (const source of job.sources) {
		const scanner = createSourceScanner(job, source, options, seen, duplicateMessage, ids, firstRows);
		const validated = options.witness?.files.get(source.path);
		options.recorder?.opening(source);
		for await (const rows of readSourceRows(source)) {
			if (options.signal?.aborted) throw new SourceScanStoppedError(rowsRead);
			// Looked at after the rows were read: equal, they are the bytes the validation pass read.
			if (options.witness && fileIdentity(source.path) !== validated) changedSince(source, rows[0], options);
			rowsRead += rows.length;
			const targets: Target[] = [];
			try {
				for (const row of rows) {
					const target = scanner.take(row);
					if (target) targets.push(target);
				}
			} catch (error) {
				// The rows before the bad one are still handed over, in order, before the error.
				if (targets.length > 0) yield targets;
				throw error;
			}
			if (targets.length > 0) yield targets;
		}
		scanner.finish();
		options.recorder?.ended(source);
	}
}

/** A source file that is no longer the one validated: the stream ends before its rows. */
function changedSince(source: SourceSpec, next: SourceRow | undefined, options: ScanOptions): never {
	const at =
		next === undefined
			? source.origin
			: next.kind === "fatal"
				? next.at
				: { file: source.displayPath, line: next.line, col: next.col };
	const problem: JobProblem = {
		...at,
		severity: "error",
		message: `source ${JSON.stringify(source.displayPath)} changed after the run validated it: its rows from here on are not run (they were not validated); run the job again to validate the file as it is now`,
	};
	options.report(problem);
	throw new JobValidationError([problem]);
}

/**
 * The per-row work for one source, synchronous: a source's rows share their options, so params,
 * identity and cost are worked out once, not per row.
 */
function createSourceScanner(
	job: Job,
	source: SourceSpec,
	options: ScanOptions,
	seen: SeenKeys,
	duplicateMessage: DuplicateMessage,
	ids: ReturnType<typeof createCaseFoldedIdSet>,
	firstRows: FirstRows,
) {
	const { counts } = options;
	const base: Omit<ScrapeParams, "url"> = { ...job.defaults, ...source.options };
	const session = job.browserSession ?? undefined;
	const optionsJson = identityOptionsJson(session ? { ...base, browser_session: session } : base);
	const cost = session ? NO_COST : creditCostRange(base);
	const reporter = createFileReporter(options.report, options.problemsPerFile);
	const file = source.displayPath;
	let rows = 0;
	let ended = false;
	/** Report an error: under a run it ends the stream; under validation it is noted and reading goes on. */
	const fail = (problem: JobProblem, stop: boolean) => {
		if (!stop && !options.stopOnError) {
			reporter.add(problem);
			return;
		}
		ended = true;
		reporter.finish();
		options.report(problem);
		if (options.stopOnError) throw new JobValidationError([problem]);
	};
	return {
		take(row: SourceRow): Target | undefined {
			if (row.kind === "fatal") {
				fail({ ...row.at, severity: "error", message: row.message }, true);
				return undefined;
			}
			rows++;
			if (row.kind === "bad") {
				if (job.onBadRow === "skip") {
					counts.skippedRows++;
					reporter.add({ file, line: row.line, col: row.col, severity: "warning", message: `skipped: ${row.message}` });
				} else {
					fail({ file, line: row.line, col: row.col, severity: "error", message: row.message }, false);
				}
				return undefined;
			}
			const key = createListedTargetKey(row.url, optionsJson);
			if (!seen.add(key.high, key.low)) {
				counts.duplicates++;
				reporter.add({
					file,
					line: row.line,
					col: row.col,
					severity: "warning",
					message: duplicateMessage(row.url, key),
				});
				return undefined;
			}
			firstRows.note(key, row.url, { file, line: row.line });
			if (row.id !== undefined && !ids.add(row.id)) {
				const problem = {
					file,
					line: row.line,
					col: row.col,
					message: `duplicate id ${JSON.stringify(row.id)} (ids are unique, ignoring case, since they name files)`,
				};
				if (job.onBadRow === "skip") {
					counts.skippedRows++;
					reporter.add({ ...problem, severity: "warning", message: `skipped: ${problem.message}` });
				} else fail({ ...problem, severity: "error" }, false);
				return undefined;
			}
			if (job.shard) {
				counts.hosts?.add(row.url);
				if (!isOwnShard(job, row.url)) return undefined;
			}
			const id = row.id ?? (job.literalTargetIds ? createTargetKey(row.url, optionsJson).id : key.id);
			// A selection (freshness, --retry-failed) reads the id alone: no target is built for a row it
			// leaves out, and counting a million rows builds none at all.
			if (job.select && !job.select({ id })) {
				counts.deselected++;
				return undefined;
			}
			if (!options.materialize) {
				countTarget(counts, base, cost, session !== undefined);
				return undefined;
			}
			// `url` first: a spread followed by a new property moves every target's params to a slower object
			// layout on its way (~5,000 instructions a row more; `base` never holds a `url`).
			const params: ScrapeParams = { url: row.url, ...base };
			const origin: TargetOrigin = { file, line: row.line, col: row.col };
			const target: Target = { id, url: row.url, params, origin };
			if (session) target.browserSession = session;
			if (source.extract) target.extract = source.extract;
			if (row.carried) target.carried = row.carried;
			countTarget(counts, params, cost, session !== undefined);
			return target;
		},
		finish() {
			if (ended) return;
			reporter.finish();
			if (rows === 0) {
				options.report({
					...source.origin,
					severity: "warning",
					message: `source ${JSON.stringify(source.displayPath)} lists no URLs`,
				});
			}
		},
	};
}

/** Each option of `streamTargets` and the kind of value it takes. */
const STREAM_TARGETS_OPTIONS = {
	onProblem: "function",
	problemsPerFile: "number",
	counts: "object",
	seenKeys: "object",
	witness: "object",
} as const satisfies OptionKinds<StreamTargetsOptions>;

/**
 * Every target of the job, in order — inline targets, then each source's rows — pulled lazily
 * (a source is read only as fast as the consumer pulls), with duplicates dropped and bad rows
 * skipped per `job.onBadRow`, both reported through `onProblem`. A source that cannot be read,
 * or a bad row under `on_bad_row: fail` (the file changed since it was validated), throws
 * `JobValidationError`.
 */
export async function* streamTargets(job: Job, options: StreamTargetsOptions = {}): AsyncGenerator<Target> {
	checkOptions("streamTargets", options, STREAM_TARGETS_OPTIONS);
	for await (const batch of streamTargetBatches(job, options)) yield* batch;
}

/**
 * `streamTargets` a batch at a time (a read chunk's worth of rows, in order): the runner's feed loop
 * uses it so that a million targets cost a few thousand async steps, not a million.
 */
export function streamTargetBatches(job: Job, options: StreamTargetsOptions = {}): AsyncIterable<Target[]> {
	return scanTargets(job, {
		report: options.onProblem ?? (() => undefined),
		stopOnError: true,
		problemsPerFile: options.problemsPerFile ?? DEFAULT_PROBLEMS_PER_FILE,
		counts: options.counts ?? createEmptyCounts(),
		materialize: true,
		namesFirstRows: options.onProblem !== undefined,
		...(options.seenKeys === undefined ? {} : { seenKeys: options.seenKeys }),
		...(options.witness === undefined ? {} : { witness: options.witness }),
	});
}

/** Stream the whole job collecting every problem instead of stopping at the first. */
export async function scanJob(
	job: Job,
	options: { problemsPerFile?: number; signal?: AbortSignal } = {},
): Promise<{ counts: TargetCounts; problems: JobProblem[] }> {
	const problems: JobProblem[] = [];
	const counts = createEmptyCounts();
	if (job.shard && job.shardBy !== "url") counts.hosts = createHostTally();
	const recorder = createWitnessRecorder();
	const targets = scanTargets(job, {
		report: (problem) => problems.push(problem),
		stopOnError: false,
		problemsPerFile: options.problemsPerFile ?? DEFAULT_PROBLEMS_PER_FILE,
		counts,
		materialize: false,
		namesFirstRows: true,
		recorder,
		...(options.signal ? { signal: options.signal } : {}),
	});
	for await (const _batch of targets) {
		// Counting happens inside the scan; the targets themselves are not kept.
	}
	counts.witness = recorder.finish();
	return { counts, problems };
}

/**
 * Count what a run would fetch by streaming every source (nothing is held): distinct targets,
 * duplicates, skipped rows, targets per mode and the credit range if all succeed once.
 * Throws `JobValidationError` with every problem if a source has errors, `SourceScanStoppedError` when
 * `signal` aborts first.
 */
export async function countTargets(job: Job, signal?: AbortSignal): Promise<TargetCounts> {
	const { counts, problems } = await scanJob(job, signal ? { signal } : {});
	if (problems.some((problem) => problem.severity === "error")) throw new JobValidationError(problems);
	return counts;
}
