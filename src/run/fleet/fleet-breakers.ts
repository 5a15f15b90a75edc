import { createDomainLookup, hostOfUrl, isoTime } from "../../common/index.js";
import {
	admitTarget,
	breakerWatchList,
	type Fleet,
	type FleetBreaker,
	type FleetBreakerState,
	openBreakers,
	probeLost,
	recordBreakerOutcome,
	settleProbe,
} from "../../fleet/index.js";
import type { BreakerSpec } from "../../job/index.js";
import type { BreakerReport } from "../../output/index.js";
import type { BreakerEvents, Breakers } from "../economics/breaker.js";

/**
 * A fleet run's breakers: started and stopped with the worker, their cool-down read by its claim feed, the
 * watch list brought by the worker's poll of the fleet (`seen`, from fleet-limit.ts).
 */
export type FleetBreakers = Breakers & {
	start(): void;
	stop(): Promise<void>;
	seen(rows: ReadonlyArray<{ readonly domain: string; readonly state: FleetBreakerState }>): void;
	readonly coolDownMs: number;
};

export interface FleetBreakerDeps {
	readonly fleet: Fleet;
	readonly runId: number;
	/** A write about a target: its settlement in the fleet waits for it (the coordination's `later`). */
	readonly track: (targetId: string, write: Promise<unknown>) => void;
	/** The target was parked: its settlement parks it in the fleet instead of returning it to the queue. */
	readonly park: (targetId: string, domain: string, worstCase: number) => void;
}

/**
 * The breakers of a fleet run (docs/behaviour.md, "Breakers"): the same rule as a local run's, kept in one
 * row per domain that every worker reads and writes, so a domain going wrong on one worker parks its
 * targets on all of them. Good outcomes are written only for domains whose window holds wrong ones (a clean
 * run writes nothing); each worker polls which domains those are (in its poll of the fleet's limit, four
 * times a second), and asks the database before fetching a target of one of them: its breaker may have
 * opened on another worker (the target is parked), or be due a probe.
 */
export function createFleetBreakers(
	spec: BreakerSpec,
	deps: FleetBreakerDeps,
	events: BreakerEvents = {},
): FleetBreakers {
	const { fleet, runId } = deps;
	const domainOf = createDomainLookup();
	const bucket = (host: string) => (spec.by === "host" ? host : domainOf(host));
	/** Domains with a breaker not closed, or wrong outcomes in its window: their targets concern the fleet. */
	let watched = new Map<string, FleetBreakerState>();
	let final: BreakerReport[] = [];
	/** The first read of the breakers' rows, until it is in. */
	let firstRead: Promise<void> | null = null;
	/**
	 * Each domain's outcome on its way to its row. A settled target's slot goes to this worker's next claim
	 * before its writes land: a target of the same domain is admitted only after them, or the outcome that
	 * trips the breaker would let this worker's own next fetch through.
	 */
	const writing = new Map<string, Promise<unknown>>();
	const writes = (domain: string, write: Promise<unknown>) => {
		writing.set(domain, write);
		const landed = () => {
			if (writing.get(domain) === write) writing.delete(domain);
		};
		write.then(landed, landed);
	};

	const seen: FleetBreakers["seen"] = (rows) => {
		watched = new Map(rows.map((row) => [row.domain, row.state]));
	};
	const reportOf = (breaker: FleetBreaker): BreakerReport => ({
		domain: breaker.domain,
		reason: breaker.reason,
		opened_at: isoTime(breaker.openedAt.getTime()),
		parked: breaker.parked,
		credits_saved: breaker.creditsSaved,
	});
	const opened = (domain: string, reason: string) => {
		watched.set(domain, "open");
		events.onOpen?.({ domain, reason, opened_at: isoTime(Date.now()), parked: 0, credits_saved: 0 });
	};

	/** A charged fetch's outcome on its way to the domain's row (a good one only to a window that holds wrong ones). */
	const outcome = (domain: string, targetId: string, bad: boolean, why: string): Promise<boolean> => {
		if (!bad && !watched.has(domain)) return Promise.resolve(false);
		if (bad && !watched.has(domain)) watched.set(domain, "closed");
		const write = recordBreakerOutcome(fleet, runId, domain, { bad, why }, spec).then((reason) => {
			if (reason !== null) opened(domain, reason);
			return reason !== null;
		});
		writes(domain, write);
		deps.track(targetId, write);
		return write;
	};

	const admit: Breakers["admit"] = (host, worstCase, targetId) => {
		// Not before the first read of the rows: a worker joining as a probe goes out would take the probe
		// for a plain target (its answer would not settle the probe, and another probe would follow it).
		if (firstRead !== null) return firstRead.then(() => admit(host, worstCase, targetId));
		if (watched.size === 0 && writing.size === 0) return "fetch";
		const domain = bucket(host);
		// A domain with wrong outcomes may have opened on another worker a moment ago: the row decides. (A
		// poll that read the rows before this worker's outcome landed leaves the domain out of `watched`.)
		if (!watched.has(domain) && !writing.has(domain)) return "fetch";
		const ask = () =>
			admitTarget(fleet, { runId, targetId }, domain, spec.coolDownMs).then((admission) => {
				if (admission === "park") deps.park(targetId, domain, worstCase);
				return admission;
			});
		const landing = writing.get(domain);
		return landing === undefined ? ask() : landing.then(ask, ask);
	};

	return {
		coolDownMs: spec.coolDownMs,
		keyOf: hostOfUrl,
		admit,
		isOpen(host) {
			const state = watched.get(bucket(host));
			return state !== undefined && state !== "closed";
		},
		settle(host, record, probe) {
			const domain = bucket(host);
			if (probe) {
				if (record.credits_used <= 0) {
					deps.track(record.id, probeLost(fleet, runId, domain, record.id, spec.coolDownMs));
					return;
				}
				const answer =
					record.useful === true
						? ({ useful: true } as const)
						: ({
								useful: false,
								reason: `the probe after cool_down was useless: ${record.useless_reason ?? "not useful"}`,
							} as const);
				const settled = settleProbe(fleet, runId, domain, record.id, answer).then((changed) => {
					if (!changed) return;
					if (answer.useful) {
						watched.delete(domain);
						events.onClose?.(domain);
					} else opened(domain, answer.reason);
				});
				writes(domain, settled);
				deps.track(record.id, settled);
				return;
			}
			if (record.credits_used <= 0) return;
			// Its failure is the lease's to handle (`track`).
			void outcome(domain, record.id, record.useful !== true, record.useless_reason ?? "not useful");
		},
		failedAttempt(host, targetId, reason) {
			const domain = bucket(host);
			// What this worker last read of the domain's row: one opened elsewhere since stops the retry at its next poll.
			const state = watched.get(domain);
			if (state !== undefined && state !== "closed") return false;
			// The retry waits for the row: the attempt that trips the breaker sends no retry of its own.
			return outcome(domain, targetId, true, reason).then(
				(opened) => !opened && watched.get(domain) === "closed",
				() => true,
			);
		},
		probeLost(host, targetId) {
			deps.track(targetId, probeLost(fleet, runId, bucket(host), targetId, spec.coolDownMs));
		},
		open: () => final,
		seen,
		/** The first read of the watch list, at once: the worker's next poll may be a quarter second away. */
		start() {
			firstRead = breakerWatchList(fleet, runId)
				.then(seen)
				.catch(() => undefined)
				.finally(() => {
					firstRead = null;
				});
		},
		/** The worker ends: read the fleet's breakers not closed, for the summary. */
		async stop() {
			final = (await openBreakers(fleet, runId).catch(() => [])).map(reportOf);
		},
	};
}
