import { type Clock, createDomainLookup, hostOfUrl, isoTime } from "../../common/index.js";
import type { BreakerSpec } from "../../job/index.js";
import type { BreakerReport, CarriedBreaker } from "../../output/index.js";

/** What a target of a domain may do: be fetched, be the half-open breaker's one probe, or wait parked. */
export type Admission = "fetch" | "probe" | "park";

/** What the breaker reads of a written record. */
export interface JudgedRecord {
	readonly id: string;
	readonly credits_used: number;
	readonly useful?: boolean;
	readonly useless_reason?: string | null;
}

export interface Breakers {
	/** The breaker's key of a target URL (its host; grouped by registrable domain inside): once per target. */
	keyOf(url: string): string;
	/**
	 * Whether target `targetId` of `key` is fetched; a parked one's worst case counts as saved. A promise only
	 * where the answer is someone else's (a fleet's breaker not closed) or the probe's (a local breaker whose
	 * probe is in flight): the usual answer costs no microtask.
	 */
	admit(key: string, worstCase: number, targetId: string): Admission | Promise<Admission>;
	/** A written record of `key`: charged ones count; a probe's answer closes (useful) or re-opens the breaker. */
	settle(key: string, record: JudgedRecord, probe: boolean): void;
	/**
	 * A charged attempt of target `targetId` of `key` failed and its retry is due: it counts in the window
	 * now, as one wrong charged fetch (its record counts only its last). False once the breaker is not
	 * closed: the retry is not sent. A promise where the window is someone else's (a fleet's row).
	 */
	failedAttempt(key: string, targetId: string, reason: string): boolean | Promise<boolean>;
	/** A probe that ended without a record: the next target of `key` may probe instead. */
	probeLost(key: string, targetId: string): void;
	/**
	 * Whether `key`'s breaker is not closed, as this process knows it now (a fleet's: from its last poll):
	 * an adaptive climb of a target admitted before it opened sends no stronger fetch.
	 */
	isOpen(key: string): boolean;
	/** The breakers open now (a probe in flight included), in the order they opened. */
	open(): BreakerReport[];
}

export interface BreakerEvents {
	onOpen?(report: BreakerReport): void;
	onClose?(domain: string): void;
}

interface DomainState {
	/** The latest `window` charged outcomes, true = useless or failed (a ring). */
	readonly outcomes: boolean[];
	next: number;
	bad: number;
	state: "closed" | "open" | "probing";
	openedMs: number;
	reason: string;
	parked: number;
	saved: number;
	/** Targets admitted while the probe is in flight: answered once it is (fetched, parked, or the next probe). */
	readonly waiting: Array<{ readonly worstCase: number; readonly resolve: (admission: Admission) => void }>;
}

/**
 * The per-domain paid-failure breaker (`breaker:`): when `trip` of a domain's latest `window` charged
 * fetches were useless or failed, its breaker opens and its remaining targets are parked — no fetch, no
 * credit, no record — until, `cool_down` after it opened, one target goes as a probe: a useful answer closes
 * it, any other charged answer opens it again. One map look-up per target.
 */
