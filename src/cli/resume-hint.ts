import { basename, dirname, relative } from "node:path";
import type { Job } from "../job/index.js";
import { listRuns } from "../run/index.js";

interface ResumeFlags {
	readonly out: string;
	readonly sandbox?: boolean;
	readonly config?: string;
}

/** A word safe to paste into a POSIX shell: as is when plain, else single-quoted. */
function shellWord(word: string): string {
	return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command that resumes THIS run: the same job file, `--out` when it was not the default, the
 * run id when a newer run of the job exists (plain `--resume` picks the newest), and the flags that
 * chose the service (`--sandbox`, `--config`), so pasting it continues where the run stopped.
 */
export function resumeCommand(ctx: { cwd: string }, job: Job, flags: ResumeFlags, runDir: string): string {
	const words = ["scrapejob", "run", relative(ctx.cwd, job.file) || job.file];
	if (flags.out !== "output") words.push("--out", flags.out);
	if (flags.sandbox) words.push("--sandbox");
	if (flags.config) words.push("--config", flags.config);
	words.push("--resume");
	const runId = basename(runDir);
	if (listRuns(dirname(runDir))[0]?.runId !== runId) words.push(runId);
	return words.map(shellWord).join(" ");
}
