import {
	closeSync,
	existsSync,
	openSync,
	readdirSync,
	readFileSync,
	readSync,
	renameSync,
	rmdirSync,
	rmSync,
} from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import {
	cliCommand,
	jsonlLines,
	MIN_CSV_MAX_CELL,
	makeDirectory,
	parseJsonLine,
	UsageError,
	writeFileAtomic,
} from "../../common/index.js";
import { journalledCrawlCredits } from "../../crawl/index.js";
import { createFillStats, type FillStats } from "../../extract/index.js";
import { idKey } from "../../history/index.js";
import { createTargetKeySet } from "../../job/index.js";
import {
	type BreakerReport,
	createCsvSink,
	isResultRecord,
	openAppendFile,
	type ResultRecord,
	RUN_FILES,
	type RunSummary,
	readCsvHeader,
	readSandboxRun,
	UTF8_BOM,
	writeSummary,
} from "../../output/index.js";
import { journalledDiscoveryCredits } from "../feed/discovery-sources.js";
import { liveLockHolder } from "../locks/run-lock.js";
import { budgetToFinish } from "../records/budget-to-finish.js";
import { isRunComplete } from "../records/find-runs.js";
import { buildSummary, createRunStatistics } from "../records/run-statistics.js";
import { readJournalTasks } from "../target/journal.js";
import { shardRunFolders } from "./newest-shard-runs.js";

/** What `merge` reads of each shard folder's run.json. */
interface ShardMeta {
	readonly dir: string;
	readonly run_id: string;
	readonly job_name: string;
	readonly job_file?: string;
	/** The `--config` file the shard's latest session read its keys from. */
	readonly config_file?: string;
	/** Absent in folders of older versions (which cut at the default). */
	readonly csv_max_cell?: number;
	readonly targets_digest: string;
	readonly total: number;
	readonly shard: { readonly index: number; readonly count: number };
	/** The demo site of a `--sandbox` run (its sandbox.json); null for a run against the service. */
	readonly sandbox: string | null;
}

export interface MergeResult {
	readonly outDir: string;
	readonly summary: RunSummary & { shards: MergedShards };
	/** What finishes the layout, as it must be pasted: a resume per incomplete shard, a run per missing one. */
	readonly finishCommands: readonly string[];
}

export interface MergedShards {
	readonly count: number;
	readonly merged: number[];
	/** Shards no folder was given for. */
	readonly missing: number[];
	/** Shards whose run did not finish (their summary says so, or there is none), or was handed links after it ended. */
	readonly incomplete: number[];
	/** Of the incomplete shards, those whose run is still going on (its shard's lock is held by it): merge again once they end. */
	readonly running: number[];
}

/** The file `merge` writes instead of run.json: a merged folder is not a run that `--resume` could continue. */
export const MERGE_FILE = "merge.json";

/**
 * A `run` of shard `index` of the layout `meta` belongs to: the job file and results root from the
 * folder itself (`<out>/<job>/<run id>`), so it works as printed from the directory merge ran in.
 */
function shardRunCommand(meta: ShardMeta, index: number, tail: readonly string[], cwd: string): string {
	const out = pathFromHere(dirname(dirname(meta.dir)), cwd);
	const jobFile = meta.job_file ? pathFromHere(meta.job_file, cwd) : "JOB.yaml";
	const words = ["run", jobFile, "--shard", `${index}/${meta.shard.count}`];
	if (out !== "output") words.push("--out", out);
	// A sandbox job's targets name the demo site that only --sandbox starts: without it the line fails.
	if (meta.sandbox !== null) words.push("--sandbox");
	// Keys read from a --config file: without it the line would stop at "no API key".
	else if (meta.config_file) words.push("--config", pathFromHere(meta.config_file, cwd));
	return cliCommand([...words, ...tail]);
}

/**
 * A shard stopped at its budget resumes only with a larger one (a plain `--resume` keeps the budget and
 * stops again at once): the `--max-credits` its own hint printed.
 */
function budgetFlag(summary: RunSummary | null): string[] {
	if (summary?.stopped_reason !== "budget_exhausted") return [];
	return ["--max-credits", String(budgetToFinish(summary, summary.credits.dearest_target ?? 0))];
}

