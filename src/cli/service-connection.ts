import type { Command } from "commander";

export {
	connectService,
	MissingKeyError,
	noKeyError,
	requireAccount,
	type ServiceConnection,
	type ServiceFlags,
} from "../library/index.js";

/** Flags every command that talks to the service accepts (`ServiceFlags`). */
export function addServiceOptions(command: Command): Command {
	return command
		.option("--config <file>", "KEY=VALUE file setting SCRAPEJOB_* variables (flags and env win over it)")
		.option("--api-url <url>", "account API base address (env SCRAPEJOB_API_URL)")
		.option("--scraper-url <url>", "scraper API base address, ending in /api/v1 (env SCRAPEJOB_SCRAPER_URL)")
		.option("--sandbox", "start the local emulator in-process (with a demo site) and use it instead of the service");
}
