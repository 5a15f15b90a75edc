import type { PriceClass, PricedRange } from "../../common/index.js";
import type { HostCost } from "../../history/index.js";

/** What one target's record cost: every fetch, the first fetch, the last (they differ only under `mode: adaptive`). */
export interface TargetCost {
	readonly total: number;
	readonly first: number;
	readonly last: number;
	/** Under `mode: adaptive`: where on its ladder it was fetched, and what each fetch cost. */
	readonly climb?: TargetClimb;
}

/** An adaptive target's fetches: its domain, the rungs its options allow, the step it started on, each step's charge. */
export interface TargetClimb {
	readonly domain: string;
	/** Indexes into `LADDER` (adaptive-mode.ts), cheapest first. */
	readonly ladder: readonly number[];
	/** The step of `ladder` its first fetch was on. */
	readonly from: number;
	/** Credits of each fetch, from step `from` up. */
	readonly charges: readonly number[];
}

/** Targets, and sums of credits per target and of their squares. */
interface Sums {
	targets: number;
	sum: number;
	sumSq: number;
}

const noSums = (): Sums => ({ targets: 0, sum: 0, sumSq: 0 });

function addTo(sums: Sums, credits: number): void {
	sums.targets += 1;
	sums.sum += credits;
	sums.sumSq += credits * credits;
}

/**
 * A host's adaptive targets of one domain and ladder, by the step a run might start them on: what they
 * would pay from there (their fetches on that step and above: a target that climbed climbs again), and,
 * for those whose last fetch was below it, that fetch (they are sent on the step next time).
 */
interface LadderCosts {
	readonly domain: string;
	readonly ladder: readonly number[];
	readonly fromStep: Sums[];
	readonly below: Sums[];
	/** Last fetches by the step they were on: what one fetch there costs the domain. */
	readonly lastOn: Sums[];
}

interface HostTotals {
	targets: number;
	credits: number;
	creditsSq: number;
	first: number;
	firstSq: number;
	last: number;
	lastSq: number;
	/** Adaptive targets, kept out of `last` until the run knows the rung each domain's next run starts on. */
	ladders: LadderCosts[] | null;
	/** The targets' static ranges (docs/service.md, "Modes and costs"), for a host the store knows nothing of. */
	min: number;
	max: number;
}

/** One host's targets of one price class in a run, with their static cost range (what the forecast scales). */
export interface HostTargets {
	readonly host: string;
	readonly price: PriceClass;
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
 * What this session's records cost per host and price class (sums and sums of squares: the forecast's mean
 * and spread), kept in the job's store when the run ends (src/history/domain-modes.ts).
 */
export function createHostCosts() {
	// By price class, then host: the class is one of five shared strings, so no key is built a record.
	const classes = new Map<PriceClass, Map<string, HostTotals>>();
	let spent = 0;
	const everyHost = function* (): Generator<[PriceClass, string, HostTotals]> {
		for (const [price, hosts] of classes) for (const [host, totals] of hosts) yield [price, host, totals];
	};
	return {
		/** One written record of a scraper target: what all its fetches, its first and its last cost. */
		add(url: string, total: number, first: number, last: number, range: PricedRange, climb?: TargetClimb): void {
			const host = hostOf(url);
			let hosts = classes.get(range.price);
			if (!hosts) {
				hosts = new Map();
				classes.set(range.price, hosts);
			}
			let totals = hosts.get(host);
			if (!totals) {
				totals = {
					targets: 0,
					credits: 0,
					creditsSq: 0,
					first: 0,
					firstSq: 0,
					last: 0,
					lastSq: 0,
					ladders: null,
					min: 0,
					max: 0,
				};
				hosts.set(host, totals);
			}
			totals.targets += 1;
			totals.credits += total;
			totals.creditsSq += total * total;
			totals.first += first;
			totals.firstSq += first * first;
			if (climb === undefined) {
				totals.last += last;
				totals.lastSq += last * last;
			} else addClimb(totals, climb);
			totals.min += range.min;
			totals.max += range.max;
			spent += total;
		},
		/**
		 * Of the credits added, what an earlier session of a resumed run paid (a record written now carries
		 * it): the store learns the target's whole cost, `spent` is this session's.
		 */
		paidEarlier(credits: number): void {
			spent -= credits;
		},
		/** Credits of the records added, less what earlier sessions paid of them: what this session spent on them. */
		get spent(): number {
			return spent;
		},
		/**
		 * The rows the store keeps. `startOf` names the rung each domain's next run starts on (adaptive-mode.ts):
		 * an adaptive target's `last` is what it pays from that rung up (see `fromStart`).
		 */
		rows(startOf: (domain: string) => number = () => 0): HostCost[] {
			const perRung = lastFetchPerRung([...everyHost()].map(([, , totals]) => totals));
			return [...everyHost()].map(([price, host, t]) => {
				const [last, lastSq] = fromStart(t, startOf, perRung);
				return {
					host,
					price,
					targets: t.targets,
					credits: t.credits,
					creditsSq: t.creditsSq,
					first: t.first,
					firstSq: t.firstSq,
					last,
					lastSq,
				};
			});
		},
		targets(): HostTargets[] {
			return [...everyHost()].map(([price, host, t]) => ({ host, price, targets: t.targets, min: t.min, max: t.max }));
		},
	};
}
export type HostCosts = ReturnType<typeof createHostCosts>;