const repairCommand = (meta: ShardMeta, cwd: string) =>
	shardRunCommand(meta, meta.shard.index, ["--resume", meta.run_id, "--repair"], cwd);

/** A path as short as it is clear: relative below the working directory `cwd`, else absolute. */
function pathFromHere(path: string, cwd: string): string {
	const fromHere = relative(cwd, path);
	return fromHere === "" ? "." : fromHere.startsWith("..") || isAbsolute(fromHere) ? resolve(path) : fromHere;
}

function readMeta(dir: string): ShardMeta {
	let meta: Partial<ShardMeta>;
	try {
		meta = JSON.parse(readFileSync(join(dir, RUN_FILES.meta), "utf8")) as Partial<ShardMeta>;
	} catch {
		throw new UsageError(`${dir} is not a run folder: cannot read ${RUN_FILES.meta}`);
	}
	const shard = meta.shard;
	if (!shard || !Number.isInteger(shard.index) || !Number.isInteger(shard.count)) {
		throw new UsageError(`${dir} is not a shard's run folder (made without --shard): nothing to merge it with`);
	}
	return { ...(meta as ShardMeta), dir, sandbox: readSandboxRun(dir) };
}

/** Where a shard's run fetched, as a refusal names it. */
function serviceOf(meta: ShardMeta): string {
	return `shard ${meta.shard.index} ${meta.sandbox === null ? "ran against the service" : `ran in the sandbox with its demo site at ${meta.sandbox}`}`;
}

/** The shard folders must be of one job (same name and targets) and one shard count, each shard at most once. */
function checkShards(metas: readonly ShardMeta[]): void {
	const [first] = metas;
	if (!first) throw new UsageError("merge needs at least one shard run folder");
	const byIndex = new Map<number, string>();
	for (const meta of metas) {
		if (meta.job_name !== first.job_name) {
			throw new UsageError(
				`${meta.dir} is a run of job ${meta.job_name}, ${first.dir} of job ${first.job_name}: refusing to merge different jobs`,
			);
		}
		if (meta.targets_digest !== first.targets_digest) {
			// Sandbox shards' targets name their demo site: a different address is the reason, not the job.
			if (meta.sandbox !== first.sandbox)
				throw new UsageError(
					`${meta.dir} and ${first.dir} ran different targets: ${serviceOf(meta)}, ${serviceOf(first)}, and a sandbox job's target URLs name its demo site's address. ${meta.sandbox !== null && first.sandbox !== null ? "Run every shard again with --sandbox and the same --out (shards started side by side share the demo site's port)" : "Run every shard again the same way: all with --sandbox, or all against the service"}, then merge those folders`,
				);
			throw new UsageError(
				`${meta.dir} and ${first.dir} ran different targets (the job or its sources changed): refusing to merge them`,
			);
		}
		if (meta.shard.count !== first.shard.count) {
			throw new UsageError(
				`${meta.dir} is shard ${meta.shard.index} of ${meta.shard.count}, ${first.dir} of ${first.shard.count}: refusing to merge different shard counts`,
			);
		}
		const other = byIndex.get(meta.shard.index);
		if (other)
			throw new UsageError(
				`${meta.dir} and ${other} are both shard ${meta.shard.index} of ${meta.shard.count}: overlapping shards (runs of several nights? give merge the job folder, ${dirname(meta.dir)}, for the newest run of each shard)`,
			);
		byIndex.set(meta.shard.index, meta.dir);
	}
}

/** Whether `dir` holds a merge of job `jobName` (its merge.json says so). */
function isMergeOf(dir: string, jobName: string): boolean {
	try {
		const merge = JSON.parse(readFileSync(join(dir, MERGE_FILE), "utf8")) as { job_name?: unknown };
		return merge.job_name === jobName;
	} catch {
		return false;
	}
}

/**
 * `scrapejob merge`: one results.jsonl, results.csv and summary.json from the run folders of a sharded
 * job's shards. Each target exactly once (verified: an id seen in two shards is an error, not a
 * duplicate row), credits summed through the same statistics as a run's, incomplete and missing shards
 * named in the summary. `cwd` is where relative folders are resolved and what the printed commands
 * (`finishCommands`, a repair's) are relative to: the caller's working directory.
 */
