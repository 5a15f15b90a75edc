import { EXIT } from "../common/index.js";

export { EXIT, type ExitCode } from "../common/index.js";

/** One exit code of `run`: what it means, and what a scheduler (cron, Kubernetes) should do on it. */
export interface RunExitRow {
	readonly code: number;
	readonly meaning: string;
	readonly scheduler: string;
}

/**
 * `run`'s exit codes for schedulers: `run --help` prints this table and docs/reference/exit-codes.md carries the same
 * rows (a test holds them equal). The rule: retry only what a retry can fix — never a finished run.
 */
export const RUN_EXIT_TABLE: readonly RunExitRow[] = [
	{ code: EXIT.ok, meaning: "the run completed, every target ok (or nothing was left to do)", scheduler: "done" },
	{
		code: EXIT.someTargetsFailed,
		meaning:
			"the run ended with failed targets, at max_credits, at a crawl's max_pages, or with its data contract broken",
		scheduler:
			"do not retry: a new run would pay again; the next scheduled run (--continue) fetches the failed targets, never fresh; a run stopped at max_credits stays stopped (--continue resumes it within its budget) until resumed with a larger --max-credits (the printed hint); a crawl stopped at max_pages is done: the next --continue is a new crawl, or resumes it once max_pages is raised in the job",
	},
	{
		code: EXIT.invalidInput,
		meaning: "invalid job file or usage: nothing was sent",
		scheduler: "fail: a retry cannot help; fix the job or the command",
	},
	{
		code: EXIT.authOrCredits,
		meaning:
			"key refused, no credits or access, the service unreachable (at start, or past outage_timeout), or a fleet worker's database lost",
		scheduler:
			"retry a few times with backoff, same command (--continue resumes): an outage passes, a refused key does not",
	},
	{
		code: EXIT.lockHeld,
		meaning: "another process holds the job's lock (nothing was sent), or took it over during the run (lease lost)",
		scheduler: "retry after the lease (30 s), same command",
	},
	{
		code: EXIT.outputFailed,
		meaning: "the output could not be written (full disk, read-only folder): nothing more was sent",
		scheduler:
			"fail and alert: once there is room, the printed --resume command finishes the run, or the same command with --continue (without either, a new run pays again)",
	},
	{
		code: EXIT.breakerOpen,
		meaning:
			"the run ended with a domain's breaker open (its fetches were charged and useless or failed): its remaining targets are parked, the rest done",
		scheduler:
			"do not retry now: a retry pays the same block again; fix the cause (mode, proxy, block) or wait, then --resume / the next scheduled run (--continue) fetches the parked targets: before the breaker's cool_down is over it sends nothing, after it one target probes first",
	},
	{
		code: EXIT.interrupted,
		meaning: "interrupted (SIGINT, SIGTERM): the records written so far are kept",
		scheduler: "retry, same command (--continue resumes)",
	},
	{
		code: 137,
		meaning: "killed (SIGKILL: out of memory, or a stop past the grace period); set by the system, not by scrapejob",
		scheduler: "retry, same command (--continue resumes; a dead holder's lock is taken over)",
	},
];