function addClimb(totals: HostTotals, climb: TargetClimb): void {
	totals.ladders ??= [];
	const { domain, ladder, from, charges } = climb;
	let costs = totals.ladders.find((entry) => entry.ladder === ladder && entry.domain === domain);
	if (!costs) {
		costs = { domain, ladder, fromStep: ladder.map(noSums), below: ladder.map(noSums), lastOn: ladder.map(noSums) };
		totals.ladders.push(costs);
	}
	const lastStep = from + charges.length - 1;
	const last = charges.at(-1)!;
	addTo(costs.lastOn[lastStep]!, last);
	let paid = 0;
	for (let step = ladder.length - 1; step >= 0; step--) {
		if (step > lastStep) addTo(costs.below[step]!, last);
		else {
			// A run starts a domain no lower than any of this run's targets started: below `from` is its whole climb.
			if (step >= from) paid += charges[step - from]!;
			addTo(costs.fromStep[step]!, paid);
		}
	}
}

/** Per rung and domain (`rung domain`): the last fetches of every host's adaptive targets there. */
function lastFetchPerRung(hosts: Iterable<HostTotals>): Map<string, Sums> {
	const perRung = new Map<string, Sums>();
	for (const totals of hosts)
		for (const costs of totals.ladders ?? [])
			costs.ladder.forEach((rung, step) => {
				const on = costs.lastOn[step]!;
				if (on.targets === 0) return;
				const key = `${rung} ${costs.domain}`;
				const entry = perRung.get(key) ?? noSums();
				entry.targets += on.targets;
				entry.sum += on.sum;
				entry.sumSq += on.sumSq;
				perRung.set(key, entry);
			});
	return perRung;
}

/**
 * A host's `last` and `lastSq` under `mode: adaptive`: what each target pays when the next run sends it
 * on its domain's rung. A target fetched there this run pays its fetches from there up again (a page that
 * climbed past it climbs again). One whose last fetch was lower (fetched before its domain climbed, and
 * never needed to) is sent there next time: it counts at what a last fetch on that rung cost the domain,
 * or at its own when none was.
 */
function fromStart(
	totals: HostTotals,
	startOf: (domain: string) => number,
	perRung: Map<string, Sums>,
): [number, number] {
	let last = totals.last;
	let lastSq = totals.lastSq;
	for (const costs of totals.ladders ?? []) {
		const start = startOf(costs.domain);
		const found = costs.ladder.findIndex((rung) => rung >= start);
		const step = found < 0 ? costs.ladder.length - 1 : found;
		const from = costs.fromStep[step]!;
		const below = costs.below[step]!;
		last += from.sum;
		lastSq += from.sumSq;
		if (below.targets === 0) continue;
		const there = perRung.get(`${costs.ladder[step]} ${costs.domain}`);
		if (there === undefined) {
			last += below.sum;
			lastSq += below.sumSq;
			continue;
		}
		last += (below.targets * there.sum) / there.targets;
		lastSq += (below.targets * there.sumSq) / there.targets;
	}
	return [last, lastSq];
}
