import { resolve } from "node:path";
import { checkOptions, LIBRARY_WORDS, type OptionKinds } from "../common/index.js";
import type { Job, TargetCounts } from "../job/index.js";
import { jobOutputDir } from "../output/index.js";
import { type Forecast, forecastJob, surveyTargets, type TargetSurvey } from "../run/index.js";
import { durationOption } from "./run-option-checks.js";
import { previewSelection } from "./run-planned.js";

/** Options of `surveyNewRun`: the choices of `runJobFile` that pick a new run's targets. */
export interface SurveyNewRunOptions {
	/** Root folder of results, whose job store says what is fresh or failed, relative to `cwd`. @default "output" */
	readonly out?: string;
	/** Base of a relative `out`. @default process.cwd() */
	readonly cwd?: string;
	/** As `runJobFile`'s `freshness`: a duration (`24h`; `0` selects all). @default the job's `freshness` */
	readonly freshness?: string;
	/** As `runJobFile`'s `retryFailed`: only the targets whose latest record failed (in that run, given its id). */
	readonly retryFailed?: boolean | string;
	/** Stops counting the targets (`SourceScanStoppedError`). */
	readonly signal?: AbortSignal;
}

/** A new run's targets as `run --dry-run` counts them: the survey of the selected targets, and the forecast. */
export interface NewRunSurvey extends TargetSurvey {
	/**
	 * Why `deselected` targets are left out: `"fresh"` (freshness), `"not failed"` (`retryFailed`), or
	 * null when nothing selects (no freshness, no retryFailed, or a crawl, whose pages are found as it runs).
	 */
	readonly leftOut: "fresh" | "not failed" | null;
	/** What the selected targets are expected to cost, from what earlier runs paid per domain; null before any run. */
	readonly forecast: Forecast | null;
	/** The job store's warnings (a store it could not read whole). */
	readonly warnings: readonly string[];
}

/** Each option of `surveyNewRun` and the kind of value it takes: the names a call may use, from its interface. */
const SURVEY_NEW_RUN_OPTIONS = {
	out: "string",
	cwd: "string",
	freshness: "string",
	retryFailed: "boolean|string",
	signal: "signal",
} as const satisfies OptionKinds<SurveyNewRunOptions>;

/**
 * What a new run of a loaded job would fetch, as `scrapejob run --dry-run` counts it: the targets less
 * those its selection leaves out from the job's store under `out` (fresh ones with `freshness`, not
 * failed ones with `retryFailed`), their count and credit range, and the forecast from earlier runs.
 * `surveyTargets` alone counts every target of the job. Nothing is sent; the balance is not read.
 *
 * @throws
 * - {@link UsageError} an option it does not have or of the wrong kind, a `freshness` that is not a
 *   duration, a `retryFailed` run id that is not a run of the job.
 * - {@link SourceScanStoppedError} `signal` aborted while the targets were counted.
 */
export async function surveyNewRun(
	loaded: { readonly job: Job; readonly counts?: TargetCounts | null },
	options: SurveyNewRunOptions = {},
): Promise<NewRunSurvey> {
	checkOptions("surveyNewRun", options, SURVEY_NEW_RUN_OPTIONS);
	const freshnessMs = durationOption("freshness", options.freshness);
	const outRoot = resolve(options.cwd ?? process.cwd(), options.out ?? "output");
	// The dry run's own steps (cli/commands/run.ts): the store's selection, then the survey and forecast of it.
	const preview = await previewSelection(loaded.job, {
		freshnessMs,
		retryFailed: options.retryFailed,
		outRoot,
		words: LIBRARY_WORDS,
	});
	try {
		const { job } = preview;
		// The loader's counts are of every target: of use only when the selection left the job as it was.
		const counts = job === loaded.job ? (loaded.counts ?? null) : null;
		const survey = await surveyTargets(job, counts, options.signal);
		const forecast = await forecastJob(job, jobOutputDir(outRoot, job.name), options.signal);
		return { ...survey, leftOut: preview.leftOut, forecast, warnings: preview.warnings };
	} finally {
		preview.close();
	}
}
