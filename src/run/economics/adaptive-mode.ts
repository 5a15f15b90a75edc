import { createDomainLookup, hostOfUrl, type Mode, type ProxyType, type ScrapeParams } from "../../common/index.js";
import type { DomainMode } from "../../history/index.js";

/** One step of the ladder: a service mode and the proxy it goes through. */
export interface Rung {
	readonly mode: Mode;
	readonly proxyType: ProxyType;
}

/**
 * `mode: adaptive`'s ladder, cheapest first (docs/service.md, "Modes and costs"): 1, 2, 2–6 and 5 credits.
 * `auto` sits below `browser` although it may cost more: it pays a browser only for pages that need one.
 */
export const LADDER: readonly Rung[] = Object.freeze([
	{ mode: "request", proxyType: "datacenter" },
	{ mode: "request", proxyType: "residential" },
	{ mode: "auto", proxyType: "residential" },
	{ mode: "browser", proxyType: "residential" },
]);

/**
 * Failures a stronger mode can fix: the site refused the address or the client (a block, a rate limit
 * per IP, a challenge). A 404, a network or DNS failure, a bad URL are the same in every mode.
 */
const FIXABLE_ERRORS: ReadonlySet<string> = new Set([
	"target_http_401",
	"target_http_403",
	"target_http_429",
	"target_http_503",
]);

/** What the ladder reads of a judged record. */
export interface AdaptiveRecord {
	readonly status: string;
	readonly error: string | null;
	readonly credits_used: number;
	readonly useful?: boolean;
}

/** `summary.modes`: per domain, the rung its next run starts on and what a useful record cost this run. */
export type ModesReport = Record<string, { mode: Mode; proxy_type: ProxyType; credits_per_useful: number | null }>;

interface DomainState {
	/** The ladder index targets of the domain start on: raised to the rung that gave a useful record. */
	start: number;
	/** Every rung was tried and none gave a useful record: fetched on `start` only, no upgrade. */
	hopeless: boolean;
	usefulSeen: boolean;
	credits: number;
	useful: number;
}

export interface AdaptiveModes {
	/** The domain a target URL is learned under: its registrable domain (the breaker's grouping). */
	domainOf(url: string): string;
	/** The rungs a target's own options allow, in ladder order (indexes into `LADDER`). */
	ladderOf(params: ScrapeParams): readonly number[];
	/** Where in `ladder` a target of `domain` starts. */
	firstStep(domain: string, ladder: readonly number[]): number;
	/** Whether a judged record is useless in a way a stronger rung may fix (a useless page, a block). */
	fixable(record: AdaptiveRecord): boolean;
	/** Every rung was tried for a target of `domain` and none gave a useful record: no more upgrades there. */
	isHopeless(domain: string): boolean;
	/** The parameters of one rung: `adaptive` replaced by the rung's mode and proxy. */
	paramsOf(params: ScrapeParams, rung: number): ScrapeParams;
	/** A target's written record, fetched last on `rung`; `exhausted` when its last rung was useless too. */
	settle(domain: string, rung: number, record: AdaptiveRecord, exhausted: boolean): void;
	/**
	 * What another process of the run learned of a domain (a fleet's other workers): its targets here start
	 * no lower, and a domain found useful there is not given up here.
	 */
	learn(found: DomainMode): void;
	/** What the store remembers: domains with a useful rung, and those where none was. */
	remembered(): DomainMode[];
	/** The rung (index into `LADDER`) the domain's targets start on now: where its next run starts. */
	startOf(domain: string): number;
	/** `summary.modes`; absent when no adaptive target was written. */
	report(): ModesReport | undefined;
}

const FULL_LADDER: readonly number[] = Object.freeze(LADDER.map((_, index) => index));
const RESIDENTIAL_LADDER: readonly number[] = Object.freeze([1, 2, 3]);
const DATACENTER_LADDER: readonly number[] = Object.freeze([0]);
const BROWSER_LADDER: readonly number[] = Object.freeze([3]);

/** The ladder index of a remembered mode and proxy; 0 for a pair the ladder does not have. */
function rungOf(mode: string, proxyType: string): number {
	const index = LADDER.findIndex((rung) => rung.mode === mode && rung.proxyType === proxyType);
	return Math.max(index, 0);
}

/** A domain's learned mode as it changed, with its ladder index. */
export interface LearnedMode extends DomainMode {
	readonly rung: number;
}

/**
 * The adaptive ladder of one run (docs/behaviour.md, "Adaptive mode"): each domain starts where the job's
 * store says its last run ended (else on the cheapest rung) and moves up when a record is useless or failed
 * in a way a stronger mode can fix. The domain's later targets start on the rung that worked. `changed`
 * hears each domain's change as it happens (a fleet shares it with the other workers).
 */
