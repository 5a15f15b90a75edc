import type { Logger } from "pino";
import type { ScraperClient } from "../../api/index.js";
import { type Clock, formatDuration, type Sleep } from "../../common/index.js";
import { createOutageMonitor, type OutageMonitor } from "./outage-monitor.js";
import type { SendGate } from "./send-gate.js";
import type { StopController } from "./stop-controller.js";

export interface OutageWatchParts {
	readonly gate: SendGate;
	readonly client: ScraperClient;
	readonly stops: StopController;
	readonly clock: Clock;
	readonly sleep: Sleep;
	/** `outage_timeout`: how long the service may stay down before the run stops, ms. */
	readonly timeoutMs: number;
	/** run.log's logger: each outage is a pause window the report marks on its timeline. */
	readonly log: Logger;
	/** The terminal's. */
	readonly logger?: Logger;
}

/**
 * The run's outage monitor (outage-monitor.ts), told where to say so: each outage and its end in
 * run.log and on the terminal, and past `outage_timeout` a stop (`service_unavailable`).
 */
export function watchOutages(parts: OutageWatchParts): OutageMonitor {
	const { log, logger, stops, timeoutMs } = parts;
	return createOutageMonitor({
		gate: parts.gate,
		probe: (signal) => parts.client.health(AbortSignal.any([signal, stops.inflight])),
		clock: parts.clock,
		sleep: parts.sleep,
		timeoutMs,
		onOutage: () => {
			log.warn(
				{ event: "pause", reason: "service_unavailable", outage: true },
				"the service looks down: every send paused while /scraper/health is probed",
			);
			logger?.warn(
				{ reason: "service_unavailable" },
				"the service looks down: all fetches paused, probing /scraper/health",
			);
		},
		onRecovered: (outageMs) => {
			log.warn(
				{ event: "pause", reason: "service_unavailable", pause_ms: outageMs, recovered: true },
				"the service answers again: sends resumed",
			);
			logger?.warn(
				{ outage_ms: outageMs },
				`the service answers again after ${formatDuration(outageMs)}: fetches resumed`,
			);
		},
		onTimeout: (outageMs) => {
			log.warn({ event: "pause", reason: "service_unavailable", pause_ms: outageMs }, "outage_timeout passed");
			stops.stop(
				"service_unavailable",
				`stopping: the service has been unreachable for ${formatDuration(outageMs)} (outage_timeout ${formatDuration(timeoutMs)}); the targets it failed have no record: finish with ${stops.words.resumeOn}`,
			);
		},
	});
}
