import { isAbsolute, relative, resolve } from "node:path";
import type { Command } from "commander";
import { CLI_WORDS, plural, REQUESTED_MODES } from "../../common/index.js";
import {
	formatProblem,
	type JobProblem,
	JobValidationError,
	loadJobWorded,
	MAX_JOB_FILE_BYTES,
	type TargetCounts,
} from "../../job/index.js";
import { type CliContext, writeJson, writeLine } from "../context.js";
import { EXIT } from "../exit-codes.js";
import { printJsonError } from "../json-error.js";

export interface ValidateFlags {
	json?: boolean;
	/** commander's `--no-sources`: false when given. */
	sources?: boolean;
}

/** One job's outcome, as `--json` prints it. */
export interface JobValidation {
	file: string;
	valid: boolean;
	name: string | null;
	/** Inline targets plus source rows, after duplicates and skipped rows; `null` with --no-sources. */
	targets: number | null;
	inline_targets: number | null;
	duplicates: number | null;
	skipped_rows: number | null;
	by_mode: TargetCounts["byMode"] | null;
	/** Credits if every target succeeds once (docs/service.md, "Modes and costs"), in all and per mode. */
	credits: { min: number; max: number } | null;
	credits_by_mode: TargetCounts["creditRangeByMode"] | null;
	errors: JobProblem[];
	warnings: JobProblem[];
}

export function registerValidateCommand(program: Command, ctx: CliContext): void {
	program
		.command("validate")
		.description("check job files without sending anything: every problem as file:line:col, exit 2 if any")
		.argument("<jobs...>", "job files (YAML)")
		.option("--json", "print the results as JSON on stdout (problems included) instead of text")
		.option("--no-sources", "check the job files only, without streaming their source files")
		.addHelpText(
			"after",
			`
Checks each job the way \`run\` does before its first request, and sends no request at all:
YAML syntax, unknown keys (with "did you mean"), types and ranges, \${VAR} references, the
service's own parameter rules (with its problem texts, docs/service.md) on every target's merged
options, unique ids, and every row of every source (streamed, so million-line files are fine).
Job files above ${MAX_JOB_FILE_BYTES / 1024 / 1024} MiB are refused; put long URL lists in sources.

Valid jobs print one summary line each on stdout: targets (per mode), duplicates, skipped rows and
the credits the targets cost if each succeeds once. Problems go to stderr, one per line:
  jobs/shop.yaml:4:3 concurency: unknown key; did you mean "concurrency"?
  urls.csv:17:1 url: invalid URL format (it needs the http:// or https:// prefix; got "shop.example/a")
Duplicates and rows skipped under \`on_bad_row: skip\` are warnings: they do not fail validation.

Exit codes: 0 every job is valid · 2 some job has problems (or a usage error).

Examples:
  npx scrapejob validate jobs/*.yaml
  npx scrapejob validate jobs/example-shop.yaml --json
  SCRAPEJOB_DEMO_SITE=http://127.0.0.1:8701 npx scrapejob validate jobs/demo.yaml
      (the demo site of \`npx scrapejob emulator --demo-site\`, which serves the API on 8700 and the site on 8701)`,
		)
		.action(async (jobs: string[], flags: ValidateFlags) => {
			await runValidate(ctx, jobs, flags);
		});
}

/** The one-line summary of a valid job. */
export function describeValidJob(result: JobValidation): string {
	const parts = [`${result.file}: valid, job "${result.name}"`];
	if (result.targets === null || result.by_mode === null || result.credits === null) {
		parts.push(`${plural(result.inline_targets ?? 0, "inline target")} (sources not read)`);
	} else {
		const modes = REQUESTED_MODES.filter((mode) => (result.by_mode?.[mode] ?? 0) > 0)
			.map((mode) => `${mode} ${result.by_mode?.[mode]}`)
			.join(", ");
		parts.push(`${plural(result.targets, "target")}${modes ? ` (${modes})` : ""}`);
		parts.push(plural(result.duplicates ?? 0, "duplicate"));
		parts.push(plural(result.skipped_rows ?? 0, "skipped row"));
		const range = ({ min, max }: { min: number; max: number }) => (min === max ? `${min}` : `${min}–${max}`);
		const perMode = REQUESTED_MODES.filter((mode) => (result.by_mode?.[mode] ?? 0) > 0 && result.credits_by_mode)
			.map((mode) => `${mode} ${range(result.credits_by_mode![mode])}`)
			.join(", ");
		parts.push(`est. ${range(result.credits)} credits${perMode ? ` (${perMode})` : ""}`);
	}
	if (result.warnings.length > 0) parts.push(plural(result.warnings.length, "warning"));
	return parts.join(", ");
}

/** A job file as its valid summary names it: relative to the current folder inside it, else absolute. */
function asTyped(cwd: string, path: string): string {
	const absolute = resolve(cwd, path);
	const inside = relative(cwd, absolute);
	return inside === "" || inside.startsWith("..") || isAbsolute(inside) ? absolute : inside;
}

export async function validateJob(ctx: CliContext, path: string, flags: ValidateFlags): Promise<JobValidation> {
	const checkSources = flags.sources !== false;
	try {
		const { job, warnings, counts } = await loadJobWorded(
			path,
			{
				env: ctx.env,
				cwd: ctx.cwd,
				checkSources,
				signal: ctx.signal,
			},
			CLI_WORDS,
		);
		return {
			file: job.displayFile,
			valid: true,
			name: job.name,
			targets: counts?.targets ?? null,
			inline_targets: job.targets.length,
			duplicates: counts?.duplicates ?? null,
			skipped_rows: counts?.skippedRows ?? null,
			by_mode: counts?.byMode ?? null,
			credits: counts?.creditRange ?? null,
			credits_by_mode: counts?.creditRangeByMode ?? null,
			errors: [],
			warnings,
		};
	} catch (error) {
		if (!(error instanceof JobValidationError)) throw error;
		const errors = error.problems.filter((p) => p.severity === "error");
		return {
			// The job file, as a valid one is named: its first problem may be in a source (a CSV's row).
			file: asTyped(ctx.cwd, path),
			valid: false,
			name: null,
			targets: null,
			inline_targets: null,
			duplicates: null,
			skipped_rows: null,
			by_mode: null,
			credits: null,
			credits_by_mode: null,
			errors,
			warnings: error.problems.filter((p) => p.severity === "warning"),
		};
	}
}

export async function runValidate(ctx: CliContext, paths: string[], flags: ValidateFlags): Promise<void> {
	const results: JobValidation[] = [];
	for (const path of paths) {
		let result: JobValidation;
		try {
			result = await validateJob(ctx, path, flags);
		} catch (error) {
			// Stopped (Ctrl-C) or failed outright: a script reading `--json` still learns why, as from `run`.
			if (flags.json) printJsonError(ctx, error);
			throw error;
		}
		results.push(result);
		if (flags.json) continue;
		for (const problem of [...result.errors, ...result.warnings]) writeLine(ctx.stderr, formatProblem(problem));
		if (result.valid) writeLine(ctx.stdout, describeValidJob(result));
		else writeLine(ctx.stderr, `${result.file}: invalid, ${plural(result.errors.length, "problem")}`);
	}
	const valid = results.every((result) => result.valid);
	if (flags.json) writeJson(ctx.stdout, { valid, jobs: results });
	if (!valid) ctx.exitCode = EXIT.invalidInput;
}
