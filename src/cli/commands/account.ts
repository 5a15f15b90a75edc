import type { Command } from "commander";
import { type BrowserAccess, createSavedItemsClient, type ProxyData, type ScraperAccess } from "../../api/index.js";
import { connectScraper } from "../../library/index.js";
import { type CliContext, useColor, writeJson, writeLine } from "../context.js";
import {
	createStyle,
	describeSavedItems,
	formatMegabytes,
	formatNumber,
	formatSeconds,
	formatTable,
	maskRecordSecrets,
	productName,
	type SavedItemsReport,
	type Style,
} from "../format/index.js";
import { answeringErrorsInJson } from "../json-error.js";
import { addServiceOptions, connectService, requireAccount, type ServiceFlags } from "../service-connection.js";

export interface AccountFlags extends ServiceFlags {
	showSecrets?: boolean;
	json?: boolean;
	saved?: boolean;
}

/** What `account --json` prints: the three records as the service returned them. */
export interface AccountReport {
	readonly proxy: ProxyData;
	readonly scraper: ScraperAccess;
	readonly browser: BrowserAccess;
}

export function registerAccountCommand(program: Command, ctx: CliContext): void {
	const command = program
		.command("account")
		.description("show proxy products and balances, static residential packages, scraper and browser access")
		.option("--show-secrets", "print proxy passwords and API keys in full (masked as ab…yz by default)")
		.option("--json", "print the records as the service returned them: {proxy, scraper, browser}")
		.option(
			"--saved",
			"list the saved configs, schemes, storage configs and schedules instead (--json: {configs, schemes, storage, schedules})",
		);
	addServiceOptions(command);
	command.addHelpText(
		"after",
		`
Reads GET /public, /public/scraper and /public/browser with the account key (SCRAPEJOB_ACCOUNT_KEY).
Balances are in MB (1 GB = 1,000 MB). Passwords and keys are masked unless --show-secrets is given.
With --saved it reads GET /api/v1/account/configs, /schemes, /storage and /schedule with the scraper
key (SCRAPEJOB_SCRAPER_KEY, else the one the account reports); storage credentials stay masked.

Examples:
  npx scrapejob account
  npx scrapejob account --json | jq '.scraper.credits'
  npx scrapejob account --saved
  npx scrapejob account --saved --json | jq '.schedules[] | select(.is_active)'
  npx scrapejob account --sandbox`,
	);
	command.action((flags: AccountFlags) =>
		answeringErrorsInJson(ctx, flags.json === true, async () => {
			await runAccount(ctx, flags);
		}),
	);
}

export async function runAccount(ctx: CliContext, flags: AccountFlags): Promise<void> {
	if (flags.saved) {
		await runSavedItems(ctx, flags);
		return;
	}
	const connection = await connectService(ctx, flags);
	try {
		const account = requireAccount(connection);
		const [proxy, scraper, browser] = await Promise.all([
			account.proxyData(ctx.signal),
			account.scraperAccess(ctx.signal),
			account.browserAccess(ctx.signal),
		]);
		const raw: AccountReport = { proxy, scraper, browser };
		const report = flags.showSecrets ? raw : maskRecordSecrets(raw);
		if (flags.json) {
			writeJson(ctx.stdout, report);
			return;
		}
		const style = createStyle(useColor(ctx, ctx.stdout));
		for (const line of describeAccount(report, style)) writeLine(ctx.stdout, line);
	} finally {
		await connection.close();
	}
}

/**
 * `account --saved`: what the account keeps on the scraper side, read with the scraper key (these
 * endpoints authenticate like the scraper's, docs/service.md, "Saved items"), the four lists at once.
 */
async function runSavedItems(ctx: CliContext, flags: AccountFlags): Promise<void> {
	const connection = await connectService(ctx, flags);
	try {
		const scraper = await connectScraper(ctx, connection);
		const client = createSavedItemsClient({ scraperKey: scraper.secret, baseUrl: scraper.endpoint });
		const [configs, schemes, storage, schedules] = await Promise.all([
			client.configs(ctx.signal),
			client.schemes(ctx.signal),
			client.storage(ctx.signal),
			client.schedules(ctx.signal),
		]);
		const raw: SavedItemsReport = { configs, schemes, storage, schedules };
		const report = flags.showSecrets ? raw : maskRecordSecrets(raw);
		if (flags.json) {
			writeJson(ctx.stdout, report);
			return;
		}
		const style = createStyle(useColor(ctx, ctx.stdout));
		for (const line of describeSavedItems(report, style)) writeLine(ctx.stdout, line);
	} finally {
		await connection.close();
	}
}

