/** The exit codes of the product contract (docs/reference/exit-codes.md); users' cron scripts match on them. */
export const EXIT = {
	ok: 0,
	someTargetsFailed: 1,
	/** A look-up (`targeting --search`) found nothing: the same 1, named for what it means there. */
	noMatch: 1,
	invalidInput: 2,
	authOrCredits: 3,
	lockHeld: 4,
	/** The output could not be written (full disk, read-only folder): nothing more was sent. */
	outputFailed: 5,
	/** The run ended with a domain's paid-failure breaker open: its targets are parked for a later run. */
	breakerOpen: 6,
	interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
