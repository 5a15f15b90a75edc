import { basename, resolve } from "node:path";
import type { Job, TargetCounts } from "../job/index.js";
import { newRunId } from "../output/index.js";
import { listRuns, lockJobOutput, type RunLock, tookOverMessage } from "../run/index.js";
import { UsageError } from "../shared/index.js";
import { type CliContext, writeLine } from "./context.js";

/** One job of a `run` command, with the run it continues or starts and its lock. */
export interface PlannedRun {
	readonly job: Job;
	readonly counts: TargetCounts | null;
	/** The run folder `--resume` continues; undefined for a new run. */
	readonly resumeDir: string | undefined;
	/** The new run's id, or the resumed run's. */
	readonly runId: string;
	lock?: RunLock;
}

/**
 * Which run each job continues (`--resume [RUN_ID]`) or starts. Reads only the output folders: no
 * request is made. A job whose chosen run is already complete is reported and left out.
 */
export function planRuns(
	ctx: CliContext,
	jobs: ReadonlyArray<{ job: Job; counts: TargetCounts | null }>,
	outRoot: string,
	resume: boolean | string | undefined,
): PlannedRun[] {
	const planned: PlannedRun[] = [];
	for (const { job, counts } of jobs) {
		if (resume === undefined || resume === false) {
			planned.push({ job, counts, resumeDir: undefined, runId: newRunId() });
			continue;
		}
		const runs = listRuns(resolve(outRoot, job.name));
		const chosen = typeof resume === "string" ? runs.find((info) => info.runId === resume) : runs[0];
		if (!chosen) {
			throw new UsageError(
				typeof resume === "string"
					? `no run ${resume} of job ${job.name} under ${outRoot}`
					: `no earlier run of job ${job.name} under ${outRoot} to resume`,
			);
		}
		if (chosen.complete) {
			writeLine(ctx.stdout, `${job.name}: run ${chosen.runId} is already complete; nothing to resume.`);
			continue;
		}
		planned.push({ job, counts, resumeDir: chosen.dir, runId: basename(chosen.dir) });
	}
	return planned;
}

/**
 * Take every planned job's lock before the first request: a run that loses a lock (cron overlap)
 * exits having sent nothing. On a refusal the locks already taken are given back.
 */
export function lockPlannedRuns(ctx: CliContext, planned: PlannedRun[], outRoot: string, quiet: boolean): void {
	try {
		const byJobName = new Map<string, RunLock>();
		for (const run of planned) {
			// Two job files of one name share an output folder, and so one lock, held by this process.
			const shared = byJobName.get(run.job.name);
			if (shared) {
				run.lock = shared;
				continue;
			}
			run.lock = lockJobOutput(outRoot, run.job.name, run.runId);
			byJobName.set(run.job.name, run.lock);
			if (run.lock.tookOver && !quiet) writeLine(ctx.stderr, `scrapejob: ${tookOverMessage(run.lock)}`);
		}
	} catch (error) {
		releasePlannedRuns(planned);
		throw error;
	}
}

export function releasePlannedRuns(planned: readonly PlannedRun[]): void {
	for (const run of planned) run.lock?.release();
}
