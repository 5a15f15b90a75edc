import { basename, dirname, isAbsolute, relative } from "node:path";
import { cliCommand } from "../common/index.js";
import type { Job } from "../job/index.js";
import type { RunSummary } from "../output/index.js";
import { budgetToFinish, listLayoutRuns } from "../run/index.js";

interface ResumeFlags {
	readonly out: string;
	readonly sandbox?: boolean;
	readonly config?: string;
}

/**
 * The job file as a hint names it: relative to the current folder when it lies inside it (as it was most
 * likely typed), else absolute — `../../tmp/x/job.yaml` for a job given as `/tmp/x/job.yaml` is not what
 * the user typed, and breaks when the line is pasted from another folder.
 */
export function jobPathForHint(cwd: string, file: string): string {
	const path = relative(cwd, file);
	return path === "" || path.startsWith("..") || isAbsolute(path) ? file : path;
}

/** `run <job file>` and the flags that pick this run's folder and service: what every hint of a run starts with. */
function runWords(ctx: { cwd: string }, job: Job, flags: ResumeFlags): string[] {
	const words = ["run", jobPathForHint(ctx.cwd, job.file)];
	if (flags.out !== "output") words.push("--out", flags.out);
	if (job.shard) words.push("--shard", `${job.shard.index}/${job.shard.count}`);
	if (flags.sandbox) words.push("--sandbox");
	if (flags.config) words.push("--config", flags.config);
	return words;
}

/**
 * The command that resumes THIS run, as it must be pasted (docs/behaviour.md, "Summaries and hints"):
 * the same job file, `--out` when it was not the default, `--shard I/N` for a shard, the flags that
 * chose the service (`--sandbox`, `--config`), the run id when a newer run of its layout exists (plain
 * `--resume` picks the newest of the shard's own runs, or of the unsharded ones), after a budget stop a
 * larger `--max-credits` (a plain `--resume` keeps the run's budget, so it would stop again at once),
 * and after a source changed under the run `--force` (a plain `--resume` refuses targets that changed).
 */
export function resumeCommand(
	ctx: { cwd: string },
	job: Job,
	flags: ResumeFlags,
	runDir: string,
	stopped?: { summary: Pick<RunSummary, "stopped_reason" | "credits" | "targets">; dearestTarget: number },
): string {
	const words = [...runWords(ctx, job, flags), "--resume"];
	const runId = basename(runDir);
	// Against this shard's own runs, as --resume picks: another shard's newer folder needs no run id.
	if (listLayoutRuns(dirname(runDir), job.shard)[0]?.runId !== runId) words.push(runId);
	if (stopped?.summary.stopped_reason === "budget_exhausted")
		words.push("--max-credits", String(budgetToFinish(stopped.summary, stopped.dearestTarget)));
	// The run stopped because a source changed: a plain --resume refuses changed targets.
	if (stopped?.summary.stopped_reason === "invalid_source") words.push("--force");
	return cliCommand(words);
}

/**
 * A fleet worker's hint: start a worker of the same fleet run again (`--fleet-run NAME --continue`; with
 * a larger `--max-credits` after a budget stop). The database URL is a secret and never printed: it
 * comes from SCRAPEJOB_FLEET_URL or the `--config` file, as it should for every worker; given with
 * `--fleet` it is named as `"$SCRAPEJOB_FLEET_URL"` (left unset, the empty flag is refused: the pasted
 * line can never fall back to a local run that pays for the job again).
 */
export function fleetWorkerCommand(
	ctx: { cwd: string },
	job: Job,
	flags: ResumeFlags & { readonly fleet?: string },
	fleetRun: string | undefined,
	stopped?: { summary: Pick<RunSummary, "stopped_reason" | "fleet">; dearestTarget: number },
): string {
	// Without a name, `--continue` joins the job's newest unfinished fleet run: this one.
	const words = [
		...runWords(ctx, job, flags),
		...(fleetRun === undefined ? [] : ["--fleet-run", fleetRun]),
		"--continue",
	];
	const fleet = stopped?.summary.fleet;
	if (stopped?.summary.stopped_reason === "budget_exhausted" && fleet?.targets && fleet.credits_spent !== null) {
		// The fleet's budget, not this worker's: what the fleet spent and every target left at the dearest.
		const left = fleet.targets.queued + fleet.targets.leased;
		words.push("--max-credits", String(fleet.credits_spent + Math.max(1, left) * Math.max(1, stopped.dearestTarget)));
	}
	const command = cliCommand(words);
	return flags.fleet === undefined ? command : `${command} --fleet "$SCRAPEJOB_FLEET_URL"`;
}

/** The command that repairs THIS run's damaged results.jsonl and finishes it: `--resume RUN_ID --repair`. */
export function repairCommand(ctx: { cwd: string }, job: Job, flags: ResumeFlags, runDir: string): string {
	return cliCommand([...runWords(ctx, job, flags), "--resume", basename(runDir), "--repair"]);
}

/**
 * The command that promotes THIS run when its data contract held it back, and publishes what is then
 * "latest": `export --latest --accept <its folder's name>` (what `history.accept` looks up). An export
 * sends nothing: accepting costs no credit (`run --accept` would also run the job again). Its file is
 * named after the run (`<job>-<run id>.csv` beside the job file's command line), so the command works
 * as printed however often a run is held: it never finds its file there already.
 */
export function acceptCommand(jobFile: string, jobName: string, outRoot: string, runDir: string): string {
	const runId = basename(runDir);
	const words = ["export", jobFile, "--latest", "--out", `${jobName}-${runId}.csv`];
	if (outRoot !== "output") words.push("--from", outRoot);
	words.push("--accept", runId);
	return cliCommand(words);
}
