import type { Command } from "commander";

export {
	connectService,
	MissingKeyError,
	noKeyError,
	requireAccount,
	type ServiceConnection,
	type ServiceFlags,
} from "../library/index.js";

import { SANDBOX_SCENARIO } from "../library/index.js";

/**
 * One line saying how the sandbox behaves, so that a first local run's retries and tasks are no
 * surprise (its figures are SANDBOX_SCENARIO's own).
 */
export function sandboxNotice(): string {
	const unavailable = SANDBOX_SCENARIO.faults.find((fault) => fault.kind === "unavailable")?.probability ?? 0;
	return `sandbox: the local emulator plays a real service on a fair day: ${SANDBOX_SCENARIO.latency_ms} ms latency per request, ${Math.round(unavailable * 100)} % of requests answered 503 (retried: they show as retries), realtime fetches over ${SANDBOX_SCENARIO.timeout_ms / 1000} s become tasks, concurrency ${SANDBOX_SCENARIO.concurrency}; credits start afresh each run`;
}

/** Flags every command that talks to the service accepts (`ServiceFlags`). */
export function addServiceOptions(command: Command): Command {
	return command
		.option("--config <file>", "KEY=VALUE file setting SCRAPEJOB_* variables (flags and env win over it)")
		.option("--api-url <url>", "account API base address (env SCRAPEJOB_API_URL)")
		.option("--scraper-url <url>", "scraper API base address, ending in /api/v1 (env SCRAPEJOB_SCRAPER_URL)")
		.option("--sandbox", "start the local emulator in-process (with a demo site) and use it instead of the service");
}
