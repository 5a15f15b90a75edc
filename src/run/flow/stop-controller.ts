import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import { CLI_WORDS, type OptionWords } from "../../common/index.js";
import { OutputError } from "../../output/index.js";
import type { RunLock } from "../locks/run-lock.js";

/** Why a run stopped before every target had a record. */
export type StopReason =
	| "interrupted"
	| "unauthorized"
	| "insufficient_credits"
	| "forbidden"
	| "invalid_source"
	/** The service stayed unreachable (or 5xx to everything) longer than `outage_timeout`. */
	| "service_unavailable"
	/** `max_credits` reached: the next target's worst case no longer fits. */
	| "budget_exhausted"
	/** The output could not be written (disk full, read-only): nothing more is sent. */
	| "output_failed"
	/** Another process took the job's lock over (this one's lease ran out): nothing more is sent or written. */
	| "lease_lost"
	/** The run completed but broke its data contract: its records are not promoted to "latest" (exit 1). */
	| "contract_failed"
	/** Fetches in a row were charged and failed the same way: not an outage, credits going for nothing (exit 1). */
	| "paid_failures"
	/** A fleet worker lost its database for longer than a lease: its targets pass to the other workers (exit 3). */
	| "fleet_unavailable";

export interface StopControllerOptions {
	/** Stop request (SIGINT/SIGTERM): nothing new starts; in-flight work gets `gracePeriodMs`. */
	readonly signal: AbortSignal;
	/** How long in-flight work may finish after a stop, milliseconds. @default 30000 */
	readonly gracePeriodMs?: number;
	/** The job's lock: a takeover stops the run (`lease_lost`) and fences every write after it. */
	readonly lock: RunLock;
	/** run.log's logger (the folder's). */
	readonly log: Logger;
	/** The terminal's logger (stderr). */
	readonly logger?: Logger;
	/** What a stop request (the signal) says: a re-extraction sends nothing, so "no new fetches" would be wrong. */
	readonly signalMessage?: string;
	/** How the entry point spells the options a stop message names (`--resume`, `resume: true`). @default CLI_WORDS */
	readonly words?: OptionWords;
}

export interface StopController {
	/** The first reason the run stopped (or concluded) with; null while it runs on. */
	readonly reason: StopReason | null;
	/** That reason in words, for the terminal. */
	readonly message: string | null;
	/** How the entry point spells the options: a stop message that names one (`--resume`) says it so. */
	readonly words: OptionWords;
	/** True once any stop was asked for: nothing new may start. */
	readonly stopping: boolean;
	/**
	 * The signal every in-flight fetch, poll and page worker listens on: aborted at once when the output
	 * failed or the lease was lost, else a grace period after the stop.
	 */
	readonly inflight: AbortSignal;
	/**
	 * Aborted as soon as the run stops, whatever the reason: a target waiting between attempts (a backoff,
	 * an outage, a 429's reset) has nothing out at the service, so its wait ends at once rather than after
	 * the grace period — and no new attempt follows it.
	 */
	readonly stopped: AbortSignal;
	/** The output error that stopped the run, if one did. */
	readonly outputFailure: OutputError | null;
	/** Another process took the job's lock over: the folder is not this run's to write any more. */
	readonly leaseLost: boolean;
	/** Stop the run (the first reason wins): listeners run, in-flight work gets its grace period. */
	stop(reason: StopReason, message: string): void;
	/** Run `listener` once, on the first stop (clear the queue, wake waiters). */
	onStop(listener: () => void): void;
	/** A reason found once the work is over (a feed error, a broken contract): kept if none is set yet. */
	conclude(reason: StopReason, message: string | null): void;
	/**
	 * The work is over and every target has its record although a signal asked to stop (it came after
	 * the last target was handed out, and the fetches in flight finished within the grace period): the
	 * run is complete, so the `interrupted` reason is dropped. Other reasons stand. True when dropped.
	 */
	finishedDespiteSignal(): boolean;
	/** An output failure stops the run (`output_failed`); anything else is a bug, thrown on. */
	outputFailed(error: unknown): void;
	/**
	 * Whether this run may append to its folder now: the output has not failed, and the lease is
	 * certainly still ours (fencing: asked before each append, free while the heartbeat is recent).
	 */
	mayWrite(): boolean;
	/**
	 * Asked right after an append: false when the lease turned out to be lost by then (the process was
	 * paused between its `mayWrite` and the write, and another host took the lock over), so the caller
	 * takes its lines back. Free while the heartbeat is recent: the clock is read after the write, so a
	 * recent beat proves the write landed within the lease. A beat that could not be confirmed (an I/O
	 * error) is not a loss: the lines stay, as a record the run paid for.
	 */
	wroteInTime(): boolean;
	/** Run a write when `mayWrite()`; an output error stops the run. Undefined when not run or failed. */
	guardOutput<T>(work: () => T): T | undefined;
	/**
	 * A journal line of what the service charged: as `guardOutput`, but still tried after an output
	 * failure (a page file that failed leaves the journal writable, and a resume counts the charge).
	 */
	guardCharge(work: () => void): void;
	/** Forget the signal and the grace timer (the run is over). */
	close(): void;
}

