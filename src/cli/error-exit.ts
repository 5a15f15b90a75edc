import { ScrapejobError } from "../common/index.js";
import { EXIT } from "./exit-codes.js";

/**
 * Map an error's stable code to an exit code. Layers below know nothing of exit codes; they only
 * throw errors with codes. Codes are a closed union (ERROR_CODES): a
 * mapping for a code nothing throws does not compile.
 */
export function exitCodeForError(error: unknown): number {
	if (!(error instanceof ScrapejobError)) return EXIT.someTargetsFailed;
	const code = error.code;
	if (code === "SCRAPEJOB_USAGE" || code === "SCRAPEJOB_JOB_INVALID") return EXIT.invalidInput;
	// An addon built for another Node: the installation is to be fixed, as a bad command line is.
	if (code === "SCRAPEJOB_NATIVE_MODULE") return EXIT.invalidInput;
	// The fleet's tables are newer than this build: an older worker must not write into them.
	if (code === "SCRAPEJOB_FLEET_SCHEMA") return EXIT.invalidInput;
	if (code === "SCRAPEJOB_LOCK_HELD") return EXIT.lockHeld;
	if (code === "SCRAPEJOB_OUTPUT") return EXIT.outputFailed;
	// A request cut short by Ctrl-C (the CLI aborts its signal on SIGINT/SIGTERM).
	if (code === "SCRAPEJOB_ABORTED") return EXIT.interrupted;
	if (code === "SCRAPEJOB_NO_ACCESS") return EXIT.authOrCredits;
	// The service unreachable while setting up (the account look-up): the same class as an outage, exit 3.
	if (code === "SCRAPEJOB_NETWORK") return EXIT.authOrCredits;
	// The fleet's database unreachable or refusing: like an outage, a retry with backoff can help.
	if (code === "SCRAPEJOB_FLEET_DATABASE") return EXIT.authOrCredits;
	// An address that answers, but not as the service (a scraper URL without /api/v1): no fetch can succeed.
	if (code === "SCRAPEJOB_NOT_THE_SERVICE") return EXIT.authOrCredits;
	if (code === "SCRAPEJOB_SERVICE_ERROR") {
		const status = (error as ScrapejobError & { status?: number }).status;
		if (status === 401 || status === 402 || status === 403) return EXIT.authOrCredits;
		if (status !== undefined && status >= 500) return EXIT.authOrCredits;
		if (status === 400 || status === 422) return EXIT.invalidInput;
	}
	return EXIT.someTargetsFailed;
}
