import type { Clock, Sleep } from "../../common/index.js";
import type { SendGate } from "./send-gate.js";

/**
 * Tells an outage from bad luck. One fetch failing with the service unreachable (or a gateway's 5xx)
 * is retried like any failure; `threshold` such failures in a row — of at least two targets, with no
 * answer from the service in between — is the service being down. Once two targets have failed in a row,
 * no attempt is spent (a target cannot tell yet, so it must not be failed by what may be an outage). One
 * target failing again and again while nothing else is in flight is that target's trouble, not an outage. Then the whole queue is held at the send gate,
 * `/scraper/health` is probed with backoff, and the failing fetches wait instead of spending attempts:
 * an outage must not burn the list. Sends resume when a probe answers; the outage ends when a fetch
 * does. Past `timeoutMs` from the outage's first failure the run is stopped (`service_unavailable`).
 */
export interface OutageMonitor {
	/**
	 * A fetch failed with a service-down sign. `count`: the first in a row, retry it as usual; `free`: the
	 * service failed the fetch before this one too, so this may be an outage — retry without spending an
	 * attempt; `outage`: the run is in one — wait at the gate with the whole queue.
	 */
	failed(
		targetId: string,
		othersInFlight?: boolean,
		noAnswer?: boolean,
		/** When the failed fetch was sent, for one the service never answered (the silence began by then). */
		sentAt?: number,
	): "count" | "free" | "outage" | "probe";
	/**
	 * After `probe`: one free health check decides. The service answers: the failure was this target's
	 * (`count`); it does not: the run is in an outage (`outage`, the queue held as for any outage).
	 */
	confirm(signal: AbortSignal): Promise<"count" | "outage">;
	/**
	 * Streaks of service-down failures begun so far: read when a fetch is sent, and given back with its
	 * answer to `answered`.
	 */
	readonly epoch: number;
	/**
	 * The service answered a fetch (anything but a service-down failure). `sentInEpoch`: `epoch` when it
	 * was sent — an answer to a fetch sent before the current streak began says nothing about the service
	 * now (a server being shut down answers what it had in hand), so it does not break the streak.
	 */
	answered(sentInEpoch?: number): void;
	readonly active: boolean;
	/** Outages so far. */
	readonly count: number;
	/** Time spent in outages so far, ms (a running one included). */
	totalMs(): number;
	/** The run is ending: stop probing, let every waiter go. */
	close(): void;
}

export interface OutageMonitorOptions {
	readonly gate: SendGate;
	/** One free health check; resolves when the service answers it. */
	probe(signal: AbortSignal): Promise<unknown>;
	readonly clock: Clock;
	readonly sleep: Sleep;
	/** How long an outage may last before the run stops, ms. */
	readonly timeoutMs: number;
	/** Service-down failures in a row that make an outage. @default 5 */
	readonly threshold?: number;
	/** First wait between probes, ms; doubles up to `maxProbeIntervalMs`. @default 500 */
	readonly probeIntervalMs?: number;
	/** @default 30000 */
	readonly maxProbeIntervalMs?: number;
	onOutage(): void;
	onRecovered(outageMs: number): void;
	onTimeout(outageMs: number): void;
}

export function createOutageMonitor(options: OutageMonitorOptions): OutageMonitor {
	const threshold = options.threshold ?? 5;
	const firstInterval = options.probeIntervalMs ?? 500;
	const maxInterval = options.maxProbeIntervalMs ?? 30_000;
	const probing = new AbortController();
	let streak = 0;
	let streakStartedAt = 0;
	let streakFirstTarget = "";
	let streakTargets = 0;
	let streakEpoch = 0;
	let active = false;
	let startedAt = 0;
	let count = 0;
	let pastMs = 0;
	let releaseHold: (() => void) | null = null;
	let interval = firstInterval;
	let closed = false;

	function hold() {
		if (releaseHold || closed) return;
		releaseHold = options.gate.hold("service_unavailable");
		void probeUntilAnswered();
	}

	/** The run is in an outage from now on (if it was not yet): every send waits at the gate. */
	function inOutage(): "outage" {
		if (!active) {
			active = true;
			count += 1;
			// The outage began with the first failure of the streak, not when it was recognised.
			startedAt = streakStartedAt;
			interval = firstInterval;
			options.onOutage();
		}
		hold();
		return "outage";
	}
	function open() {
		releaseHold?.();
		releaseHold = null;
	}

	async function probeUntilAnswered() {
		while (releaseHold && !closed) {
			const elapsed = options.clock() - startedAt;
			if (elapsed >= options.timeoutMs) {
				options.onTimeout(elapsed);
				open();
				return;
			}
			try {
				await options.sleep(Math.min(interval, options.timeoutMs - elapsed), probing.signal);
			} catch {
				return; // closed
			}
			interval = Math.min(maxInterval, interval * 2);
			if (options.clock() - startedAt >= options.timeoutMs) continue;
			try {
				await options.probe(probing.signal);
				// The service answers again: let fetches try. The outage ends when one of them gets through.
				open();
				return;
			} catch {
				// Still down: probe again after a longer wait.
			}
		}
	}

	return {
		failed(targetId, othersInFlight = false, noAnswer = false, sentAt) {
			if (streak === 0) {
				streakEpoch += 1;
				// A silent service was down from the unanswered send on, not from the client's deadline two
				// minutes later: outage_timeout bounds the whole outage, those minutes included.
				streakStartedAt = noAnswer && sentAt !== undefined ? Math.min(sentAt, options.clock()) : options.clock();
				streakFirstTarget = targetId;
				streakTargets = 1;
			} else if (streakTargets === 1 && targetId !== streakFirstTarget) streakTargets = 2;
			streak += 1;
			// One target failing again: its own trouble — unless fetches of others are still out, whose
			// answers will tell (a server shutting down refuses new connections while it answers old ones).
			if (!active && streakTargets < 2) {
				if (othersInFlight && streak > 1) return "free";
				// No answer at all, and no other fetch out to tell: the service may have died under a run at
				// concurrency 1. Not spent until a free health check says whether it is there.
				return noAnswer && !othersInFlight ? "probe" : "count";
			}
			if (!active && streak < threshold) return "free";
			return inOutage();
		},
		async confirm(signal) {
			if (active) return "outage";
			try {
				await options.probe(signal);
				return "count";
			} catch {
				if (signal.aborted || closed) return "count";
			}
			return inOutage();
		},
		get epoch() {
			return streakEpoch;
		},
		answered(sentInEpoch) {
			if (streak > 0 && sentInEpoch !== undefined && sentInEpoch < streakEpoch) return;
			streak = 0;
			if (!active) return;
			active = false;
			const outageMs = options.clock() - startedAt;
			pastMs += outageMs;
			open();
			options.onRecovered(outageMs);
		},
		get active() {
			return active;
		},
		get count() {
			return count;
		},
		totalMs: () => pastMs + (active ? options.clock() - startedAt : 0),
		close() {
			closed = true;
			probing.abort();
			open();
		},
	};
}