export function createBreakers(
	spec: BreakerSpec,
	clock: Clock,
	events: BreakerEvents = {},
	carried: readonly CarriedBreaker[] = [],
): Breakers {
	const domains = new Map<string, DomainState>();

	/**
	 * Targets are keyed by host; hosts are grouped by registrable domain only once a charged fetch has gone
	 * wrong. Until then every window holds good outcomes only, which never trip a breaker, so starting the
	 * domain windows afresh loses nothing — and a run where nothing goes wrong never loads the public-suffix
	 * list (tldts: a few MB).
	 */
	let byDomain = false;
	const domainOf = createDomainLookup();
	const keyOf = hostOfUrl;
	const bucket = (host: string): string => (byDomain ? domainOf(host) : host);
	const groupByDomain = () => {
		if (byDomain || spec.by === "host") return;
		byDomain = true;
		domains.clear();
	};

	const stateOf = (key: string): DomainState => {
		let state = domains.get(key);
		if (state === undefined) {
			state = {
				outcomes: [],
				next: 0,
				bad: 0,
				state: "closed",
				openedMs: 0,
				reason: "",
				parked: 0,
				saved: 0,
				waiting: [],
			};
			domains.set(key, state);
		}
		return state;
	};

	// An earlier session's open breakers stay open: a resume sends nothing to their domains before their
	// cool-down, then one probe (not a new window of charged fetches).
	if (carried.length > 0) groupByDomain();
	for (const breaker of carried) {
		const state = stateOf(breaker.domain);
		state.state = "open";
		state.openedMs = breaker.openedMs;
		state.reason = breaker.reason;
	}

	const reportOf = (domain: string, state: DomainState): BreakerReport => ({
		domain,
		reason: state.reason,
		opened_at: isoTime(state.openedMs),
		parked: state.parked,
		credits_saved: state.saved,
	});

	/** A target's admission now, or null while the domain's probe is in flight. */
	const decide = (state: DomainState, worstCase: number): Admission | null => {
		if (state.state === "closed") return "fetch";
		if (state.state === "open" && clock() - state.openedMs >= spec.coolDownMs) {
			state.state = "probing";
			return "probe";
		}
		if (state.state === "probing") return null;
		state.parked += 1;
		state.saved += worstCase;
		return "park";
	};

	/** The probe answered (or was lost): the targets that waited for it are admitted as the breaker now says. */
	const release = (state: DomainState) => {
		for (const waiter of state.waiting.splice(0)) {
			const admission = decide(state, waiter.worstCase);
			if (admission === null) state.waiting.push(waiter);
			else waiter.resolve(admission);
		}
	};

	const open = (domain: string, state: DomainState, reason: string) => {
		state.state = "open";
		state.openedMs = clock();
		state.reason = reason;
		events.onOpen?.(reportOf(domain, state));
	};

	/** One charged fetch of a closed breaker's domain into its window (`bad`: useless or failed). */
	const count = (key: string, state: DomainState, bad: boolean, why: string) => {
		if (state.outcomes.length < spec.window) state.outcomes.push(bad);
		else {
			if (state.outcomes[state.next]) state.bad -= 1;
			state.outcomes[state.next] = bad;
			state.next = (state.next + 1) % spec.window;
		}
		if (bad) state.bad += 1;
		if (state.bad >= spec.trip) {
			open(
				key,
				state,
				`${state.bad} of the last ${state.outcomes.length} charged fetches were useless or failed (last: ${why})`,
			);
		}
	};

	return {
		keyOf,
		admit(host, worstCase) {
			const state = domains.get(bucket(host));
			if (state === undefined) return "fetch";
			const admission = decide(state, worstCase);
			if (admission !== null) return admission;
			// Parked now, a target would miss a useful probe's close until the next resume: it waits for it.
			return new Promise<Admission>((resolve) => state.waiting.push({ worstCase, resolve }));
		},
		settle(host, record, probe) {
			if (!probe && record.credits_used > 0 && record.useful !== true) groupByDomain();
			const key = bucket(host);
			const state = stateOf(key);
			if (probe) {
				if (record.credits_used <= 0) {
					state.state = "open";
					state.openedMs = clock() - spec.coolDownMs;
					release(state);
					return;
				}
				if (record.useful === true) {
					state.state = "closed";
					state.outcomes.length = 0;
					state.next = 0;
					state.bad = 0;
					events.onClose?.(key);
				} else {
					open(key, state, `the probe after cool_down was useless: ${record.useless_reason ?? "not useful"}`);
				}
				release(state);
				return;
			}
			// Only charged fetches count; answers of fetches sent before the breaker opened change nothing.
			if (record.credits_used <= 0 || state.state !== "closed") return;
			count(key, state, record.useful !== true, record.useless_reason ?? "not useful");
		},
		failedAttempt(host, _targetId, reason) {
			groupByDomain();
			const key = bucket(host);
			const state = stateOf(key);
			if (state.state !== "closed") return false;
			count(key, state, true, reason);
			return state.state === "closed";
		},
		isOpen(host) {
			const state = domains.get(bucket(host));
			return state !== undefined && state.state !== "closed";
		},
		probeLost(host) {
			const state = domains.get(bucket(host));
			if (state?.state !== "probing") return;
			state.state = "open";
			// Due at once: the next target of the domain probes.
			state.openedMs = clock() - spec.coolDownMs;
			release(state);
		},
		open() {
			const reports: BreakerReport[] = [];
			for (const [domain, state] of domains) if (state.state !== "closed") reports.push(reportOf(domain, state));
			return reports.sort((a, b) => a.opened_at.localeCompare(b.opened_at));
		},
	};
}