interface ProductRow {
	readonly code: string;
	readonly username: string;
	readonly password: string;
	readonly balanceMb: number | undefined;
	readonly endpoint: string;
	readonly httpPort: string;
	readonly socks5Port: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
	return typeof value === "string" || typeof value === "number" ? String(value) : "";
}

/** Products are read tolerantly: the service may add products or leave fields out (the service documents them only for some: docs/service.md, "Account endpoints"). */
function productRow(code: string, value: unknown): ProductRow | undefined {
	if (!isObject(value)) return undefined;
	const ports = isObject(value.ports) ? value.ports : {};
	return {
		code,
		username: text(value.username),
		password: text(value.password),
		balanceMb: typeof value.balance_mb === "number" ? value.balance_mb : undefined,
		endpoint: text(value.endpoint),
		httpPort: text(ports.http),
		socks5Port: text(ports.socks5),
	};
}

/** The report is already masked (or deliberately not); this only lays it out. */
export function describeAccount(report: AccountReport, style: Style): string[] {
	const lines: string[] = [];
	const { static_residential: staticResidential, ...others } = report.proxy.products;
	const rows = Object.entries(others)
		.map(([code, value]) => productRow(code, value))
		.filter((row): row is ProductRow => row !== undefined);

	lines.push(style.bold("Proxy products"));
	if (rows.length === 0) lines.push("  (none)");
	else {
		lines.push(
			...formatTable(
				[
					{ header: "product" },
					{ header: "name" },
					{ header: "endpoint" },
					{ header: "http", align: "right" },
					{ header: "socks5", align: "right" },
					{ header: "balance", align: "right" },
					{ header: "username" },
					{ header: "password" },
				],
				rows.map((row) => [
					row.code,
					productName(row.code),
					row.endpoint,
					row.httpPort,
					row.socks5Port,
					row.balanceMb === undefined ? "" : formatMegabytes(row.balanceMb),
					row.username,
					row.password,
				]),
				{ style, indent: "  " },
			),
		);
	}

	lines.push("", style.bold("Static residential"));
	lines.push(...describeStaticResidential(staticResidential, style));

	const scraper = report.scraper;
	lines.push("", style.bold("Scraper access"));
	lines.push(
		...fields([
			["access", accessText(scraper.has_access, style)],
			["credits", formatNumber(scraper.credits)],
			["concurrency", String(scraper.concurrency)],
			["endpoint", scraper.endpoint_url],
			["API key", scraper.api_key ?? "(none)"],
		]),
	);

	const browser = report.browser;
	lines.push("", style.bold("Browser access"));
	lines.push(
		...fields([
			["access", accessText(browser.has_access, style)],
			["credits", formatNumber(browser.credits)],
			["concurrency", String(browser.concurrency)],
			["max session", formatSeconds(browser.max_session_length_seconds)],
			["WebSocket", browser.endpoint_url],
			["API key", browser.api_key ?? "(none)"],
		]),
	);
	return lines;
}

function accessText(hasAccess: boolean, style: Style): string {
	return hasAccess ? style.green("yes") : style.red("no");
}

function fields(pairs: ReadonlyArray<readonly [string, string]>): string[] {
	const width = Math.max(...pairs.map(([name]) => name.length));
	return pairs.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`);
}

/**
 * Packages as the service's own client reads them (`{expiryDate, ips: [{ipInfo: {ip}, password}]}`,
 * docs/service.md, "Account endpoints"); any other shape is printed as JSON rather than guessed at.
 */
function describeStaticResidential(value: unknown, style: Style): string[] {
	if (!isObject(value)) return ["  (none)"];
	const lines: string[] = [];
	const ports = isObject(value.ports) ? value.ports : undefined;
	if (ports) lines.push(`  ports  http ${text(ports.http)}, socks5 ${text(ports.socks5)}`);
	const packages = Array.isArray(value.packages) ? value.packages : [];
	if (packages.length === 0) {
		lines.push("  no packages");
		return lines;
	}
	const rows: string[][] = [];
	packages.forEach((entry, index) => {
		const number = String(index + 1);
		if (!isObject(entry) || !Array.isArray(entry.ips)) {
			rows.push([number, "", JSON.stringify(entry), ""]);
			return;
		}
		const expires = text(entry.expiryDate);
		if (entry.ips.length === 0) rows.push([number, expires, "(no IPs)", ""]);
		for (const ip of entry.ips) {
			const info = isObject(ip) && isObject(ip.ipInfo) ? ip.ipInfo : {};
			rows.push([number, expires, text(info.ip), isObject(ip) ? text(ip.password) : ""]);
		}
	});
	lines.push(
		...formatTable([{ header: "package" }, { header: "expires" }, { header: "ip" }, { header: "password" }], rows, {
			style,
			indent: "  ",
		}),
	);
	return lines;
}
