import type { Logger } from "pino";
import { errorMessage } from "../../common/index.js";
import {
	type Fleet,
	type FleetDomainModeChanges,
	type FleetRun,
	keepFleetDomainModes,
	readFleetDomainModes,
} from "../../fleet/index.js";
import type { AdaptiveModes, LearnedMode } from "../economics/adaptive-mode.js";
import type { SharedModes } from "../economics/run-economics.js";

/** How often a worker reads what the other workers learned: a climb costs at most a few fetches meanwhile. */
const POLL_MS = 1_000;
/** How long a worker's changes wait to go in one statement: a list of many domains is not a write a record. */
const WRITE_BATCH_MS = 250;

export interface FleetAdaptiveDeps {
	readonly fleet: Fleet;
	readonly run: FleetRun;
	/** What the job's fleet runs had learned when this worker joined (`readFleetDomainModes`). */
	readonly known: FleetDomainModeChanges;
	readonly log: Logger;
}

/**
 * `mode: adaptive` across a fleet (docs/behaviour.md, "Adaptive mode"): a worker starts on what the job's
 * fleet runs learned (table `domain_modes`, not the worker's own disk, which the next pod does not have),
 * writes each domain's change within a quarter second (the changes of that time in one statement), and reads
 * the others' once a second, so a rung one worker paid
 * to find is not climbed again by every other worker, nor by the next run.
 */
export class FleetAdaptive implements SharedModes {
	readonly remembered: LearnedMode[];
	readonly #deps: FleetAdaptiveDeps;
	#readAt: Date;
	#timer: NodeJS.Timeout | undefined;
	#polling: Promise<void> | null = null;
	/** Changes not written yet, the latest per domain. */
	#pending = new Map<string, LearnedMode>();
	#flushTimer: NodeJS.Timeout | undefined;
	#writing: Promise<void> = Promise.resolve();
	#warned = false;

	constructor(deps: FleetAdaptiveDeps) {
		this.#deps = deps;
		this.remembered = [...deps.known.rows];
		this.#readAt = deps.known.readAt;
	}

	learned(mode: LearnedMode): void {
		this.#pending.set(mode.domain, mode);
		if (this.#flushTimer !== undefined) return;
		this.#flushTimer = setTimeout(() => {
			this.#flushTimer = undefined;
			this.#flush();
		}, WRITE_BATCH_MS);
		this.#flushTimer.unref();
	}

	/** The pending changes in one statement, after the one before it. */
	#flush(): void {
		if (this.#pending.size === 0) return;
		const batch = [...this.#pending.values()];
		this.#pending = new Map();
		const { fleet, run, log } = this.#deps;
		this.#writing = this.#writing
			.then(() => keepFleetDomainModes(fleet, run.jobName, run.id, batch))
			.catch((error) => {
				// Not kept: this worker goes on with them; the others find them themselves, at a climb's cost.
				if (this.#warned) return;
				this.#warned = true;
				log.warn(
					{ event: "fleet_write", error: errorMessage(error) },
					"could not share the domains' adaptive modes with the fleet",
				);
			});
	}

	follow(adaptive: AdaptiveModes): void {
		const poll = async () => {
			try {
				const changes = await readFleetDomainModes(this.#deps.fleet, this.#deps.run.jobName, this.#readAt);
				for (const row of changes.rows) adaptive.learn(row);
				this.#readAt = changes.readAt;
			} catch {
				// A missed poll: the next one reads from the same time.
			}
		};
		this.#timer = setInterval(() => {
			if (this.#polling !== null) return;
			this.#polling = poll().finally(() => {
				this.#polling = null;
			});
		}, POLL_MS);
		this.#timer.unref();
	}

	/** The polls end; resolves once this worker's findings are written (or failed). */
	async stop(): Promise<void> {
		clearInterval(this.#timer);
		clearTimeout(this.#flushTimer);
		this.#flushTimer = undefined;
		this.#flush();
		await this.#polling;
		await this.#writing;
	}
}
