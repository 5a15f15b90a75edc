import { readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { Logger } from "pino";
import { CLI_WORDS, makeDirectory, type OptionWords, ScrapejobError, writeFileAtomic } from "../../common/index.js";
import { journalledCrawlCredits } from "../../crawl/index.js";
import type { DomainMode } from "../../history/index.js";
import { type Job, streamTargetBatches } from "../../job/index.js";
import { createRunDir, jobOutputDir, newRunId, openAppendFile, RUN_FILES } from "../../output/index.js";
import { journalledDiscoveryCredits } from "../feed/discovery-sources.js";
import type { TargetSurvey } from "../feed/survey-targets.js";
import { warnIfTookOver } from "../locks/job-lock.js";
import { acquireRunLock, type RunLock } from "../locks/run-lock.js";
import { createIdSet, type IdSet } from "../records/compact-id-set.js";
import {
	CORRUPT_FILE,
	csvCatchUp,
	type PriorProgress,
	readPriorProgress,
	repairResults,
} from "../records/resume-state.js";
import { type CarriedFigures, carriedFrom, type TimedFigures } from "../records/run-statistics.js";
import { type BreakerChange, readJournalTasks } from "../target/journal.js";
import type { PaidAnswer } from "../target/paid-answers.js";

/** `--resume` cannot go on: the job's targets changed (without `--force`), or the run folder is unusable. */
export class ResumeError extends ScrapejobError {
	/**
	 * Nothing to do, which is no failure: the run (or the fleet run) is complete already, or no target's
	 * latest record failed (`retryFailed`). `scrapejob run` says so and exits 0; otherwise it exits 2.
	 */
	readonly nothingToDo: boolean;

	constructor(message: string, options?: { cause?: unknown; nothingToDo?: boolean }) {
		super("SCRAPEJOB_USAGE", message, options);
		this.nothingToDo = options?.nothingToDo === true;
	}
}

/**
 * How a run chose its targets (`--retry-failed`, freshness), kept in run.json so that a plain `--resume`
 * (the printed hint, `runJobFile(path, { resume: true })`) goes on with the same targets.
 */
export interface RunSelection {
	/** `--retry-failed`: `true` (across the job's runs), the run id it named, or `false`. */
	readonly retry_failed: boolean | string;
	/** The freshness the run selected with, ms (0: none). */
	readonly freshness_ms: number;
}

/** `run.json`: what a resumed session checks the job against. */
interface RunMeta {
	run_id: string;
	job_name: string;
	job_file: string;
	job_fingerprint: string;
	targets_digest: string;
	total: number;
	created_at: string;
	/** `run --shard I/N`: this folder holds shard `index` of `count` (merge checks them). */
	shard?: { index: number; count: number };
	/**
	 * The run's credit budget (job `max_credits` or `--max-credits`), kept so a plain `--resume` stays
	 * within it; `--resume --max-credits N` replaces it. Absent in folders of older versions.
	 */
	max_credits?: number | null;
	/** The job's `output.csv_max_cell`: `merge` writes the shards' CSV with the cells cut as the runs cut them. */
	csv_max_cell?: number;
	/** How the run chose its targets; absent in folders of older versions (a resume then takes the flags and the job's keys). */
	selection?: RunSelection;
	/**
	 * Records in results.jsonl of targets the job no longer has: a resume with `--force` after the job's
	 * targets changed (the run then goes on with the changed job's targets). Not counted as done.
	 */
	superseded?: number;
	/**
	 * `url_identity`: target ids derived from each URL's identity. Absent in folders of older versions,
	 * whose ids came from URLs as written: their resumes keep those.
	 */
	target_ids?: "url_identity";
	/**
	 * The `--config` file the run's latest session read the service's keys from (a path, never its
	 * values): `merge`'s commands for the folder carry it, so they reach the service as the run did.
	 */
	config_file?: string;
}

export interface OpenedRun {
	readonly runId: string;
	readonly runDir: string;
	/** What earlier sessions of this run did; null for a new run. */
	readonly prior: PriorProgress | null;
	/** Task ids journalled for targets that have no record yet: polled, not paid for again. */
	readonly resumeTasks: ReadonlyMap<string, string>;
	/** Answers an earlier session was charged for and kept before their page was read, without a record. */
	readonly resumePaid: ReadonlyMap<string, PaidAnswer>;
	/**
	 * Credits earlier sessions were charged for targets that have no record — their kept answer (`resumePaid`)
	 * and failed attempts since (journal.ts, `charged`): already in `prior.statistics` and so in the budget's
	 * spent; the target's record carries them.
	 */
	readonly resumeCharged: ReadonlyMap<string, number>;
	/** `mode: adaptive` targets without a record whose climb an earlier process took past a rung: the rung reached. */
	readonly resumeClimbs: ReadonlyMap<string, string>;
	/** `mode: adaptive` domains whose rung an earlier process changed (journalled: a killed one kept no store). */
	readonly resumeModes: readonly DomainMode[];
	readonly lock: RunLock;
	/**
	 * What the run's earlier invocations measured that no record holds (their last summary.json, or the
	 * journal's newer figures line; the breakers also from the journal); null for a new run.
	 */
	readonly carried: CarriedFigures | null;
	/** The run's credit budget: this session's `--max-credits`, else the one kept in run.json, else the job's. */
	readonly maxCredits: number | null;
	/** Records of earlier sessions whose targets the job no longer has (run.json's `superseded`); 0 for a new run. */
	readonly superseded: number;
}

/**
 * What the run's earlier invocations measured, and the breakers left open. The figures are the folder's
 * last summary.json's, or the journal's latest figures line when it is newer: a process killed before its
 * summary (SIGKILL, the OOM killer) wrote one every few seconds, so its share is lost only since its last
 * line; a folder of an older version has none, and its summary answers as before. The breakers come from
 * the journal's breaker lines, written as each breaker changed: a killed process still hands them on, and
 * a breaker a later resume closed is not re-opened from an older summary. summary.json answers only for
 * domains the journal does not name (a folder of an older version).
 */
function readCarried(
	runDir: string,
	meta: RunMeta,
	fingerprint: string,
	journalled: { readonly breakers: ReadonlyMap<string, BreakerChange>; readonly figures: TimedFigures | null },
): CarriedFigures {
	let previous: unknown = null;
	try {
		previous = JSON.parse(readFileSync(join(runDir, RUN_FILES.summary), "utf8"));
	} catch {
		// A session killed before its end wrote no summary: the journal's figures line stands for it.
	}
	const created = Date.parse(meta.created_at);
	const carried = carriedFrom(previous, Number.isFinite(created) ? created : null, journalled.figures);
	// Breakers judged the fetches of the job as it was then: a job changed since (another mode or proxy,
	// resumed with --force) gets its fix tried at once.
	const summarized = meta.job_fingerprint === fingerprint ? carried.openBreakers : [];
	const openBreakers = summarized.filter((breaker) => !journalled.breakers.has(breaker.domain));
	for (const change of journalled.breakers.values()) {
		if (!change.open || change.fingerprint !== fingerprint) continue;
		openBreakers.push({ domain: change.domain, reason: change.reason, openedMs: Date.parse(change.opened_at) });
	}
	return { ...carried, openBreakers };
}

function writeMeta(runDir: string, meta: RunMeta): void {
	writeFileAtomic(join(runDir, RUN_FILES.meta), `${JSON.stringify(meta, null, 2)}\n`);
}

/**
 * A resumed run's budget (docs/behaviour.md, "Budget"): the one kept in run.json stays in
 * force; `--max-credits N` replaces it (and is kept in its place) only when N is above what the run has
 * spent — at or below it, the session could send nothing, so it is refused (exit 2) naming the figure.
 */
function resumedBudget(
	runDir: string,
	meta: RunMeta | null,
	flag: number | undefined,
	spentSoFar: () => number,
	jobBudget: number | null,
	words: OptionWords,
): number | null {
	if (flag === undefined) return meta && meta.max_credits !== undefined ? meta.max_credits : jobBudget;
	const spent = spentSoFar();
	if (flag <= spent) {
		throw new ResumeError(
			`${words.maxCredits} ${flag} is not above the ${spent} credits this run has already spent; resume with ${words.maxCredits} larger than ${spent}`,
		);
	}
	if (meta) writeMeta(runDir, { ...meta, max_credits: flag });
	return flag;
}

/** The selection a run folder was started with (null: an older folder, or no readable run.json). */
export function readRunSelection(runDir: string): RunSelection | null {
	try {
		return (JSON.parse(readFileSync(join(runDir, RUN_FILES.meta), "utf8")) as RunMeta).selection ?? null;
	} catch {
		return null;
	}
}

/**
 * Whether a run folder's targets are numbered from their URLs as written (a version before URL
 * identity): resuming it keeps those ids. An unreadable run.json says no (resuming it is refused anyway).
 */
export function runHasLiteralTargetIds(runDir: string): boolean {
	try {
		return (JSON.parse(readFileSync(join(runDir, RUN_FILES.meta), "utf8")) as RunMeta).target_ids !== "url_identity";
	} catch {
		return false;
	}
}

/** The digest of the targets a run folder was started with (null: no readable run.json). */
export function readRunDigest(runDir: string): string | null {
	try {
		return (JSON.parse(readFileSync(join(runDir, RUN_FILES.meta), "utf8")) as RunMeta).targets_digest ?? null;
	} catch {
		return null;
	}
}

/**
 * A new run's folder, `<outRoot>/<job>/<run-id>/` (or under `runsDir`): where a fetched run and a
 * re-extraction both start, after the job's lock is taken.
 */
export function createRunFolder(outRoot: string, jobName: string, runId: string, runsDir?: string): string {
	return runsDir ? createRunDir(dirname(runsDir), basename(runsDir), runId) : createRunDir(outRoot, jobName, runId);
}

/** Keep in run.json the `--config` file this session was given (none given: what was kept stays). */
export function noteConfigFile(runDir: string, configFile: string): void {
	const meta = readMeta(runDir);
	if (meta.config_file !== configFile) writeMeta(runDir, { ...meta, config_file: configFile });
}

function readMeta(runDir: string): RunMeta {
	try {
		return JSON.parse(readFileSync(join(runDir, RUN_FILES.meta), "utf8")) as RunMeta;
	} catch (error) {
		const message = `cannot resume ${runDir}: its ${RUN_FILES.meta} is missing or unreadable`;
		throw new ResumeError(message, { cause: error });
	}
}

/** What `openRun` is given: the job, where its runs go, and a new run's or a resume's choices. */
export interface OpenRunOptions {
	job: Job;
	survey: TargetSurvey;
	outRoot: string;
	resumeDir: string | undefined;
	force: boolean;
	startedAt: number;
	logger: Logger | undefined;
	/** The job's lock, when the caller took it before sending anything; else it is taken here. */
	lock?: RunLock;
	/** The new run's id, when the caller chose it (with the lock); else one from `startedAt`. */
	runId?: string;
	/** `--repair`: move lines of results.jsonl that are not records aside before resuming. */
	repair?: boolean;
	/** `--max-credits`: the budget of a new run, or the new budget of a resumed one (above what it spent). */
	maxCredits?: number;
	/** How the entry point spells the options a refusal names. @default CLI_WORDS */
	words?: OptionWords;
	/** How a new run chose its targets: kept in run.json for its resumes. */
	selection?: RunSelection;
	/** Where a new run folder goes. @default `<outRoot>/<job>/` */
	runsDir?: string;
}

/**
 * Take the job's lock, then create a new run folder, or reopen one to resume: check the targets did
 * not change, cut torn lines, bring the CSV level with the JSONL, and read what is done and which
 * tasks are pending. Throws `LockHeldError` or `ResumeError` before anything is sent.
 */
export async function openRun(options: OpenRunOptions): Promise<OpenedRun> {
	const { job, survey } = options;
	const words = options.words ?? CLI_WORDS;
	const meta = options.resumeDir ? readMeta(options.resumeDir) : null;
	if (meta && meta.targets_digest !== survey.digest && !options.force) {
		throw new ResumeError(
			`the job's targets changed since run ${meta.run_id} started (${meta.total} then, ${survey.total} now); resume with ${words.forceOn} to run changed targets as new, or start a new run without ${words.resume}`,
		);
	}
	const runId = meta?.run_id ?? options.runId ?? newRunId(new Date(options.startedAt));
	const jobDir = jobOutputDir(options.outRoot, job.name);
	makeDirectory(jobDir);
	const lock = options.lock ?? acquireRunLock(jobDir, runId);
	if (!options.lock) warnIfTookOver(lock, options.logger);
	try {
		return options.resumeDir
			? await reopenRun(options, options.resumeDir, { runId, meta, lock })
			: createRun(options, { runId, lock });
	} catch (error) {
		lock.release();
		throw error;
	}
}

/** A resume: `--repair` first, then what is done, the journal's tasks and paid answers, the CSV caught up. */
async function reopenRun(
	options: OpenRunOptions,
	runDir: string,
	run: { readonly runId: string; readonly meta: RunMeta | null; readonly lock: RunLock },
): Promise<OpenedRun> {
	const { job, logger } = options;
	if (options.repair) {
		const moved = await repairResults(
			join(runDir, RUN_FILES.jsonl),
			join(runDir, RUN_FILES.csv),
			job.output.csvMaxCell,
		);
		if (moved > 0)
			logger?.warn(
				{ moved },
				`${(options.words ?? CLI_WORDS).repair}: moved ${moved} line(s) that were not records to ${CORRUPT_FILE}; their targets run again`,
			);
	}
	const prior = await readPriorProgress(join(runDir, RUN_FILES.jsonl));
	const journalled = await readJournalTasks(join(runDir, RUN_FILES.journal));
	const resumeTasks = new Map<string, string>();
	for (const [id, taskId] of journalled.tasks) if (!prior.done.has(id)) resumeTasks.set(id, taskId);
	// What earlier sessions were charged for targets still without a record — a kept answer, failed attempts
	// since — is spent: counted now (credits.used, the budget), and carried by the target's record.
	const resumePaid = new Map<string, PaidAnswer>();
	const resumeCharged = new Map<string, number>();
	const chargedEarlier = (id: string, credits: number) => {
		resumeCharged.set(id, (resumeCharged.get(id) ?? 0) + credits);
		prior.statistics.chargedEarlier(credits);
	};
	for (const [id, answer] of journalled.paid) {
		if (prior.done.has(id)) continue;
		resumePaid.set(id, answer);
		chargedEarlier(id, answer.credits);
	}
	for (const [id, credits] of journalled.charged) if (!prior.done.has(id)) chargedEarlier(id, credits);
	const resumeClimbs = new Map<string, string>();
	for (const [id, rung] of journalled.climbs) if (!prior.done.has(id)) resumeClimbs.set(id, rung);
	if (job.output.formats.includes("csv")) {
		const missing = csvCatchUp(join(runDir, RUN_FILES.csv), prior.lastRecord, job.output.csvMaxCell);
		if (missing) {
			const csv = openAppendFile(join(runDir, RUN_FILES.csv));
			csv.append(missing);
			csv.close();
		}
	}
	const carried = run.meta ? readCarried(runDir, run.meta, job.fingerprint, journalled) : null;
	const meta = run.meta ? await adoptChangedTargets(options, runDir, run.meta, prior.done) : null;
	// What the run has spent: its records and charges, and its calls that are no target (robots.txt, sitemaps,
	// map/search: read from their journals, a crawl's whole frontier, only when a new budget is to be checked).
	const spent = () =>
		prior.statistics.creditsUsed + journalledCrawlCredits(runDir) + journalledDiscoveryCredits(runDir);
	const maxCredits = resumedBudget(runDir, meta, options.maxCredits, spent, job.maxCredits, options.words ?? CLI_WORDS);
	const superseded = meta?.superseded ?? 0;
	return {
		runId: run.runId,
		runDir,
		prior,
		resumeTasks,
		resumePaid,
		resumeCharged,
		resumeClimbs,
		resumeModes: [...journalled.modes.values()],
		lock: run.lock,
		carried,
		maxCredits,
		superseded,
	};
}

/**
 * A resume with `--force` after the job's targets changed: from now on the run is the changed job's. Its
 * run.json takes the job's digest, total and fingerprint (so the next `--resume` or `--continue` needs no
 * `--force`, and does not start another run that pays for the same targets), and counts the records of
 * targets the job no longer has, which stay in the file but are not done (a run stopped early must not
 * look complete). Reads the job's targets once, only on such a resume. A crawl's or a discovery source's
 * pages are found as it goes: none of its records is counted out.
 */
async function adoptChangedTargets(
	options: OpenRunOptions,
	runDir: string,
	meta: RunMeta,
	done: IdSet,
): Promise<RunMeta> {
	const { job, survey } = options;
	if (meta.targets_digest === survey.digest) return meta;
	const listed = !job.crawl && (job.discovery?.length ?? 0) === 0;
	let current = 0;
	if (listed && done.size > 0) {
		const counted = createIdSet();
		for await (const batch of streamTargetBatches(job))
			for (const target of batch) {
				if (!done.has(target.id) || counted.has(target.id)) continue;
				counted.add(target.id);
				current += 1;
			}
	}
	const adopted: RunMeta = {
		...meta,
		job_fingerprint: job.fingerprint,
		targets_digest: survey.digest,
		total: survey.total,
		superseded: listed ? done.size - current : 0,
	};
	writeMeta(runDir, adopted);
	return adopted;
}

/** A new run: its folder and its run.json, written before any request. */
function createRun(options: OpenRunOptions, run: { readonly runId: string; readonly lock: RunLock }): OpenedRun {
	const { job, survey } = options;
	const { runId } = run;
	const runDir = createRunFolder(options.outRoot, job.name, runId, options.runsDir);
	const created: RunMeta = {
		run_id: runId,
		job_name: job.name,
		job_file: job.file,
		job_fingerprint: job.fingerprint,
		targets_digest: survey.digest,
		total: survey.total,
		created_at: new Date(options.startedAt).toISOString(),
		...(job.shard ? { shard: { index: job.shard.index, count: job.shard.count } } : {}),
		max_credits: options.maxCredits ?? job.maxCredits,
		csv_max_cell: job.output.csvMaxCell,
		...(options.selection ? { selection: options.selection } : {}),
		target_ids: "url_identity",
	};
	writeMeta(runDir, created);
	return {
		runId,
		runDir,
		prior: null,
		resumeTasks: new Map(),
		resumePaid: new Map(),
		resumeCharged: new Map(),
		resumeClimbs: new Map(),
		resumeModes: [],
		lock: run.lock,
		carried: null,
		maxCredits: created.max_credits ?? null,
		superseded: 0,
	};
}
