import type { HostCost } from "../../history/index.js";

/** What one target's record cost: every fetch, the first fetch, the last (they differ only under `mode: adaptive`). */
export interface TargetCost {
	readonly total: number;
	readonly first: number;
	readonly last: number;
}

interface HostTotals {
	targets: number;
	credits: number;
	creditsSq: number;
	first: number;
	firstSq: number;
	last: number;
	lastSq: number;
	/** The targets' static ranges (docs/service.md, "Modes and costs"), for a host the store knows nothing of. */
	min: number;
	max: number;
}

/** One host's targets in a run, with their static cost range (what the forecast scales). */
export interface HostTargets {
	readonly host: string;
	readonly targets: number;
	readonly min: number;
	readonly max: number;
}

/** `scheme://host[:port]` with a plain lower-case host: read without parsing the URL. */
const PLAIN_ORIGIN = /^https?:\/\/([a-z0-9.-]+)(?::\d+)?(?:[/?#]|$)/;

/**
 * The host of a URL as the store keys costs: no public-suffix list needed (hosts are grouped later). The
 * usual URL is read by one regular expression (a run adds one a record); anything else is parsed.
 */
export function hostOf(url: string): string {
	const plain = PLAIN_ORIGIN.exec(url);
	if (plain) return plain[1]!;
	try {
		return new URL(url).hostname;
	} catch {
		return url;
	}
}

/**
 * What this session's records cost per host (sums and sums of squares: the forecast's mean and spread),
 * kept in the job's store when the run ends (src/history/domain-modes.ts).
 */
export function createHostCosts() {
	const hosts = new Map<string, HostTotals>();
	let spent = 0;
	return {
		/** One written record of a scraper target: what all its fetches, its first and its last cost. */
		add(
			url: string,
			total: number,
			first: number,
			last: number,
			range: { readonly min: number; readonly max: number },
		): void {
			const host = hostOf(url);
			let totals = hosts.get(host);
			if (!totals) {
				totals = { targets: 0, credits: 0, creditsSq: 0, first: 0, firstSq: 0, last: 0, lastSq: 0, min: 0, max: 0 };
				hosts.set(host, totals);
			}
			totals.targets += 1;
			totals.credits += total;
			totals.creditsSq += total * total;
			totals.first += first;
			totals.firstSq += first * first;
			totals.last += last;
			totals.lastSq += last * last;
			totals.min += range.min;
			totals.max += range.max;
			spent += total;
		},
		/** Credits of the records added. */
		get spent(): number {
			return spent;
		},
		rows(): HostCost[] {
			return [...hosts].map(([host, t]) => ({
				host,
				targets: t.targets,
				credits: t.credits,
				creditsSq: t.creditsSq,
				first: t.first,
				firstSq: t.firstSq,
				last: t.last,
				lastSq: t.lastSq,
			}));
		},
		targets(): HostTargets[] {
			return [...hosts].map(([host, t]) => ({ host, targets: t.targets, min: t.min, max: t.max }));
		},
	};
}
export type HostCosts = ReturnType<typeof createHostCosts>;