export async function mergeShardRuns(
	dirs: readonly string[],
	outDir: string,
	options: { readonly cwd: string },
): Promise<MergeResult> {
	const { cwd } = options;
	const metas = shardRunFolders(dirs.map((dir) => resolve(cwd, dir)))
		.map(readMeta)
		.sort((a, b) => a.shard.index - b.shard.index);
	checkShards(metas);
	const finalDir = resolve(cwd, outDir);
	// An incomplete merge names the shards to run, and then is made again: a folder an earlier merge of
	// this job wrote is replaced (once the new one is complete), anything else is not touched.
	const replacing = existsSync(finalDir) && readdirSync(finalDir).length > 0;
	if (replacing && !isMergeOf(finalDir, metas[0]!.job_name))
		throw new UsageError(
			`${outDir} is not empty: merge writes into a new or empty folder, or one an earlier merge of job ${metas[0]!.job_name} wrote`,
		);
	// Everything is written beside --out first and renamed into place only when every check passed: a
	// refusal found while reading (an overlap, a damaged line) leaves --out as it was.
	const workDir = `${finalDir}.merging-${process.pid}`;
	rmSync(workDir, { recursive: true, force: true });
	makeDirectory(workDir);
	try {
		const { summary: result, shardSummaries } = await mergeInto(metas, workDir, cwd);
		// rename(2) replaces an empty directory: --out given as an empty folder is fine.
		if (replacing) {
			const earlier = `${finalDir}.replaced-${process.pid}`;
			rmSync(earlier, { recursive: true, force: true });
			renameSync(finalDir, earlier);
			renameSync(workDir, finalDir);
			rmSync(earlier, { recursive: true, force: true });
		} else {
			if (existsSync(finalDir)) rmdirSync(finalDir);
			renameSync(workDir, finalDir);
		}
		const { incomplete, missing } = result.shards;
		const finishCommands = [
			...metas
				.map((meta, index) => ({ meta, summary: shardSummaries[index] ?? null }))
				// A shard still running is not resumed (its lock refuses that): it is waited for.
				.filter(
					({ meta }) => incomplete.includes(meta.shard.index) && !result.shards.running.includes(meta.shard.index),
				)
				.map(({ meta, summary }) =>
					shardRunCommand(meta, meta.shard.index, ["--resume", meta.run_id, ...budgetFlag(summary)], cwd),
				),
			...missing.map((index) => shardRunCommand(metas[0]!, index, [], cwd)),
		];
		return { outDir, summary: result, finishCommands };
	} finally {
		rmSync(workDir, { recursive: true, force: true });
	}
}

