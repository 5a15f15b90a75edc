import type { Command } from "commander";
import { DEFAULT_SCRAPER_URL, type ScraperClient } from "../../api/index.js";
import { maskSecret, ScrapejobError } from "../../shared/index.js";
import { type CliContext, useColor, writeJson, writeLine } from "../context.js";
import { createStyle } from "../format/index.js";
import {
	addServiceOptions,
	connectService,
	noKeyError,
	type ServiceConnection,
	type ServiceFlags,
} from "../service-connection.js";

/** The account has no scraper access (`has_access: false`, `api_key: null`, spec 2.3). Exit 3, like a refused key. */
export class NoScraperAccessError extends ScrapejobError {
	constructor(message: string) {
		super("SCRAPEJOB_NO_ACCESS", message);
	}
}

export interface HealthFlags extends ServiceFlags {
	json?: boolean;
}

/** A scraper client and where its key and address came from (never the key itself). */
export interface ScraperAccessPoint {
	readonly client: ScraperClient;
	readonly endpoint: string;
	readonly keySource: "SCRAPEJOB_SCRAPER_KEY" | "account";
	/** Masked (`ab…yz`), for display. */
	readonly maskedKey: string;
}

/**
 * The scraper key from SCRAPEJOB_SCRAPER_KEY, else learned from the account's GET /public/scraper
 * (`api_key` and `endpoint_url`) — the same order `run` uses, so `health` checks what a run would use.
 */
export async function connectScraper(ctx: CliContext, connection: ServiceConnection): Promise<ScraperAccessPoint> {
	const configured = connection.config.scraperKey;
	if (configured) {
		const endpoint = connection.config.scraperUrl ?? DEFAULT_SCRAPER_URL;
		return {
			client: connection.scraper(configured, endpoint),
			endpoint,
			keySource: "SCRAPEJOB_SCRAPER_KEY",
			maskedKey: maskSecret(configured),
		};
	}
	if (!connection.account) throw noKeyError();
	const access = await connection.account.scraperAccess(ctx.signal);
	if (!access.has_access || !access.api_key) {
		throw new NoScraperAccessError(
			"the account has no scraper access (GET /public/scraper: has_access false); add scraper access to the account first",
		);
	}
	// A configured address wins over the account's, as it does everywhere (flags > env > config).
	const endpoint = connection.config.scraperUrl ?? access.endpoint_url;
	return {
		client: connection.scraper(access.api_key, endpoint),
		endpoint,
		keySource: "account",
		maskedKey: maskSecret(access.api_key),
	};
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
Exit codes: 0 healthy · 3 key refused or no scraper access · 1 unreachable.

Examples:
  scrapejob health
  scrapejob health --sandbox --json`,
	);
	command.action(async (flags: HealthFlags) => {
		await runHealth(ctx, flags);
	});
}

export async function runHealth(ctx: CliContext, flags: HealthFlags): Promise<void> {
	const connection = await connectService(ctx, flags);
	try {
		const scraper = await connectScraper(ctx, connection);
		const { headers } = await scraper.client.health(ctx.signal);
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
