import { existsSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import pino, { type Logger } from "pino";
import {
	CLI_WORDS,
	DURATION_HINT,
	errorMessage,
	maskUrlCredentials,
	parseDuration,
	plural,
	redactSecrets,
	UsageError,
} from "../../common/index.js";
import { readConfigFile } from "../../config/index.js";
import {
	formatProblem,
	type Job,
	type JobProblem,
	JobValidationError,
	loadJobWorded,
	shardBalanceWarning,
	shardTurnsWarning,
	streamTargetBatches,
} from "../../job/index.js";
import {
	checkHttpUrl,
	checkResumeOnlyOptions,
	fleetRunComplete,
	type LoadedRunJob,
	nothingToRetry,
	type PlannedRun,
	type PlannedRunOutcome,
	type PreparedRuns,
	prepareRuns,
	previewSelection,
	type RunOptions,
	releasePlannedRuns,
	runExitCode,
	runPlannedJob,
	shardJobs,
} from "../../library/index.js";
import { csvColumnsFor, formatSummary, jobOutputDir } from "../../output/index.js";
import {
	CorruptResultsError,
	checkCost,
	crawlExtraFetches,
	forecastJob,
	type ProgressSnapshot,
	resolveConcurrency,
	surveyTargets,
} from "../../run/index.js";
import { type CliContext, writeLine } from "../context.js";
import { crawlCreditBound, crawlDryRunLines } from "../crawl-dry-run.js";
import { EXIT, RUN_EXIT_TABLE } from "../exit-codes.js";
import { tuneHeapForRun } from "../heap-growth.js";
import { printJsonError } from "../json-error.js";
import { createProgressBar, createProgressLog, type ProgressDisplay, progressLogFields } from "../progress-display.js";
import { acceptCommand, fleetWorkerCommand, jobPathForHint, repairCommand, resumeCommand } from "../resume-hint.js";
import {
	addServiceOptions,
	connectService,
	type ServiceConnection,
	type ServiceFlags,
	sandboxNotice,
} from "../service-connection.js";

interface RunFlags extends ServiceFlags {
	out: string;
	resume?: boolean | string;
	continue?: boolean;
	force?: boolean;
	dryRun?: boolean;
	concurrency?: number;
	maxCredits?: number;
	quiet?: boolean;
	json?: boolean;
	gracePeriod?: number;
	taskPollMs?: number;
	outageTimeout?: number;
	freshness?: number;
	notify?: string;
	repair?: boolean;
	retryFailed?: boolean | string;
	accept?: string;
	shard?: string;
	metrics?: string;
	healthcheck?: string;
	fleet?: string;
	fleetRun?: string;
}

function positiveInt(name: string) {
	return (value: string) => {
		const parsed = Number(value);
		if (!Number.isInteger(parsed) || parsed < 1)
			throw new InvalidArgumentError(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
		return parsed;
	};
}

function duration(name: string) {
	return (value: string) => {
		const parsed = parseDuration(value);
		if (parsed === null)
			throw new InvalidArgumentError(`${name} must be ${DURATION_HINT}, got ${JSON.stringify(value)}`);
		return parsed;
	};
}

function nonNegativeNumber(name: string) {
	return (value: string) => {
		const parsed = Number(value);
		if (!Number.isFinite(parsed) || parsed < 0)
			throw new InvalidArgumentError(`${name} must be a number >= 0, got ${JSON.stringify(value)}`);
		return parsed;
	};
}

export function registerRunCommand(program: Command, ctx: CliContext): void {
	const command = program
		.command("run")
		.description(
			"run jobs: validate, learn the account's concurrency and credits, fetch every target once, write results",
		)
		.argument("<jobs...>", "job files (YAML), run one after the other; each job once")
		.option("--out <dir>", "root folder of results: <dir>/<job>/<run-id>/", "output")
		.option("--resume [run-id]", "continue the latest incomplete run of each job (or the given run id)")
		.option(
			"--continue",
			"resume the job's newest run (of this --shard) when it is unfinished, else start a new one: one command line for a scheduler's first start, restart and next night; a complete run stays complete",
		)
		.option(
			"--force",
			"with --resume or --continue (alone: exit 2): resume a run whose job's targets changed (changed targets run as new; the run is then the changed job's, and records of targets it no longer has are not counted as done)",
		)
		.option(
			"--repair",
			"with --resume or --continue (alone: exit 2): move lines of results.jsonl that are not records to results.corrupt.jsonl; their targets run again",
		)
		.option(
			"--dry-run",
			"validate, list the targets (id, mode, url) and the estimated credit range, held against the budget and the account's balance (one free look-up); fetch nothing (freshness and --retry-failed applied from the job's store; --resume and --continue not)",
		)
		.option("--concurrency <n>", "in-flight fetches (never above the account's limit)", positiveInt("--concurrency"))
		.option(
			"--max-credits <n>",
			"credit budget of the whole run (resumed sessions included): reached, the run stops; resume with a larger one",
			nonNegativeNumber("--max-credits"),
		)
		.option(
			"--grace-period <ms>",
			"after Ctrl-C/SIGTERM, how long in-flight fetches may finish",
			positiveInt("--grace-period"),
			30_000,
		)
		.option(
			"--outage-timeout <duration>",
			"how long the service may be down (unreachable, or 5xx to everything) before the run stops, exit 3 (job key outage_timeout; default 10m)",
			duration("--outage-timeout"),
		)
		.option(
			"--notify <url>",
			"POST the summary there when the run ends (signed with the job's notify.secret, if any); never changes the exit code",
		)
		.option(
			"--freshness <duration>",
			"skip targets whose latest record in this job's earlier runs is ok and younger (e.g. 24h; 0 fetches all; a failed target is never fresh; job key freshness)",
			duration("--freshness"),
		)
		.option(
			"--retry-failed [run-id]",
			"a new run of only the targets whose latest record is failed (across the job's runs, or in the given run); freshness does not apply",
		)
		.option(
			"--accept <run-id>",
			"first promote that run of the job, held back by its data contract (contract_failed), to latest",
		)
		.option(
			"--shard <I/N>",
			"run only shard I of N (1-based; auto/N reads JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX, 0-based): the targets whose URL host hashes to it; run folder <run-id>-shard-I-of-N. Shards on one key share its concurrency: past it, shards wait their turn (--dry-run warns)",
		)
		.option(
			"--metrics <file>",
			"write the run's metrics to FILE in the Prometheus text format (node_exporter textfile collector), every 10 s and at exit (job key metrics)",
		)
		.option(
			"--healthcheck <url>",
			"ping URL/start at the start, URL on success, URL/fail otherwise (Healthchecks.io); never changes the exit code, never logged (job key healthcheck)",
		)
		.option(
			"--fleet <url>",
			"work as one worker of the job's fleet run, coordinated through PostgreSQL at URL (postgres://…; env SCRAPEJOB_FLEET_URL): any number of workers on any hosts, each target paid once, one budget and concurrency limit (docs/guides/fleet.md)",
		)
		.option(
			"--fleet-run <name>",
			"with --fleet: join or open the fleet run of that name (e.g. the Kubernetes Job's name); a complete one is not reopened (exit 0)",
		)
		.option("--task-poll-ms <ms>", "first wait between task status polls (grows to 10x)", positiveInt("--task-poll-ms"))
		.option("-q, --quiet", "no progress bar and no log lines on stderr; only the final summary")
		.option("--json", "print each job's final summary as one JSON line (with run_dir)");
	addServiceOptions(command);
	command.addHelpText(
		"after",
		`
Keys (flags > environment > --config file):
  SCRAPEJOB_ACCOUNT_KEY   account key; the scraper key, credits and concurrency are looked up with it
  SCRAPEJOB_SCRAPER_KEY   scraper key only: no look-up; concurrency is learned from X-RateLimit-Limit
  SCRAPEJOB_API_URL, SCRAPEJOB_SCRAPER_URL   base addresses (https; http only on loopback)

Exit codes, and what a scheduler should do on each:
${exitTable()}

Examples:
  npx scrapejob run jobs/demo.yaml --sandbox                  offline, against the built-in emulator
  npx scrapejob run jobs/example-shop.yaml --max-credits 500  with a budget
  npx scrapejob run jobs/example-shop.yaml --resume           finish an interrupted run without paying twice
  npx scrapejob run jobs/example-shop.yaml --continue --freshness 20h
      (a scheduler's one command line: resumes an unfinished run, else a new one paying only for what is not fresh)`,
	);
	command.action(async (paths: string[], flags: RunFlags) => {
		checkHttpUrl("--notify", flags.notify);
		checkHttpUrl("--healthcheck", flags.healthcheck);
		const restoreHeap = tuneHeapForRun();
		try {
			ctx.exitCode = await runCommand(ctx, paths, flags);
		} finally {
			restoreHeap();
		}
	});
}

/** RUN_EXIT_TABLE as help text: the code, its meaning, and the scheduler's action on the next line. */
function exitTable(): string {
	return RUN_EXIT_TABLE.map(
		({ code, meaning, scheduler }) => `  ${String(code).padEnd(4)} ${meaning}
       → ${scheduler}`,
	).join("\n");
}

/** The progress bar's label: the job's name, and how many targets freshness left out (they are not in its total). */
function withFresh(job: Job, deselected: number): string {
	return job.freshnessMs > 0 && deselected > 0 ? `${job.name} (${deselected} fresh)` : job.name;
}

/**
 * Every job file loaded, or null when one is invalid: its problems are on stderr as `file:line:col`, and
 * with `--json` also on stdout as one `{error}` line (code SCRAPEJOB_JOB_INVALID, with the problems),
 * as every other failure of `run --json` answers.
 */
async function loadJobs(
	ctx: CliContext,
	paths: string[],
	env: NodeJS.ProcessEnv,
	json: boolean,
): Promise<LoadedRunJob[] | null> {
	const jobs: LoadedRunJob[] = [];
	const problems: JobProblem[] = [];
	let invalid = false;
	for (const path of paths) {
		try {
			const { job, warnings, counts } = await loadJobWorded(
				resolve(ctx.cwd, path),
				{
					env,
					cwd: ctx.cwd,
					signal: ctx.signal,
				},
				CLI_WORDS,
			);
			for (const warning of warnings) writeLine(ctx.stderr, formatProblem(warning));
			jobs.push({ job, counts });
		} catch (error) {
			if (!(error instanceof JobValidationError)) throw error;
			invalid = true;
			problems.push(...error.problems);
			for (const problem of error.problems) writeLine(ctx.stderr, formatProblem(problem));
		}
	}
	if (invalid && json) printJsonError(ctx, new JobValidationError(problems));
	return invalid ? null : jobs;
}

/**
 * One job named twice (the same file, or a copy: one name, the same targets and settings) would run twice
 * in a row, the second a new run paying for the same targets again: refused before anything is sent.
 * Two files of one name with other targets run one after the other, as before.
 */
function refuseRepeatedJobs(ctx: CliContext, loaded: readonly LoadedRunJob[]): void {
	const files = new Map<string, string>();
	for (const { job } of loaded) {
		const key = `${job.name}\n${job.fingerprint}`;
		const earlier = files.get(key);
		const file = jobPathForHint(ctx.cwd, job.file);
		if (earlier !== undefined)
			throw new UsageError(
				earlier === file
					? `${file} is named twice: each job runs once per command`
					: `${earlier} and ${file} are the same job ("${job.name}", the same targets): it would be paid for twice; name one of them`,
			);
		files.set(key, file);
	}
}

/** Where a terminal run's warnings go while the progress bar owns the screen. */
interface TerminalNotes {
	display: ProgressDisplay | undefined;
	/** Printed as plain sentences once the bar has stopped. */
	pending: string[];
}

/**
 * Events for stderr. Cron (no TTY) gets pino JSON lines for log collectors. A terminal gets no info
 * chatter (the bar shows progress); its warnings show on the bar at once and are printed in full
 * after it, since writing lines under a live bar garbles both.
 */
function stderrLogger(ctx: CliContext, quiet: boolean, secrets: string[], notes: TerminalNotes): Logger {
	const interactive = ctx.stderr.isTTY === true;
	const level = quiet ? "silent" : interactive ? "warn" : "info";
	const write = interactive
		? (line: string) => {
				const { msg } = JSON.parse(line) as { msg?: string };
				const text = redactSecrets(msg ?? line.trim(), secrets);
				if (notes.display) {
					notes.display.note(text);
					notes.pending.push(text);
				} else ctx.stderr.write(`scrapejob: ${text}\n`);
			}
		: (line: string) => ctx.stderr.write(redactSecrets(line, secrets));
	return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, { write });
}

async function runCommand(ctx: CliContext, paths: string[], flags: RunFlags): Promise<number> {
	let connection: ServiceConnection | undefined;
	let planned: readonly PlannedRun[] = [];
	let jobs: LoadedRunJob[] = [];
	const releaseOnExit = () => releasePlannedRuns(planned);
	try {
		if (flags.continue && (flags.resume !== undefined || flags.retryFailed !== undefined))
			throw new UsageError(
				`--continue chooses between resuming and a new run itself: not with ${flags.resume !== undefined ? "--resume" : "--retry-failed"}`,
			);
		checkResumeOnlyOptions(flags, CLI_WORDS);
		// The sandbox starts first so that jobs can name its demo site; it costs nothing.
		if (flags.sandbox) connection = await connectService(ctx, flags);
		// A terminal gets the sandbox's terms as a sentence; cron's stderr gets them as a log line below.
		if (flags.sandbox && !flags.quiet && ctx.stderr.isTTY) writeLine(ctx.stderr, `scrapejob: ${sandboxNotice()}`);
		// The config file's own mistakes first: a variable it may not hold (SCRAPEJOB_DEMO_SITE) would otherwise
		// be reported by the job as "not set".
		if (flags.config && !connection) await readConfigFile(resolve(ctx.cwd, flags.config));
		const env = connection?.demoSiteUrl ? { ...ctx.env, SCRAPEJOB_DEMO_SITE: connection.demoSiteUrl } : ctx.env;
		const loaded = await loadJobs(ctx, paths, env, flags.json === true);
		if (!loaded) return EXIT.invalidInput;
		refuseRepeatedJobs(ctx, loaded);
		jobs = shardJobs(loaded, flags.shard, ctx.env);
		if (flags.dryRun) return await dryRun(ctx, jobs, flags, connection);

		// Keys and addresses (and the fleet's database) resolved: nothing is sent yet.
		connection ??= await connectService(ctx, flags);
		// The library's one set-up (as runJobFile's): plans, locks, keys, services, secrets, choices.
		const prepared = await prepareRuns(loaded, runOptions(flags), connection, {
			env: ctx.env,
			cwd: ctx.cwd,
			signal: ctx.signal,
			onNote: (note) => writeLine(ctx.stdout, note),
			onLocked: (locked, tookOver) => {
				planned = locked;
				for (const message of tookOver) if (!flags.quiet) writeLine(ctx.stderr, `scrapejob: ${message}`);
				// A second Ctrl-C exits at once: the locks go with the process rather than waiting to be taken over.
				process.once("exit", releaseOnExit);
			},
		});
		if (!prepared) return EXIT.ok;
		const { services } = prepared;
		const notes: TerminalNotes = { display: undefined, pending: [] };
		const logger = stderrLogger(ctx, flags.quiet === true, [...services.secrets], notes);
		if (flags.sandbox && ctx.stderr.isTTY !== true) logger.info({ sandbox: true }, sandboxNotice());

		let worst: number = EXIT.ok;
		for (const plan of prepared.planned) {
			if (ctx.signal.aborted) break;
			const code = await runOne(ctx, plan, flags, prepared, logger, notes);
			worst = Math.max(worst, code);
			if (code === EXIT.authOrCredits || code === EXIT.interrupted) break;
		}
		return worst;
	} catch (caught) {
		const error = caught instanceof CorruptResultsError ? withRepairCommand(ctx, caught, jobs, flags) : caught;
		if (flags.json) printJsonError(ctx, error);
		throw error;
	} finally {
		process.removeListener("exit", releaseOnExit);
		releasePlannedRuns(planned);
		await connection?.close();
	}
}

/** The flags as the library's run options (the same words `runJobFile` takes). */
function runOptions(flags: RunFlags): RunOptions {
	return {
		out: flags.out,
		resume: flags.resume,
		continue: flags.continue,
		force: flags.force,
		repair: flags.repair,
		shard: flags.shard,
		maxCredits: flags.maxCredits,
		concurrency: flags.concurrency,
		freshnessMs: flags.freshness,
		retryFailed: flags.retryFailed,
		accept: flags.accept,
		notify: flags.notify,
		metrics: flags.metrics,
		healthcheck: flags.healthcheck,
		taskPollMs: flags.taskPollMs,
		gracePeriodMs: flags.gracePeriod,
		outageTimeoutMs: flags.outageTimeout,
		fleetRun: flags.fleetRun,
	};
}

/** A damaged results.jsonl of a run to resume: the error names the command that repairs it, as it must be pasted. */
function withRepairCommand(
	ctx: CliContext,
	error: CorruptResultsError,
	jobs: readonly LoadedRunJob[],
	flags: RunFlags,
): CorruptResultsError {
	const runDir = dirname(error.path);
	const job = jobs.find(({ job }) => basename(dirname(runDir)) === job.name)?.job;
	return job ? error.withRepair(repairCommand(ctx, job, flags, runDir)) : error;
}

/**
 * `--dry-run`: the targets a run would fetch (id, mode, URL — streamed, so a million-line job prints
 * without being held), then the count and the credit range per job. Nothing is sent.
 */
async function dryRun(
	ctx: CliContext,
	jobs: LoadedRunJob[],
	flags: RunFlags,
	sandbox: ServiceConnection | undefined,
): Promise<number> {
	// The connection a run would make (--config, environment, flags; or the sandbox's): whether a fleet is
	// named is read from it, as `run` reads it (a fleet URL in the --config file names one too).
	const connection = sandbox ?? (await connectService(ctx, flags));
	try {
		return await dryRunJobs(ctx, jobs, flags, connection);
	} finally {
		if (connection !== sandbox) await connection.close();
	}
}

/** Each job's listing, count and estimate, with the connection the run would make. */
async function dryRunJobs(
	ctx: CliContext,
	jobs: LoadedRunJob[],
	flags: RunFlags,
	connection: ServiceConnection,
): Promise<number> {
	const reports = [];
	const { balance, concurrency } = await readBalance(ctx, connection);
	const fleet = connection.config.fleetUrl !== undefined;
	for (const loaded of jobs) {
		// The targets a new run would fetch: freshness and --retry-failed read from the job's store (a
		// fleet's run reads them from the fleet's records: not previewed).
		const preview = fleet
			? { job: loaded.job, leftOut: null, warnings: [], close: () => {} }
			: await previewSelection(loaded.job, {
					freshnessMs: flags.freshness,
					retryFailed: flags.retryFailed,
					outRoot: resolve(ctx.cwd, flags.out),
				});
		try {
			for (const warning of preview.warnings) writeLine(ctx.stderr, `scrapejob: warning: ${warning}`);
			const job = preview.job;
			const counts = job === loaded.job ? loaded.counts : null;
			const { hosts, ...survey } = await surveyTargets(job, counts, ctx.signal);
			const imbalance = shardBalanceWarning(hosts, job.shard, job.shardBy);
			if (imbalance) writeLine(ctx.stderr, `scrapejob: ${job.name}: ${imbalance}`);
			// The concurrency the run would have (unknown without the account's limit).
			const wanted = flags.concurrency ?? (job.concurrency === "auto" ? null : job.concurrency);
			const turns = shardTurnsWarning(
				job.shard,
				concurrency === null ? null : resolveConcurrency({ accountLimit: concurrency, wanted }).ceiling,
			);
			if (turns) writeLine(ctx.stderr, `scrapejob: ${job.name}: ${turns}`);
			const shardWarning = [imbalance, turns].filter(Boolean).join("; ");
			const notApplied = dryRunNotApplied(flags, job, fleet);
			if (notApplied.length > 0)
				writeLine(
					ctx.stderr,
					`scrapejob: ${job.name}: --dry-run does not apply ${notApplied.join(", ")}: the estimate may count targets the run itself does not fetch`,
				);
			// A crawl's pages are not known before it runs: its worst case is max_pages at the dearest seed's price.
			const crawlExtra = await crawlExtraFetches(job);
			const crawlBound = crawlCreditBound(job, survey, crawlExtra);
			const estimate = { min: survey.creditRange.min, max: Math.max(survey.creditRange.max, crawlBound ?? 0) };
			const cost = checkCost(estimate, flags.maxCredits ?? job.maxCredits, balance);
			// What earlier runs of the job actually cost per domain (docs/behaviour.md, "Forecast"); null without them.
			const forecast = await forecastJob(job, jobOutputDir(resolve(ctx.cwd, flags.out), job.name), ctx.signal);
			const csvColumns = job.output.formats.includes("csv")
				? csvColumnsFor({ data: job.extraction?.dataColumns, carry: job.extraction?.carry })
				: null;
			// The same names `validate --json` uses, in the same style (snake_case): one vocabulary for scripts.
			reports.push({
				job: job.name,
				file: job.file,
				targets: survey.targets,
				total: survey.total,
				duplicates: survey.duplicates,
				skipped_rows: survey.skippedRows,
				deselected: survey.deselected,
				by_mode: survey.byMode,
				credits: survey.creditRange,
				credits_by_mode: survey.creditRangeByMode,
				csv_columns: csvColumns,
				budget: cost.budget,
				balance: cost.balance,
				cost_check: cost.sentences,
				...(forecast ? { forecast } : {}),
				...(shardWarning ? { shard_warning: shardWarning } : {}),
			});
			if (flags.json) continue;
			for await (const batch of streamTargetBatches(job)) {
				ctx.stdout.write(
					batch
						.map((target) => `${target.id}\t${target.params.mode ?? "auto"}\t${maskUrlCredentials(target.url)}\n`)
						.join(""),
				);
			}
			writeLine(
				ctx.stdout,
				`${job.name}: ${plural(survey.total, "target")} (request ${survey.byMode.request}, browser ${survey.byMode.browser}, auto ${survey.byMode.auto}${survey.byMode.adaptive ? `, adaptive ${survey.byMode.adaptive}` : ""}${survey.byMode.browser_session ? `, browser_session ${survey.byMode.browser_session}` : ""}), ${plural(survey.duplicates, "duplicate")}${preview.leftOut && survey.deselected > 0 ? `, ${survey.deselected} left out (${preview.leftOut})` : ""}; estimated ${creditRangeWords(survey.creditRange)} credits if every target succeeds once. Nothing was fetched (--dry-run).`,
			);
			// Pages a crawl or a map/search source finds are known only when the run fetches them: not in the forecast.
			const found = job.crawl !== undefined || (job.discovery?.length ?? 0) > 0;
			if (forecast)
				writeLine(
					ctx.stdout,
					`${job.name}: forecast from earlier runs: ${forecast.expected} credits expected ${forecast.low === forecast.high ? "(no spread in earlier runs)" : `(80 % interval ${forecast.low}–${forecast.high})`}${found ? " for the listed targets only: the pages the run finds (crawl, map, search) are not known before it runs" : ""}.`,
				);
			for (const line of crawlDryRunLines(job, survey, crawlExtra)) writeLine(ctx.stdout, line);
			for (const sentence of cost.sentences) writeLine(ctx.stdout, `${job.name}: ${sentence}`);
			if (csvColumns) writeLine(ctx.stdout, `${job.name}: results.csv columns: ${csvColumns.join(", ")}`);
		} finally {
			preview.close();
		}
	}
	if (flags.json) writeLine(ctx.stdout, JSON.stringify(reports, null, 2));
	return EXIT.ok;
}

/**
 * What chooses a run's targets that a dry run leaves aside: --resume (a run's own targets and budget) and
 * --continue, which pick a run; for a crawl (its pages are found as it runs) freshness and --retry-failed.
 */
function dryRunNotApplied(flags: RunFlags, job: Job, fleet: boolean): string[] {
	const freshness = flags.freshness ?? job.freshnessMs;
	const whole = job.crawl !== undefined || fleet;
	return [
		whole && freshness > 0 ? "freshness" : null,
		whole && flags.retryFailed !== undefined && flags.retryFailed !== false ? "--retry-failed" : null,
		flags.resume !== undefined && flags.resume !== false ? "--resume" : null,
		flags.continue ? "--continue" : null,
	].filter((word): word is string => word !== null);
}

/**
 * The account's scraper credits for `--dry-run`'s comparison, and its concurrency (what shards share):
 * one free look-up (GET /public/scraper) when an account key is set; otherwise, or when it fails, why the
 * balance is unknown (never an error: a dry run still lists and estimates).
 */
async function readBalance(
	ctx: CliContext,
	connection: ServiceConnection,
): Promise<{ readonly balance: Parameters<typeof checkCost>[2]; readonly concurrency: number | null }> {
	try {
		if (!connection.account) {
			const unknownBecause = connection.config.scraperKey
				? "only a scraper key is set, and the balance is read with the account key (SCRAPEJOB_ACCOUNT_KEY)"
				: "no account key (SCRAPEJOB_ACCOUNT_KEY) to read it with";
			return { balance: { credits: null, unknownBecause }, concurrency: null };
		}
		const access = await connection.account.scraperAccess(ctx.signal);
		return { balance: { credits: access.credits }, concurrency: access.concurrency };
	} catch (error) {
		const secrets = [connection.config.accountKey, connection.config.scraperKey].filter((key): key is string =>
			Boolean(key),
		);
		const unknownBecause = `the look-up failed (${redactSecrets(errorMessage(error), secrets)})`;
		return { balance: { credits: null, unknownBecause }, concurrency: null };
	}
}

/**
 * One planned job through the library's `runPlannedJob` (the one run path): this side only shows
 * progress, prints the summary and maps the outcome to an exit code.
 */
async function runOne(
	ctx: CliContext,
	plan: PlannedRun,
	flags: RunFlags,
	{ services, choices }: PreparedRuns,
	logger: Logger,
	notes: TerminalNotes,
): Promise<number> {
	const interactive = ctx.stderr.isTTY === true && !flags.quiet;
	let display: ProgressDisplay | undefined;
	let removeLastWord: (() => void) | undefined;
	let outcome: PlannedRunOutcome;
	try {
		outcome = await runPlannedJob(plan, services, {
			...choices,
			logger,
			lastWords: ctx.lastWords,
			onAccepted: (runId, promoted) =>
				writeLine(
					ctx.stderr,
					`scrapejob: ${promoted ? `run ${runId} accepted: its records are promoted to latest` : `run ${runId} is not held back by its contract: nothing to accept`}`,
				),
			// Said even with --quiet: a cron run is quiet, and a hook that never hears must not go unnoticed.
			onNotifyWarning: (message) => writeLine(ctx.stderr, `scrapejob: ${message}`),
			onStart: ({ job, survey, concurrency, adaptive, runDir }) => {
				if (interactive) {
					display = createProgressBar(ctx, withFresh(job, survey.deselected), survey.total, {
						crawl: job.crawl !== undefined,
					});
					notes.display = display;
				} else if (!flags.quiet) {
					display = createProgressLog((snapshot: ProgressSnapshot) =>
						logger.info({ job: job.name, ...progressLogFields(snapshot) }, "progress"),
					);
				}
				if (!interactive) {
					logger.info(
						{
							job: job.name,
							targets: survey.total,
							concurrency,
							adaptive,
							credits: services.access?.credits ?? null,
							resume: plan.resumeDir ?? null,
							...(job.freshnessMs > 0 ? { fresh: survey.deselected } : {}),
						},
						"run starting",
					);
				}
				// A second Ctrl-C ends the process at once (bin.ts): the bar gets its own line back, and the
				// line printed says how to finish the run, when its folder exists.
				removeLastWord = ctx.lastWords?.add(() => {
					display?.stop();
					if (!existsSync(runDir)) return undefined;
					const command = services.fleet
						? fleetWorkerCommand(ctx, job, flags, flags.fleetRun)
						: resumeCommand(ctx, job, flags, runDir);
					return `finish with \`${command}\``;
				});
				return display ? (snapshot: ProgressSnapshot) => display?.update(snapshot) : undefined;
			},
		});
	} finally {
		removeLastWord?.();
		display?.stop();
		notes.display = undefined;
		for (const text of notes.pending.splice(0)) writeLine(ctx.stderr, `scrapejob: ${text}`);
	}
	// Ctrl-C while validating or counting: nothing was sent.
	if (!outcome) return EXIT.interrupted;
	if (outcome.skipped === "fleet_complete") {
		const message = fleetRunComplete(outcome.job.name, outcome.fleetRun);
		writeLine(
			ctx.stdout,
			flags.json
				? JSON.stringify({ job: outcome.job.name, skipped: outcome.skipped, fleet_run: outcome.fleetRun, message })
				: message,
		);
		return EXIT.ok;
	}
	if (outcome.skipped) {
		const message = nothingToRetry(outcome.job.name);
		writeLine(
			ctx.stdout,
			flags.json ? JSON.stringify({ job: outcome.job.name, skipped: outcome.skipped, message }) : message,
		);
		return EXIT.ok;
	}
	const { summary, job } = outcome;
	if (flags.json)
		writeLine(ctx.stdout, JSON.stringify({ ...summary, run_dir: outcome.runDir, report: outcome.reportPath }));
	else {
		ctx.stdout.write(
			formatSummary(summary, outcome.runDir, {
				resume: summary.fleet
					? fleetWorkerCommand(ctx, job, flags, summary.fleet.run, { summary, dearestTarget: outcome.dearestTarget })
					: resumeCommand(ctx, job, flags, outcome.runDir, { summary, dearestTarget: outcome.dearestTarget }),
				accept: acceptCommand(jobPathForHint(ctx.cwd, job.file), job.name, flags.out, outcome.runDir),
				jobFile: jobPathForHint(ctx.cwd, job.file),
				// The fleet's breaker opened on the database's clock; any worker joining after the cool-down probes it.
				...(job.breaker
					? {
							breakerCoolDownMs: job.breaker.coolDownMs,
							...(summary.fleet ? { breakerProbedBy: "the next worker" } : {}),
						}
					: {}),
			}),
		);
		if (outcome.reportPath) writeLine(ctx.stdout, `report     ${outcome.reportPath}`);
	}
	if (!interactive) logger.info({ job: job.name, complete: summary.complete, run_dir: outcome.runDir }, "run finished");

	// Said even with --quiet: the cron mail must say why it stopped (a lost database, credits going for
	// nothing, a full disk, a lock taken over).
	const said: Partial<Record<NonNullable<typeof outcome.stopReason>, string>> = {
		fleet_unavailable: "the fleet's database stopped answering",
		paid_failures: "stopped: charged failures in a row",
		output_failed: "output failed: nothing more was sent",
		lease_lost: "lease lost: another process took the job's lock over",
	};
	const fallback = outcome.stopReason === null ? undefined : said[outcome.stopReason];
	if (fallback !== undefined) writeLine(ctx.stderr, `scrapejob: ${outcome.stopMessage ?? fallback}`);
	// The library's one rule: a stop reason, an open breaker, or the records (runJobFile's users read it too).
	return runExitCode(summary);
}

/** A range whose ends are equal is one figure ("estimated 4 credits", not "4–4"). */
function creditRangeWords({ min, max }: { readonly min: number; readonly max: number }): string {
	return min === max ? `${max}` : `${min}–${max}`;
}