export function createAdaptiveModes(
	remembered: readonly DomainMode[],
	changed?: (learned: LearnedMode) => void,
): AdaptiveModes {
	const domains = new Map<string, DomainState>();
	for (const row of remembered) {
		domains.set(row.domain, {
			start: rungOf(row.mode, row.proxyType),
			hopeless: !row.useful,
			usefulSeen: false,
			credits: 0,
			useful: 0,
		});
	}
	/** Which domains this run wrote records of (the report and the store name only those). */
	const touched = new Set<string>();
	const domainOf = createDomainLookup();
	const state = (domain: string): DomainState => {
		let found = domains.get(domain);
		if (!found) {
			found = { start: 0, hopeless: false, usefulSeen: false, credits: 0, useful: 0 };
			domains.set(domain, found);
		}
		return found;
	};

	return {
		domainOf(url) {
			// A text that is not a URL is its own domain.
			const host = hostOfUrl(url);
			return host === url ? url : domainOf(host);
		},
		ladderOf(params) {
			// A screenshot needs a browser; a proxy the job names keeps every rung on it.
			const screenshot = params.screenshot === true || (params.screenshot as unknown) === "true";
			if (screenshot || params.content === "pdf" || params.content === "screenshot") return BROWSER_LADDER;
			if (params.proxy_type === "datacenter") return DATACENTER_LADDER;
			if (params.proxy_type === "residential") return RESIDENTIAL_LADDER;
			return FULL_LADDER;
		},
		firstStep(domain, ladder) {
			const { start } = state(domain);
			const step = ladder.findIndex((rung) => rung >= start);
			return step < 0 ? ladder.length - 1 : step;
		},
		fixable(record) {
			if (record.useful !== false) return false;
			return record.status === "ok" || (record.error !== null && FIXABLE_ERRORS.has(record.error));
		},
		isHopeless(domain) {
			return state(domain).hopeless;
		},
		paramsOf(params, rung) {
			const { mode, proxyType } = LADDER[rung]!;
			return { ...params, mode, proxy_type: proxyType };
		},
		settle(domain, rung, record, exhausted) {
			const domainState = state(domain);
			touched.add(domain);
			domainState.credits += record.credits_used;
			const { start, usefulSeen, hopeless } = domainState;
			if (record.useful === true) {
				domainState.useful += 1;
				domainState.usefulSeen = true;
				domainState.hopeless = false;
				if (rung > domainState.start) domainState.start = rung;
			} else if (exhausted && !domainState.usefulSeen) {
				domainState.hopeless = true;
			}
			const moved =
				domainState.start !== start || domainState.usefulSeen !== usefulSeen || domainState.hopeless !== hopeless;
			if (moved && changed) {
				const { mode, proxyType } = LADDER[domainState.start]!;
				changed({ domain, rung: domainState.start, mode, proxyType, useful: domainState.usefulSeen });
			}
		},
		learn(found) {
			const domainState = state(found.domain);
			const rung = rungOf(found.mode, found.proxyType);
			if (rung > domainState.start) domainState.start = rung;
			if (found.useful) {
				domainState.usefulSeen = true;
				domainState.hopeless = false;
			} else if (!domainState.usefulSeen) {
				domainState.hopeless = true;
			}
		},
		remembered() {
			const rows: DomainMode[] = [];
			for (const domain of touched) {
				const { start, usefulSeen, hopeless } = domains.get(domain)!;
				if (!usefulSeen && !hopeless) continue;
				const { mode, proxyType } = LADDER[start]!;
				rows.push({ domain, mode, proxyType, useful: usefulSeen });
			}
			return rows;
		},
		startOf(domain) {
			return domains.get(domain)?.start ?? 0;
		},
		report() {
			if (touched.size === 0) return undefined;
			const report: ModesReport = {};
			for (const domain of [...touched].sort()) {
				const { start, credits, useful } = domains.get(domain)!;
				const { mode, proxyType } = LADDER[start]!;
				report[domain] = {
					mode,
					proxy_type: proxyType,
					credits_per_useful: useful > 0 ? Math.round((credits / useful) * 1000) / 1000 : null,
				};
			}
			return report;
		},
	};
}

/** A rung in words: `request+datacenter`, `request+residential`, `auto`, `browser`. */
export function rungName(rung: number): string {
	const { mode, proxyType } = LADDER[rung]!;
	return mode === "request" ? `${mode}+${proxyType}` : mode;
}

/** `mode_used` of an adaptive record: the service's word for its last fetch, with the proxy of a request. */
export function adaptiveModeUsed(serviceMode: string | null, rung: number): string {
	const { mode, proxyType } = LADDER[rung]!;
	const used = serviceMode ?? mode;
	return mode === "request" ? `${used}+${proxyType}` : used;
}