async function mergeInto(
	metas: readonly ShardMeta[],
	outDir: string,
	cwd: string,
): Promise<{ summary: MergeResult["summary"]; shardSummaries: ReadonlyArray<RunSummary | null> }> {
	const stats = createRunStatistics();
	// 64-bit keys of the ids written, not a Map of the ids: 16 MB at a million records, not ~100.
	const seen = createTargetKeySet();
	const jsonl = openAppendFile(join(outDir, RUN_FILES.jsonl));
	const csv = openMergedCsv(metas, outDir);
	const summaries = metas.map((meta) => readSummary(meta.dir));
	const changes: ChangeCounts = { new: 0, changed: 0, unchanged: 0 };
	// The fields and min_fill as the shards' summaries name them (one job: the same in each).
	const extract = summaries.map((summary) => summary?.extract).find((found) => found !== undefined);
	const fill = extract
		? createFillStats(
				Object.entries(extract.fields).map(([name, field]) => ({ name, required: field.required })),
				extract.min_fill,
			)
		: null;
	try {
		for (const meta of metas) {
			await copyShardRecords(meta, { metas, jsonl, csv, seen, stats, changes, fill, cwd });
		}
	} finally {
		jsonl.close();
		await csv?.close();
	}
	// Kept answers and charged attempts of targets no shard wrote a record of are spent (a stop or a kill
	// cut them off): counted as a resume of that shard counts them.
	for (const meta of metas) {
		const journalled = await readJournalTasks(join(meta.dir, RUN_FILES.journal));
		const unrecorded = (id: string) => {
			const key = idKey(id);
			return !seen.has(key[0], key[1]);
		};
		for (const [id, answer] of journalled.paid) if (unrecorded(id)) stats.chargedEarlier(answer.credits);
		for (const [id, credits] of journalled.charged) if (unrecorded(id)) stats.chargedEarlier(credits);
		// Calls that are not targets (robots.txt, sitemaps, map and search): each shard paid its own.
		stats.chargedEarlier(journalledCrawlCredits(meta.dir) + journalledDiscoveryCredits(meta.dir));
	}
	const summary = mergedSummary(metas, stats, summaries);
	// Every run tracks changes; the shards' records say what changed since the job's runs before them.
	if (summaries.some((shard) => shard?.changes !== undefined)) summary.changes = changes;
	if (fill) summary.extract = fill.summary();
	// Said as each shard said it: an array (empty when none is open) unless the breaker was off.
	if (summaries.some((shard) => shard?.breakers !== undefined)) summary.breakers = mergedBreakers(summaries);
	writeSummary(join(outDir, RUN_FILES.summary), summary);
	const first = metas[0]!;
	writeFileAtomic(
		join(outDir, MERGE_FILE),
		`${JSON.stringify({ job_name: first.job_name, targets_digest: first.targets_digest, shards: metas.map((meta) => ({ index: meta.shard.index, dir: meta.dir, run_id: meta.run_id })) }, null, 2)}\n`,
	);
	return { summary, shardSummaries: summaries };
}

/**
 * The merged CSV, with one header for all (shards of one job have the same columns, extracted fields
 * included), or null when no shard wrote one. Written from the records, as a run writes it (not copied
 * line by line: a quoted cell may hold line breaks, and a killed shard's CSV may be a row ahead of or
 * behind its JSONL).
 */
function openMergedCsv(metas: readonly ShardMeta[], outDir: string) {
	const first = metas[0]!;
	const csvPaths = metas.map((meta) => join(meta.dir, RUN_FILES.csv));
	const csvHeaders = csvPaths.map((path) => (existsSync(path) ? readCsvHeader(path) : null));
	const header = csvHeaders.find((columns) => columns !== null) ?? null;
	for (const [index, columns] of csvHeaders.entries()) {
		if (columns !== null && JSON.stringify(columns) !== JSON.stringify(header))
			throw new UsageError(`${metas[index]!.dir}'s results.csv has other columns than ${first.dir}'s`);
	}
	if (header === null) return null;
	return createCsvSink(join(outDir, RUN_FILES.csv), {
		columns: header,
		// run.json is read as hostile: a limit the job file could not have set is not used.
		...(Number.isSafeInteger(first.csv_max_cell) &&
		(first.csv_max_cell === 0 || first.csv_max_cell! >= MIN_CSV_MAX_CELL)
			? { maxCell: first.csv_max_cell }
			: {}),
		bom: csvPaths.some((path, index) => csvHeaders[index] !== null && startsWithBom(path)),
	});
}

/**
 * One shard's records into the merged files, each id once across shards (an overlap is refused). A line
 * that is not a record is allowed only as the last line (a killed shard's torn write).
 */
