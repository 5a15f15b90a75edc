import { lazyModule } from "../../common/index.js";
import type { DomainMode, HostCost } from "../../history/index.js";
import type { HostTargets } from "./host-costs.js";

/** Public-suffix domains (tldts): loaded only when the store has costs to group. */
const tldts = lazyModule<typeof import("tldts")>("tldts");

/** The normal quantile of a two-sided 80 % interval. */
const Z_80 = 1.2816;

/** A run's expected cost and its 80 % interval, credits. */
export interface Forecast {
	expected: number;
	low: number;
	high: number;
}

/** What the forecast knows of one domain's past: targets, and sums of credits per target and of their squares. */
interface DomainPast {
	targets: number;
	sum: number;
	sumSq: number;
}

function domainOfHost(host: string): string {
	return tldts().getDomain(host) ?? host;
}

const round = (value: number) => Math.round(value * 100) / 100;

/**
 * The forecast of a run's credits (docs/behaviour.md, "Forecast"), or null when the store knows none of its
 * domains. Per registrable domain and price class (mode and proxy), the mean and spread of credits per
 * target in the latest run that fetched each of its hosts so, scaled by this run's targets of the domain; the total's spread adds each target's
 * (independent targets) and the mean's own uncertainty. A domain the store does not know adds its targets'
 * static range (docs/service.md, "Modes and costs"): its middle to the expected figure, its ends to the interval's.
 *
 * Under `mode: adaptive` a domain with a remembered rung is forecast from `last`: what each target pays from
 * the rung the next run starts it on (host-costs.ts), and one where no rung worked from its first fetch (no
 * upgrade is tried).
 */
export function forecastCredits(
	targets: readonly HostTargets[],
	past: readonly HostCost[],
	modes: readonly DomainMode[],
	adaptive: boolean,
): Forecast | null {
	if (past.length === 0 || targets.length === 0) return null;
	const learned = new Map(adaptive ? modes.map((mode) => [mode.domain, mode.useful] as const) : []);
	// Per domain and price class: a job switched from `request` to `browser` is not forecast at the old price.
	const known = new Map<string, DomainPast>();
	for (const cost of past) {
		const domain = domainOfHost(cost.host);
		const key = `${domain} ${cost.price}`;
		const useful = learned.get(domain);
		const [sum, sumSq] =
			useful === true
				? [cost.last, cost.lastSq]
				: useful === false
					? [cost.first, cost.firstSq]
					: [cost.credits, cost.creditsSq];
		const entry = known.get(key) ?? { targets: 0, sum: 0, sumSq: 0 };
		entry.targets += cost.targets;
		entry.sum += sum;
		entry.sumSq += sumSq;
		known.set(key, entry);
	}
	const now = new Map<string, HostTargets>();
	for (const host of targets) {
		const key = `${domainOfHost(host.host)} ${host.price}`;
		const entry = now.get(key);
		now.set(
			key,
			entry
				? { ...entry, targets: entry.targets + host.targets, min: entry.min + host.min, max: entry.max + host.max }
				: { ...host, host: domainOfHost(host.host) },
		);
	}
	let expected = 0;
	let variance = 0;
	let staticLow = 0;
	let staticHigh = 0;
	let anyKnown = false;
	for (const [key, run] of now) {
		// A row kept before costs had classes (price '') stands for any class until one of its class is kept.
		const history = known.get(key) ?? known.get(`${run.host} `);
		if (!history || history.targets === 0) {
			expected += (run.min + run.max) / 2;
			staticLow += run.min;
			staticHigh += run.max;
			continue;
		}
		anyKnown = true;
		const mean = history.sum / history.targets;
		const spread = Math.max(0, history.sumSq / history.targets - mean * mean);
		expected += run.targets * mean;
		variance += run.targets * spread + (run.targets * run.targets * spread) / history.targets;
	}
	if (!anyKnown) return null;
	const knownExpected = expected - (staticLow + staticHigh) / 2;
	const margin = Z_80 * Math.sqrt(variance);
	return {
		expected: round(expected),
		low: round(Math.max(0, knownExpected - margin) + staticLow),
		high: round(knownExpected + margin + staticHigh),
	};
}

/** `summary.forecast`: the forecast, what the run spent on the same targets, and the relative error. */
export function forecastReport(forecast: Forecast, spent: number): Forecast & { spent: number; error: number | null } {
	return {
		...forecast,
		spent: round(spent),
		error:
			forecast.expected > 0 ? Math.round(((spent - forecast.expected) / forecast.expected) * 10_000) / 10_000 : null,
	};
}
