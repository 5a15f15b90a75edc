/** The exit codes of the product contract (shared/design.md); users' cron scripts match on them. */
export const EXIT = {
	ok: 0,
	someTargetsFailed: 1,
	invalidInput: 2,
	authOrCredits: 3,
	lockHeld: 4,
	interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
