import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Logger } from "pino";
import {
	CLI_WORDS,
	checkOptions,
	checkPathArgument,
	type LastWords,
	LIBRARY_WORDS,
	type OptionKinds,
	type OptionWords,
	UsageError,
} from "../common/index.js";
import { environmentKeys, resolveRunSettings } from "../config/index.js";
import { openJobHistory } from "../history/index.js";
import { EXTRACTION_VARIABLES, loadJobWorded, SourceScanStoppedError } from "../job/index.js";
import { jobOutputDir, newRunId } from "../output/index.js";
import { lockForReextraction, notifyRunEnd, type RunJobResult, reextractRun } from "../run/index.js";
import { type RunJobFileResult, withLibraryRepair } from "./run-job-file.js";
import { checkPositiveInt } from "./run-option-checks.js";
import { withSandboxDemoSite } from "./service-connection.js";

/** Options of `extractJobFile`: the flags of `scrapejob extract`. */
export interface ExtractJobFileOptions {
	/** The run whose stored pages are read: a run id of the job, or `latest` (the latest ok record of every target), as `--run`. */
	readonly run: string;
	/** Root folder of results (what `run --out` names), relative to `cwd`, as `--out`. @default "output" */
	readonly out?: string;
	/**
	 * Abort to stop: no new page is read; the run folder says it is incomplete and is never promoted.
	 * Aborted before the call, it throws `SourceScanStoppedError`: no run folder is made, no lock taken.
	 */
	readonly signal?: AbortSignal;
	/** Where warnings go (a pino logger). @default nowhere (run.log in the run folder has them) */
	readonly logger?: Logger;
	/** Where `${VAR}` in the job file is read (and keys, scrubbed from the output). @default process.env */
	readonly env?: NodeJS.ProcessEnv;
	/** Base of relative paths (the job file, `out`). @default process.cwd() */
	readonly cwd?: string;
	/** Page worker threads. @default the cores but one, at most 4 */
	readonly threads?: number;
}

/** Each option of `extractJobFile` and the kind of value it takes: the names a call may use, from its interface. */
const EXTRACT_JOB_FILE_OPTIONS = {
	run: "string",
	out: "string",
	signal: "signal",
	logger: "logger",
	env: "object",
	cwd: "string",
	threads: "number",
} as const satisfies OptionKinds<ExtractJobFileOptions>;

/** `extractPlanned`'s options: the library's, and what only the CLI passes. */
export interface ExtractPlannedOptions extends ExtractJobFileOptions {
	/** A second signal ends the process at once: the re-extraction's summary.json is written as it stands. */
	readonly lastWords?: LastWords;
	/** How the entry point spells the options a refusal names. @default CLI_WORDS */
	readonly words?: OptionWords;
}

/** What a re-extraction ends with: the run's outcome and the job it ran for (for the CLI's words). */
export type ExtractOutcome = RunJobResult & { readonly jobName: string };

/**
 * `scrapejob extract JOB --run RUN_ID|latest` as a call: a new run folder of the job whose records are
 * read from stored pages (`content: files`) with the job file's current `extract:` — 0 credits, nothing
 * sent — tracked against the job's previous records and promoted to "latest" unless it breaks the
 * job's data contract. Returns the summary (`summary.json`'s fields, `reextracted_from`,
 * `missing_pages`) with `run_dir`, `report` and `stop_message`. Every throw below comes before the run
 * folder is made.
 *
 * @throws
 * - {@link JobValidationError} the job file is invalid.
 * - {@link UsageError} an option `extractJobFile` does not have (a misspelt name) or of the wrong kind, a
 *   `threads` below 1, no such run, no records, no stored page, no `extract:`, no `run` option.
 * - {@link CorruptResultsError} the run named holds lines that are not records (a `runJobFile` resume with
 *   `repair: true` moves them aside).
 * - {@link LockHeldError} a run of the job holds its lock; {@link LockPathError} the lock path is not a file.
 * - {@link OutputError} the run folder or the job's store cannot be written ({@link NativeModuleError} when
 *   the store's driver does not load).
 * - {@link SourceScanStoppedError} `signal` aborted before the call (nothing is made).
 */
export async function extractJobFile(path: string, options: ExtractJobFileOptions): Promise<RunJobFileResult> {
	checkPathArgument("extractJobFile", path);
	checkOptions("extractJobFile", options, EXTRACT_JOB_FILE_OPTIONS);
	checkPositiveInt("threads", options?.threads);
	// `--run` is required by the CLI's parser; a call from JavaScript may leave it out.
	if (typeof options?.run !== "string" || options.run === "")
		throw new UsageError('run: name the run whose stored pages are read, a run id of the job or "latest"');
	// As runJobFile: a call stopped before it began makes nothing, rather than an empty interrupted run folder.
	if (options.signal?.aborted) throw new SourceScanStoppedError(0, "before it started");
	const { runDir, summary, reportPath, stopMessage } = await extractPlanned(path, {
		...options,
		words: LIBRARY_WORDS,
	}).catch((error: unknown) => {
		throw withLibraryRepair(error);
	});
	return { ...summary, run_dir: runDir, report: reportPath, stop_message: stopMessage };
}

/** The one re-extraction path: the CLI's `extract` and `extractJobFile` both call it. */
export async function extractPlanned(path: string, options: ExtractPlannedOptions): Promise<ExtractOutcome> {
	const cwd = options.cwd ?? process.cwd();
	const outRoot = resolve(cwd, options.out ?? "output");
	const env = withSandboxDemoSite(options.env ?? process.env, outRoot);
	const signal = options.signal ?? new AbortController().signal;
	const { job } = await loadJobWorded(
		resolve(cwd, path),
		{
			env,
			cwd,
			signal,
			checkSources: false,
			variablesNeeded: EXTRACTION_VARIABLES,
		},
		options.words ?? CLI_WORDS,
	);
	const jobDir = jobOutputDir(outRoot, job.name);
	if (!existsSync(jobDir))
		throw new UsageError(`no records of job ${job.name} under ${outRoot}: nothing to re-extract`);
	const runId = newRunId();
	// A re-extraction writes a run folder and the job's store like a run: one at a time (exit 4 otherwise).
	const lock = lockForReextraction(outRoot, job.name, runId, resolveRunSettings(env).lockLease);
	try {
		const history = openJobHistory(jobDir);
		for (const warning of history.warnings) options.logger?.warn({ job: job.name }, warning);
		let result: RunJobResult;
		try {
			const secrets = [...environmentKeys(env), job.healthcheck].filter((key): key is string => Boolean(key));
			result = await reextractRun({
				job,
				outRoot,
				from: options.run,
				history,
				signal,
				secrets,
				runId,
				lock,
				...(options.lastWords ? { lastWords: options.lastWords } : {}),
				...(options.logger ? { logger: options.logger } : {}),
				...(options.threads !== undefined ? { threads: options.threads } : {}),
				...(options.words ? { words: options.words } : {}),
			});
		} finally {
			history.close();
		}
		if (job.notify) {
			await notifyRunEnd(job.notify, result.summary, result.runDir, {
				warn: (message) => options.logger?.warn(message),
			});
		}
		return { ...result, jobName: job.name };
	} finally {
		lock.release();
	}
}
