import type { Logger } from "pino";
import {
	addHostCosts,
	type DomainMode,
	type HostCost,
	type JobHistory,
	lockedHint,
	readDomainModes,
	readLatestHostCosts,
	writeDomainModes,
} from "../../history/index.js";
import type { Job } from "../../job/index.js";
import type { RunSummary } from "../../output/index.js";
import { type AdaptiveModes, createAdaptiveModes, type LearnedMode } from "./adaptive-mode.js";
import { forecastCredits, forecastReport } from "./forecast.js";
import { createHostCosts, type HostCosts } from "./host-costs.js";

/** What the target runner needs of a run's economics: the adaptive ladder (null without adaptive targets) and the cost tally. */
export interface TargetEconomics {
	readonly adaptive: AdaptiveModes | null;
	readonly costs: HostCosts;
}

export interface RunEconomics extends TargetEconomics {
	/**
	 * At the end of a session: `summary.modes` and `summary.forecast` added, and what was learned kept in
	 * the job's store (a store that fails is said once; the next run learns again).
	 */
	finish(summary: RunSummary, runId: string, at: string): void;
}

/**
 * Adaptive learning shared beyond this process (a fleet run's workers, fleet-adaptive.ts): what it
 * remembers in place of the job's store, each change made here as it happens, and the others' changes.
 */
export interface SharedModes {
	readonly remembered: readonly DomainMode[];
	learned(mode: LearnedMode): void;
	follow(adaptive: AdaptiveModes): void;
}

/** Whether any of the job's targets may be adaptive: its defaults, a source's or an inline target's options. */
export function usesAdaptive(job: Job): boolean {
	return (
		job.defaults.mode === "adaptive" ||
		job.sources.some((source) => source.options.mode === "adaptive") ||
		job.targets.some((target) => target.params.mode === "adaptive")
	);
}

/**
 * A run's economics (docs/behaviour.md, "Adaptive mode" and "Forecast"): what the job's store remembers
 * of each domain's mode and each host's cost, read when the run starts (before this run adds its own), and
 * written back when it ends.
 */
export function createRunEconomics(
	job: Job,
	history: JobHistory | null,
	options: {
		readonly logger?: Logger | undefined;
		readonly retryingFailures?: boolean;
		readonly shared?: SharedModes | null | undefined;
		/** What an earlier process of a resumed run learned (its journal): a killed one kept nothing in the store. */
		readonly carried?: readonly DomainMode[];
		/** Each domain's change as it happens (the run's journal), for a resume of a process killed before its end. */
		readonly onLearned?: (mode: DomainMode) => void;
	} = {},
): RunEconomics {
	const { logger, shared, onLearned } = options;
	const carried = options.carried ?? [];
	let modes: readonly DomainMode[] = shared?.remembered ?? [];
	let past: HostCost[] = [];
	if (history) {
		try {
			if (!shared) modes = readDomainModes(history.db);
			past = readLatestHostCosts(history.db);
		} catch (error) {
			logger?.warn({ error: lockedHint(error) }, "could not read the job's remembered modes and costs");
		}
	}
	const adaptiveJob = usesAdaptive(job);
	const changed =
		shared || onLearned
			? (mode: LearnedMode) => {
					shared?.learned(mode);
					onLearned?.(mode);
				}
			: undefined;
	const adaptive = adaptiveJob ? createAdaptiveModes(modes, changed) : null;
	if (adaptive) {
		shared?.follow(adaptive);
		for (const found of carried) adaptive.learn(found);
	}
	const costs = createHostCosts();
	let finished = false;
	return {
		adaptive,
		costs,
		finish(summary, runId, at) {
			if (finished) return;
			finished = true;
			const report = adaptive?.report();
			if (report) summary.modes = report;
			const forecast = forecastCredits(costs.targets(), past, modes, adaptiveJob);
			if (forecast) summary.forecast = forecastReport(forecast, costs.spent);
			if (!history) return;
			try {
				// The run's last merge first: these writes would otherwise wait on the writer thread's lock.
				history.settle();
				addHostCosts(history.db, runId, costs.rows(adaptive ? (domain) => adaptive.startOf(domain) : undefined), {
					newHostsOnly: options.retryingFailures === true,
				});
				if (adaptive) {
					// A domain an earlier process learned and this one wrote nothing of is kept as that process left it.
					const rows = adaptive.remembered();
					for (const found of carried) if (!rows.some((row) => row.domain === found.domain)) rows.push(found);
					writeDomainModes(history.db, runId, at, rows);
				}
			} catch (error) {
				logger?.warn(
					{ error: lockedHint(error) },
					"could not keep the run's modes and costs in the job's store; the next run learns them again",
				);
			}
		},
	};
}
