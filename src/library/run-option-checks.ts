import { DURATION_HINT, type OptionWords, parseDuration, UsageError } from "../common/index.js";

/**
 * `--notify`, `--healthcheck` (`notify`, `healthcheck`): an http(s) address, checked before anything is
 * sent (the job key's own rule). The message never echoes the value: a ping URL is a secret.
 */
export function checkHttpUrl(name: string, value: string | undefined): void {
	if (value === undefined) return;
	let parsed: URL | null = null;
	try {
		parsed = typeof value === "string" ? new URL(value) : null;
	} catch {
		// reported below
	}
	if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:"))
		throw new UsageError(
			`${name} must be an http:// or https:// address (the value is not shown: it may hold a secret)`,
		);
}

/** A count the CLI takes as a positive integer (`--concurrency`, `--grace-period`, `--task-poll-ms`; `threads`). */
export function checkPositiveInt(name: string, value: number | undefined): void {
	if (value === undefined) return;
	if (!Number.isInteger(value) || value < 1)
		throw new UsageError(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
}

/** The choices that pick between a new run and a resumed one. */
export interface ResumeChoices {
	readonly resume?: boolean | string;
	readonly continue?: boolean;
	readonly force?: boolean;
	readonly repair?: boolean;
}

/**
 * `--force` and `--repair` act on the run being resumed: without `--resume` or `--continue` they used to
 * start a new run, paid for in full, which nobody asked for. Refused (exit 2) before anything is sent.
 */
export function checkResumeOnlyOptions(options: ResumeChoices, words: OptionWords): void {
	const resuming = (options.resume !== undefined && options.resume !== false) || options.continue === true;
	if (resuming) return;
	const given = [options.force ? words.forceOn : null, options.repair ? words.repairOn : null].filter(
		(word): word is string => word !== null,
	);
	if (given.length === 0) return;
	throw new UsageError(
		`${given.join(" and ")} ${given.length > 1 ? "act" : "acts"} on a resumed run: give ${words.resume} (or ${words.continueOn}) with ${given.length > 1 ? "them" : "it"}; alone, a new run would start, paid for in full`,
	);
}

/** A duration option (`"24h"`, `0`) in ms, or undefined when not given. */
export function durationOption(name: string, value: string | undefined): number | undefined {
	if (value === undefined) return undefined;
	const ms = parseDuration(value);
	if (ms === null) throw new UsageError(`${name} must be ${DURATION_HINT}, got ${JSON.stringify(value)}`);
	return ms;
}

/** The run options a library call gives as values, which the CLI's flags parse and check. */
export interface CheckedRunOptions {
	readonly concurrency?: number;
	readonly maxCredits?: number;
	readonly gracePeriodMs?: number;
	readonly taskPollMs?: number;
	readonly notify?: string;
	readonly healthcheck?: string;
}

/**
 * What `scrapejob run` refuses while parsing its flags (exit 2, nothing sent), `runJobFile` refuses with
 * `UsageError` before it starts anything: a library call must not pay for a run the CLI would refuse
 * (a negative budget, no concurrency) nor fail only at its end (a notify address that is not http).
 */
export function checkRunOptions(options: CheckedRunOptions): void {
	checkPositiveInt("concurrency", options.concurrency);
	checkPositiveInt("gracePeriodMs", options.gracePeriodMs);
	checkPositiveInt("taskPollMs", options.taskPollMs);
	const budget = options.maxCredits;
	if (budget !== undefined && (typeof budget !== "number" || !Number.isFinite(budget) || budget < 0))
		throw new UsageError(`maxCredits must be a number >= 0, got ${JSON.stringify(budget)}`);
	checkHttpUrl("notify", options.notify);
	checkHttpUrl("healthcheck", options.healthcheck);
}
