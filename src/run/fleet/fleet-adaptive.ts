import type { Logger } from "pino";
import { errorMessage } from "../../common/index.js";
import {
	type Fleet,
	type FleetDomainModeChanges,
	type FleetRun,
	keepFleetDomainMode,
	readFleetDomainModes,
} from "../../fleet/index.js";
import type { AdaptiveModes, LearnedMode } from "../economics/adaptive-mode.js";
import type { SharedModes } from "../economics/run-economics.js";

/** How often a worker reads what the other workers learned: a climb costs at most a few fetches meanwhile. */
const POLL_MS = 1_000;

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
 * writes each domain's change as it happens, and reads the others' once a second, so a rung one worker paid
 * to find is not climbed again by every other worker, nor by the next run.
 */
export class FleetAdaptive implements SharedModes {
	readonly remembered: LearnedMode[];
	readonly #deps: FleetAdaptiveDeps;
	#readAt: Date;
	#timer: NodeJS.Timeout | undefined;
	#polling: Promise<void> | null = null;
	readonly #writes = new Set<Promise<void>>();
	#warned = false;

	constructor(deps: FleetAdaptiveDeps) {
		this.#deps = deps;
		this.remembered = [...deps.known.rows];
		this.#readAt = deps.known.readAt;
	}

	learned(mode: LearnedMode): void {
		const { fleet, run, log } = this.#deps;
		const write = keepFleetDomainMode(fleet, run.jobName, run.id, mode).catch((error) => {
			// Not kept: this worker goes on with it; the others find it themselves, at a climb's cost.
			if (this.#warned) return;
			this.#warned = true;
			log.warn(
				{ event: "fleet_write", error: errorMessage(error) },
				"could not share a domain's adaptive mode with the fleet",
			);
		});
		this.#writes.add(write);
		void write.finally(() => this.#writes.delete(write));
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
		await this.#polling;
		await Promise.all(this.#writes);
	}
}