async function copyShardRecords(
	meta: ShardMeta,
	into: {
		readonly metas: readonly ShardMeta[];
		readonly jsonl: ReturnType<typeof openAppendFile>;
		readonly csv: ReturnType<typeof openMergedCsv>;
		readonly seen: ReturnType<typeof createTargetKeySet>;
		readonly stats: ReturnType<typeof createRunStatistics>;
		/** Each record's `change`, counted (records of a run without change tracking have none). */
		readonly changes: ChangeCounts;
		/** The extracted fields' fill over the ok records, when the shards extract. */
		readonly fill: FillStats | null;
		readonly cwd: string;
	},
): Promise<void> {
	const path = join(meta.dir, RUN_FILES.jsonl);
	let bad: number | null = null;
	let followed = false;
	for (const { text: line, number: lineNumber } of jsonlLines(path, { unterminated: true })) {
		if (bad !== null) {
			followed = true;
			break;
		}
		const record = parseJsonLine(line) as ResultRecord | null;
		if (!isResultRecord(record)) {
			bad = lineNumber;
			continue;
		}
		const key = idKey(record.id);
		if (!into.seen.add(key[0], key[1])) {
			// The key was seen: the id itself most likely (or another id with the same 64 bits: read back to tell).
			const earlier = await shardWithRecordBefore(into.metas, meta, lineNumber, record.id);
			if (earlier !== null) {
				throw new UsageError(
					`target ${record.id} has a record in shard ${earlier} and in shard ${meta.shard.index}: the shards overlap`,
				);
			}
		}
		into.jsonl.appendLine(line);
		into.csv?.write(record);
		into.stats.recordFinished(record);
		if (record.change === "new" || record.change === "changed" || record.change === "unchanged")
			into.changes[record.change] += 1;
		if (record.status === "ok") into.fill?.add(record.data);
	}
	if (bad !== null && followed) {
		throw new UsageError(
			`${path} line ${bad} is not a record (and more lines follow it): repair the shard first with ${repairCommand(meta, into.cwd)}${meta.sandbox === null ? " (and the flags that chose its service, such as --config)" : ""}`,
		);
	}
}

type ChangeCounts = NonNullable<RunSummary["changes"]>;

/**
 * The breakers the shards ended with open, one per domain (split by URL, shards share domains): the parked
 * targets and credits saved summed, the earliest opening with its reason.
 */
function mergedBreakers(summaries: ReadonlyArray<RunSummary | null>): BreakerReport[] {
	const byDomain = new Map<string, BreakerReport>();
	for (const breaker of summaries.flatMap((summary) => summary?.breakers ?? [])) {
		const seen = byDomain.get(breaker.domain);
		if (seen === undefined) {
			byDomain.set(breaker.domain, { ...breaker });
			continue;
		}
		seen.parked += breaker.parked;
		seen.credits_saved += breaker.credits_saved;
		if (Date.parse(breaker.opened_at) < Date.parse(seen.opened_at)) {
			seen.opened_at = breaker.opened_at;
			seen.reason = breaker.reason;
		}
	}
	return [...byDomain.values()];
}

/** Whether the shard's run is going on now: the live holder of its shard's lock is that very run. */
function isStillRunning(meta: ShardMeta): boolean {
	const lock = join(dirname(meta.dir), `.lock-shard-${meta.shard.index}-of-${meta.shard.count}`);
	return liveLockHolder(lock)?.run_id === meta.run_id;
}

/** The merged summary: totals over every shard the merge saw, and which shards are missing or incomplete. */
function mergedSummary(
	metas: readonly ShardMeta[],
	stats: ReturnType<typeof createRunStatistics>,
	summaries: ReadonlyArray<RunSummary | null>,
): MergeResult["summary"] {
	const first = metas[0]!;
	const count = first.shard.count;
	const present = new Set(metas.map((meta) => meta.shard.index));
	const shards: MergedShards = {
		count,
		merged: [...present],
		missing: Array.from({ length: count }, (_, index) => index + 1).filter((index) => !present.has(index)),
		incomplete: metas
			.filter((meta, index) => !isRunComplete(meta.dir, summaries[index] ?? null))
			.map((meta) => meta.shard.index),
		running: metas.filter(isStillRunning).map((meta) => meta.shard.index),
	};
	const total = metas.reduce((sum, meta) => sum + meta.total, 0);
	const complete = shards.missing.length === 0 && shards.incomplete.length === 0;
	const stopReason = complete
		? null
		: [
				shards.missing.length ? `missing shards ${shards.missing.join(", ")}` : "",
				shards.incomplete.length ? `incomplete shards ${shards.incomplete.join(", ")}` : "",
				shards.running.length ? `still running: shards ${shards.running.join(", ")}` : "",
			]
				.filter(Boolean)
				.join("; ");
	const started = Math.min(
		...summaries.map((summary) => (summary ? Date.parse(summary.started_at) : Number.POSITIVE_INFINITY)),
	);
	const finished = Math.max(0, ...summaries.map((summary) => (summary ? Date.parse(summary.finished_at) : 0)));
	const base = buildSummary(stats, {
		job: first.job_name,
		runId: `merged-${metas.map((meta) => meta.run_id).join("+")}`.slice(0, 200),
		resumed: false,
		stopReason,
		survey: { total, duplicates: 0, skippedRows: 0 },
		maxCredits: null,
		rateLimitPauses: summaries.reduce((sum, summary) => sum + (summary?.rate_limit_pauses ?? 0), 0),
		concurrency: Math.max(0, ...summaries.map((summary) => summary?.concurrency ?? 0)),
		startedMs: Number.isFinite(started) ? started : Date.now(),
		finishedMs: finished || Date.now(),
	});
	const crawl = mergedCrawl(summaries);
	// A crawl's total is not known before its end (run.json counts its seeds), nor without every shard.
	const unknownTotal = shards.missing.length > 0 || crawl !== undefined;
	// Totals over every shard the merge saw, whatever its statistics counted before (sessions, duplicates).
	return {
		...base,
		complete,
		targets: {
			...base.targets,
			duplicates: summaries.reduce((sum, s) => sum + (s?.targets.duplicates ?? 0), 0),
			skipped_rows: summaries.reduce((sum, s) => sum + (s?.targets.skipped_rows ?? 0), 0),
			total: unknownTotal ? null : total,
			remaining: unknownTotal ? null : Math.max(0, total - base.targets.done),
		},
		...(crawl ? { crawl } : {}),
		shards,
	};
}