/**
 * One object that turns every way a run stops — a signal, a lost lease, an outage, the budget, a failed
 * write, a service refusal — into one `reason`, with one grace timer for the work in flight
 * (docs/behaviour.md, "Stops"). The runner's parts ask it; none keeps a flag of its own.
 */
export function createStopController(options: StopControllerOptions): StopController {
	const { log, logger } = options;
	const inflight = new AbortController();
	const stopped = new AbortController();
	// Every in-flight request (and every waiting target) listens on one of these; by design, not a leak.
	setMaxListeners(0, inflight.signal);
	setMaxListeners(0, stopped.signal);
	const listeners: Array<() => void> = [];
	let reason: StopReason | null = null;
	let message: string | null = null;
	let stopping = false;
	let graceTimer: NodeJS.Timeout | undefined;
	let outputFailure: OutputError | null = null;
	let leaseLost = false;

	const stop = (why: StopReason, words: string) => {
		if (stopping) return;
		stopping = true;
		reason = why;
		message = words;
		stopped.abort(new Error(words));
		for (const listener of listeners) listener();
		// run.log is the folder's too: a run that lost its lease writes not even its stop there.
		if (why !== "lease_lost") log.warn({ event: "run_stopping", reason: why }, words);
		logger?.warn({ reason: why }, words);
		// Nothing in flight can be kept once the output failed or the folder is another process's:
		// those fetches end now (abandoned, counted), not after a grace period.
		if (why === "output_failed" || why === "lease_lost") {
			inflight.abort(new Error(words));
			return;
		}
		graceTimer = setTimeout(() => inflight.abort(new Error("grace period over")), options.gracePeriodMs ?? 30_000);
		graceTimer.unref();
	};
	const onSignal = () =>
		stop("interrupted", options.signalMessage ?? "stop requested: no new fetches; in-flight ones may finish");
	options.lock.onLost?.((holder) => {
		leaseLost = true;
		stop(
			"lease_lost",
			`lease lost: ${holder.pid > 0 ? `pid ${holder.pid} on ${holder.host} took the job's lock over` : "the job's lock was taken over and released by another process"} (this run's heartbeat was older than the lease); nothing more is sent or written here`,
		);
	});
	const mayWrite = () => !outputFailure && !leaseLost && options.lock.isHeld();
	const wroteInTime = () => {
		if (leaseLost) return false;
		// A takeover found here reaches the onLost listener above (leaseLost) before isHeld answers.
		options.lock.isHeld();
		return !leaseLost;
	};
	const outputFailed = (error: unknown) => {
		if (!(error instanceof OutputError)) throw error;
		// A write that failed after the lease passed on (the new holder's resume swept its temporary file) is
		// the lost lease, not the disk: the run stops as lease_lost (exit 4), as the fence would have had it.
		if (!wroteInTime()) return;
		outputFailure = error;
		log.error({ event: "output_failed", path: error.path }, error.message);
		stop("output_failed", error.message);
	};

	const controller: StopController = {
		get reason() {
			return reason;
		},
		get message() {
			return message;
		},
		get stopping() {
			return stopping;
		},
		words: options.words ?? CLI_WORDS,
		inflight: inflight.signal,
		stopped: stopped.signal,
		get outputFailure() {
			return outputFailure;
		},
		get leaseLost() {
			return leaseLost;
		},
		stop,
		onStop(listener) {
			listeners.push(listener);
			// Stopped before the listener came (a signal already aborted): it runs now, as it would have.
			if (stopping) listener();
		},
		conclude(why, words) {
			if (reason !== null) return;
			reason = why;
			message = words;
		},
		finishedDespiteSignal() {
			if (reason !== "interrupted") return false;
			reason = null;
			message = null;
			return true;
		},
		outputFailed,
		mayWrite,
		wroteInTime,
		guardOutput(work) {
			if (!mayWrite()) return undefined;
			try {
				return work();
			} catch (error) {
				outputFailed(error);
				return undefined;
			}
		},
		guardCharge(work) {
			if (outputFailure === null) {
				controller.guardOutput(work);
				return;
			}
			if (leaseLost || !options.lock.isHeld()) return;
			try {
				work();
			} catch {
				// The run is stopping for its first output failure already: this one adds nothing to it.
			}
		},
		close() {
			clearTimeout(graceTimer);
			options.signal.removeEventListener("abort", onSignal);
		},
	};
	if (options.signal.aborted) onSignal();
	else options.signal.addEventListener("abort", onSignal, { once: true });
	return controller;
}
