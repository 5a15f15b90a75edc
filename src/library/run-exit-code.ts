import { EXIT } from "../common/index.js";
import type { RunSummary } from "../output/index.js";
import type { StopReason } from "../run/index.js";

/** The summary's fields the exit code is read from. */
export type ExitCodeSummary = Pick<RunSummary, "complete" | "stopped_reason" | "targets" | "extract" | "breakers">;

/**
 * Whether the run ends with exit code 0: it ran to its end (no stop), every target has an ok record,
 * and the required extract fields are filled enough. The CLI's exit code and the pings read this one rule.
 */
export function summarySucceeded(summary: ExitCodeSummary): boolean {
	if (summary.stopped_reason !== null || !summary.complete) return false;
	if ((summary.extract?.below_min_fill.length ?? 0) > 0) return false;
	return summary.targets.by_status.failed + summary.targets.by_status.skipped === 0;
}

/** The exit code a stop reason gives (docs/reference/exit-codes.md). */
function stopExitCode(reason: StopReason): number {
	switch (reason) {
		case "interrupted":
			return EXIT.interrupted;
		case "unauthorized":
		case "insufficient_credits":
		case "forbidden":
		case "service_unavailable":
		case "fleet_unavailable":
			return EXIT.authOrCredits;
		case "budget_exhausted":
		case "contract_failed":
		case "paid_failures":
			return EXIT.someTargetsFailed;
		case "output_failed":
			return EXIT.outputFailed;
		case "invalid_source":
			return EXIT.invalidInput;
		case "lease_lost":
			return EXIT.lockHeld;
		default:
			return unmapped(reason);
	}
}

/** A reason of a newer version's summary: not a success. Typed `never`: a new StopReason must be mapped above. */
function unmapped(_reason: never): number {
	return EXIT.someTargetsFailed;
}

/**
 * The exit code `scrapejob run` ends with for a run that returned this summary (`runJobFile`'s result,
 * a summary.json): 0 done, 1 failed targets / budget / contract, 3 service, 4 lease lost, 5 output,
 * 6 a breaker open, 130 interrupted (docs/reference/exit-codes.md). For a wrapper (a cron script, a
 * Kubernetes Job) that must tell its scheduler what the CLI would.
 */
export function runExitCode(summary: ExitCodeSummary): number {
	if (summary.stopped_reason !== null) return stopExitCode(summary.stopped_reason as StopReason);
	// A domain's breaker open at the end: its targets are parked; a retry now would pay the same block again.
	if ((summary.breakers?.length ?? 0) > 0) return EXIT.breakerOpen;
	return summarySucceeded(summary) ? EXIT.ok : EXIT.someTargetsFailed;
}