/** The shards' crawl figures summed (each shard counts the URLs it discovered), as one crawl's summary has them. */
function mergedCrawl(summaries: ReadonlyArray<RunSummary | null>): RunSummary["crawl"] {
	const crawls = summaries.flatMap((summary) => (summary?.crawl ? [summary.crawl] : []));
	const first = crawls[0];
	if (!first) return undefined;
	const sum = (figure: (crawl: NonNullable<RunSummary["crawl"]>) => number | undefined) =>
		crawls.reduce((total, crawl) => total + (figure(crawl) ?? 0), 0);
	return {
		pages: sum((crawl) => crawl.pages),
		discovered: sum((crawl) => crawl.discovered),
		max_depth: first.max_depth,
		max_pages: first.max_pages,
		sitemap_credits: sum((crawl) => crawl.sitemap_credits),
		...(crawls.some((crawl) => crawl.robots_disallowed !== undefined)
			? { robots_disallowed: sum((crawl) => crawl.robots_disallowed) }
			: {}),
		fresh: sum((crawl) => crawl.fresh),
		refetched_for_links: sum((crawl) => crawl.refetched_for_links),
		stopped_by: crawls.some((crawl) => crawl.stopped_by === "max_pages") ? "max_pages" : null,
	};
}

function startsWithBom(path: string): boolean {
	const fd = openSync(path, "r");
	try {
		const head = Buffer.alloc(3);
		return readSync(fd, head, 0, 3, 0) === 3 && head.toString("utf8") === UTF8_BOM;
	} finally {
		closeSync(fd);
	}
}

function readSummary(dir: string): RunSummary | null {
	try {
		return JSON.parse(readFileSync(join(dir, RUN_FILES.summary), "utf8")) as RunSummary;
	} catch {
		return null;
	}
}

/**
 * The shard of the first record of `id` before line `beforeLine` of `current`'s results.jsonl, in merge
 * order; null when there is none (two ids sharing 64 bits). Read again only when the key set says seen.
 */
async function shardWithRecordBefore(
	metas: readonly ShardMeta[],
	current: ShardMeta,
	beforeLine: number,
	id: string,
): Promise<number | null> {
	const needle = `"id":${JSON.stringify(id)}`;
	for (const meta of metas) {
		for (const { text, number } of jsonlLines(join(meta.dir, RUN_FILES.jsonl), { unterminated: true })) {
			if (meta === current && number >= beforeLine) return null;
			if (!text.includes(needle)) continue;
			if ((parseJsonLine(text) as { id?: unknown } | undefined)?.id === id) return meta.shard.index;
		}
		if (meta === current) return null;
	}
	return null;
}
