import type { Command } from "commander";
import { isNotTheService, ScraperNotFoundError } from "../../api/index.js";
import { connectScraper } from "../../library/index.js";
import { type CliContext, useColor, writeJson, writeLine } from "../context.js";
import { createStyle } from "../format/index.js";
import { answeringErrorsInJson } from "../json-error.js";
import { addServiceOptions, connectService, type ServiceFlags } from "../service-connection.js";

export interface HealthFlags extends ServiceFlags {
	json?: boolean;
}

export function registerHealthCommand(program: Command, ctx: CliContext): void {
	const command = program
		.command("health")
		.description("check scraper connectivity and the scraper key (costs no credits)")
		.option("--json", "print {ok, endpoint, key_source, rate_limit: {limit, remaining}}");
	addServiceOptions(command);
	command.addHelpText(
		"after",
		`
Calls GET {scraper_url}/scraper/health. The scraper key comes from SCRAPEJOB_SCRAPER_KEY or, without
it, from the account (GET /public/scraper with SCRAPEJOB_ACCOUNT_KEY). Prints the concurrency limit and
the free slots the service reports (X-RateLimit-Limit, X-RateLimit-Remaining).
Exit codes: 0 healthy · 3 key refused, no scraper access, unreachable, or an address that is not the
service · 1 another error answer (a 5xx is 3).

Examples:
  npx scrapejob health
  npx scrapejob health --sandbox --json`,
	);
	command.action((flags: HealthFlags) => answeringErrorsInJson(ctx, flags.json === true, () => runHealth(ctx, flags)));
}

export async function runHealth(ctx: CliContext, flags: HealthFlags): Promise<void> {
	const connection = await connectService(ctx, flags);
	try {
		const scraper = await connectScraper(ctx, connection);
		// The same answer that ends a run with exit 3 (an address that is not the service) says so here too.
		const { headers } = await scraper.client.health(ctx.signal).catch((error: unknown) => {
			throw isNotTheService(error) ? new ScraperNotFoundError(scraper.client.baseUrl, error) : error;
		});
		const limit = headers.rateLimitLimit ?? null;
		const remaining = headers.rateLimitRemaining ?? null;
		if (flags.json) {
			writeJson(ctx.stdout, {
				ok: true,
				endpoint: scraper.endpoint,
				key_source: scraper.keySource,
				rate_limit: { limit, remaining },
			});
			return;
		}
		const style = createStyle(useColor(ctx, ctx.stdout));
		writeLine(ctx.stdout, `scraper ${style.green("ok")}`);
		writeLine(ctx.stdout, `  endpoint     ${scraper.endpoint}`);
		writeLine(
			ctx.stdout,
			`  key          ${scraper.maskedKey} (from ${scraper.keySource === "account" ? "the account" : "SCRAPEJOB_SCRAPER_KEY"})`,
		);
		writeLine(
			ctx.stdout,
			`  concurrency  limit ${limit ?? "not reported"}, remaining ${remaining ?? "not reported"} (X-RateLimit-Limit / X-RateLimit-Remaining)`,
		);
	} finally {
		await connection.close();
	}
}
