import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccountClient, createAccountClient } from "../../src/api/index.js";
import { collectSecrets, maskRecordSecrets } from "../../src/cli/format/index.js";
import { maskSecret } from "../../src/common/index.js";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { ANSI_PATTERN, type CliRun, runCli } from "./cli-harness.js";

let emulator: Emulator;
let client: AccountClient;
let env: NodeJS.ProcessEnv;
/** Every credential of the emulated account: none may show up in output unless asked for. */
let secrets: string[];

beforeAll(async () => {
	emulator = await startEmulator({ port: 0 });
	client = createAccountClient({ accountKey: emulator.accountKey, baseUrl: emulator.apiUrl });
	env = { SCRAPEJOB_API_URL: emulator.apiUrl, SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey };
	const [proxy, scraper, browser] = await Promise.all([
		client.proxyData(),
		client.scraperAccess(),
		client.browserAccess(),
	]);
	secrets = [emulator.accountKey, ...collectSecrets({ proxy, scraper, browser })];
});

afterAll(async () => {
	await emulator.close();
});

function expectNoSecrets(run: CliRun, except: readonly string[] = []): void {
	expect(secrets.length).toBeGreaterThan(5);
	for (const secret of secrets) {
		if (except.includes(secret)) continue;
		expect(run.stdout).not.toContain(secret);
		expect(run.stderr).not.toContain(secret);
	}
}

describe("scrapejob account", () => {
	it("lists products, balances, static packages, scraper and browser access with secrets masked", async () => {
		const run = await runCli(["account"], { env });
		expect(run.stderr).toBe("");
		expect(run.code).toBe(0);
		const proxy = await client.proxyData();
		const rp = proxy.products.rp as { username: string; password: string };
		const rpc = proxy.products.rpc as { username: string; password: string };
		const lines = run.stdout.split("\n");
		const row = (code: string) => lines.find((line) => line.trimStart().startsWith(`${code} `)) ?? "";
		expect(
			row("rp")
				.trim()
				.split(/\s{2,}/)
				.map((cell) => cell.trim()),
		).toEqual([
			"rp",
			"Premium Residential",
			"premium-residential.evomi.com",
			"1000",
			"1002",
			"1,024.5 MB (1.02 GB)",
			rp.username,
			maskSecret(rp.password),
		]);
		expect(row("rpc")).toContain("133,700.85 MB (133.7 GB)");
		expect(row("rpc")).toContain(rpc.username);
		expect(row("mp")).toMatch(/mp\.evomi\.com\s+3000\s+3002\s+512\.25 MB\s/);
		expect(row("dcp")).toMatch(/dcp\.evomi\.com\s+2000\s+2002\s+2,048 MB \(2\.05 GB\)/);
		expect(run.stdout).toContain("ports  http 12345, socks5 12346");
		expect(run.stdout).toMatch(/1\s+2030-01-01T00:00:00\.000Z\s+203\.0\.113\.10\s+\S+…\S+/);
		expect(run.stdout).toMatch(/2\s+2030-02-01T00:00:00\.000Z\s+203\.0\.113\.12/);
		const scraperSection = run.stdout.slice(run.stdout.indexOf("Scraper access"), run.stdout.indexOf("Browser access"));
		expect(scraperSection).toMatch(/access\s+yes/);
		expect(scraperSection).toMatch(/credits\s+10,000\n/);
		expect(scraperSection).toMatch(/concurrency\s+5\n/);
		expect(scraperSection).toContain(`endpoint     ${emulator.scraperUrl}`);
		expect(scraperSection).toContain(`API key      ${maskSecret(emulator.scraperKey)}`);
		const browserSection = run.stdout.slice(run.stdout.indexOf("Browser access"));
		expect(browserSection).toMatch(/credits\s+1,000\n/);
		expect(browserSection).toMatch(/concurrency\s+3\n/);
		expect(browserSection).toMatch(/max session\s+1 min\n/);
		expect(browserSection).toMatch(/WebSocket\s+ws:\/\/127\.0\.0\.1:\d+\/browser\n/);
		expectNoSecrets(run);
	});

	it("prints passwords and keys in full with --show-secrets", async () => {
		const run = await runCli(["account", "--show-secrets"], { env });
		expect(run.code).toBe(0);
		const proxy = await client.proxyData();
		expect(run.stdout).toContain((proxy.products.rp as { password: string }).password);
		expect(run.stdout).toContain(emulator.scraperKey);
		// The account key is what authenticates the command; it is never part of the records.
		expect(run.stdout).not.toContain(emulator.accountKey);
	});

	it("--json prints the service's records, masked unless --show-secrets", async () => {
		const raw = {
			proxy: await client.proxyData(),
			scraper: await client.scraperAccess(),
			browser: await client.browserAccess(),
		};
		const masked = await runCli(["account", "--json"], { env });
		expect(masked.code).toBe(0);
		expect(JSON.parse(masked.stdout)).toEqual(maskRecordSecrets(raw));
		expect(JSON.parse(masked.stdout).scraper.api_key).toBe(maskSecret(emulator.scraperKey));
		expectNoSecrets(masked);
		const full = await runCli(["account", "--json", "--show-secrets"], { env });
		expect(JSON.parse(full.stdout)).toEqual(raw);
	});

	it("colours only a terminal, and never with NO_COLOR", async () => {
		const tty = await runCli(["account"], { env, isTTY: true });
		expect(tty.stdout).toMatch(ANSI_PATTERN);
		const noColor = await runCli(["account"], { env: { ...env, NO_COLOR: "1" }, isTTY: true });
		expect(noColor.stdout).not.toMatch(ANSI_PATTERN);
		expect(noColor.stdout).toContain("Proxy products");
		const pipe = await runCli(["account"], { env });
		expect(pipe.stdout).not.toMatch(ANSI_PATTERN);
	});

	it("shows accounts without scraper or browser access", async () => {
		const bare = await startEmulator({ port: 0, scenario: { has_scraper_access: false, has_browser_access: false } });
		try {
			const run = await runCli(["account"], {
				env: { SCRAPEJOB_API_URL: bare.apiUrl, SCRAPEJOB_ACCOUNT_KEY: bare.accountKey },
			});
			expect(run.code).toBe(0);
			expect(run.stdout).toMatch(/Scraper access\n\s+access\s+no\n\s+credits\s+0\n\s+concurrency\s+0\n/);
			expect(run.stdout).toMatch(/Browser access\n\s+access\s+no\n/);
			expect(run.stdout).toMatch(/max session\s+0 s/);
			expect(run.stdout.match(/API key\s+\(none\)/g)).toHaveLength(2);
		} finally {
			await bare.close();
		}
	});

	it("exits 2 without a key and 3 with a refused key, never echoing the key", async () => {
		const none = await runCli(["account"], { env: { SCRAPEJOB_API_URL: emulator.apiUrl } });
		expect(none.code).toBe(2);
		expect(none.stderr).toContain("no account key");
		expect(none.stderr).toContain("--sandbox");
		const wrong = await runCli(["account"], {
			env: { SCRAPEJOB_API_URL: emulator.apiUrl, SCRAPEJOB_ACCOUNT_KEY: "not-the-right-key-123" },
		});
		expect(wrong.code).toBe(3);
		expect(wrong.stderr).toContain("401 Invalid API key");
		expect(wrong.stderr).not.toContain("not-the-right-key-123");
	});

	it("works in the sandbox without any configuration", async () => {
		const run = await runCli(["account", "--sandbox", "--json"]);
		expect(run.code).toBe(0);
		const report = JSON.parse(run.stdout);
		expect(report.scraper).toMatchObject({ has_access: true, credits: 10_000, concurrency: 5 });
		expect(report.scraper.api_key).toBe(maskSecret(emulator.scraperKey));
		expect(Object.keys(report.proxy.products).sort()).toEqual(["dcp", "mp", "rp", "rpc", "static_residential"]);
	});
});

describe("scrapejob usage", () => {
	/** A fixed clock: bucket labels follow it, figures follow the seed. */
	const NOW_MS = Date.UTC(2026, 4, 28, 12, 30);
	let usageEmulator: Emulator;
	let usageEnv: NodeJS.ProcessEnv;

	beforeAll(async () => {
		usageEmulator = await startEmulator({ port: 0, clock: () => NOW_MS });
		usageEnv = { SCRAPEJOB_API_URL: usageEmulator.apiUrl, SCRAPEJOB_ACCOUNT_KEY: usageEmulator.accountKey };
	});
	afterAll(async () => {
		await usageEmulator.close();
	});

	async function usageRecord(product: string, period: "24h" | "3d" | "7d") {
		const usageClient = createAccountClient({ accountKey: usageEmulator.accountKey, baseUrl: usageEmulator.apiUrl });
		return usageClient.usage({ product, period });
	}

	it("--json prints the usage record as the service returned it", async () => {
		const run = await runCli(["usage", "--product", "rpc", "--period", "3d", "--json"], { env: usageEnv });
		expect(run.code).toBe(0);
		expect(JSON.parse(run.stdout)).toEqual(await usageRecord("rpc", "3d"));
	});

	it("prints the meta fields, the totals, a table of buckets and a chart scaled to the terminal", async () => {
		const record = await usageRecord("rpc", "3d");
		const stats = record.data.bandwidth.products[0]?.stats ?? {};
		expect(Object.keys(stats)).toEqual(["2026-05-26 00:00", "2026-05-27 00:00", "2026-05-28 00:00"]);
		const run = await runCli(["usage", "--product", "rpc", "--period", "3d"], { env: usageEnv, columns: 60 });
		expect(run.code).toBe(0);
		const out = run.stdout;
		expect(out).toContain("Bandwidth usage: Core Residential (rpc), period 3d");
		expect(out).toMatch(/granularity\s+day\n/);
		expect(out).toMatch(/scope\s+personal\n/);
		expect(out).toMatch(/key type\s+personal_key\n/);
		const proxy = await client.proxyData();
		expect(out).toMatch(new RegExp(`proxy username\\s+${(proxy.products.rpc as { username: string }).username}\\n`));
		const totalMb = record.meta.total_bandwidth_mb ?? 0;
		const fmt = (value: number, digits: number) => value.toLocaleString("en-US", { maximumFractionDigits: digits });
		expect(out).toContain(
			`Total  ${fmt(totalMb, 2)} MB = ${fmt(totalMb / 1000, 3)} GB = ${fmt(totalMb / 1_000_000, 6)} TB`,
		);
		// Table: one row per day, labels without the meaningless 00:00.
		for (const [bucket, figures] of Object.entries(stats)) {
			const day = bucket.slice(0, 10);
			expect(out).toMatch(
				new RegExp(
					`\\n${day}\\s+${fmt(figures.default ?? 0, 2)}\\s+${fmt(figures.extra ?? 0, 2)}\\s+${fmt(figures.total, 2)}\\n`,
				),
			);
		}
		// Chart: every line fits 60 columns; the largest day fills the bar area, the others in proportion.
		const chart = out.split("\n").filter((line) => line.includes("│"));
		expect(chart).toHaveLength(3);
		const totals = Object.values(stats).map((figures) => figures.total);
		const max = Math.max(...totals);
		const valueWidth = Math.max(...totals.map((total) => `${fmt(total, 2)} MB`.length));
		const barWidth = 60 - 1 - 10 - 2 - 1 - valueWidth;
		chart.forEach((line, index) => {
			expect([...line].length).toBe(59);
			const bar = [...line.slice(line.indexOf("│") + 1)].slice(0, barWidth).join("").trimEnd();
			const eighths = Math.round(((totals[index] ?? 0) / max) * barWidth * 8);
			const full = Math.floor(eighths / 8);
			expect(bar.startsWith("█".repeat(full))).toBe(true);
			expect([...bar].length).toBe(full + (eighths % 8 === 0 ? 0 : 1));
			expect(line.endsWith(` ${fmt(totals[index] ?? 0, 2)} MB`)).toBe(true);
		});
		expect(chart[totals.indexOf(max)]).toContain("█".repeat(barWidth));
	});

	it("draws hourly buckets for 24h and defaults to 80 columns", async () => {
		const run = await runCli(["usage", "--product", "rp", "--period", "24h"], { env: usageEnv });
		expect(run.code).toBe(0);
		const chart = run.stdout.split("\n").filter((line) => line.includes("│"));
		expect(chart).toHaveLength(24);
		expect(chart[0]?.startsWith("2026-05-27 13:00 │")).toBe(true);
		expect(chart[23]?.startsWith("2026-05-28 12:00 │")).toBe(true);
		for (const line of chart) expect([...line].length).toBe(79);
	});

	it("colours the chart on a terminal only, never with NO_COLOR", async () => {
		const tty = await runCli(["usage", "--product", "rp"], { env: usageEnv, isTTY: true });
		expect(tty.stdout).toMatch(ANSI_PATTERN);
		const noColor = await runCli(["usage", "--product", "rp"], { env: { ...usageEnv, NO_COLOR: "1" }, isTTY: true });
		expect(noColor.stdout).not.toMatch(ANSI_PATTERN);
		expect(noColor.stdout).toContain("█");
	});

	it("--csv exports one row per bucket", async () => {
		const { parse } = await import("csv-parse/sync");
		const record = await usageRecord("rp", "7d");
		const run = await runCli(["usage", "--product", "rp", "--period", "7d", "--csv"], { env: usageEnv });
		expect(run.code).toBe(0);
		const rows = parse(run.stdout, { columns: true }) as Array<Record<string, string>>;
		const stats = record.data.bandwidth.products[0]?.stats ?? {};
		expect(rows).toEqual(
			Object.entries(stats).map(([bucket, figures]) => ({
				bucket,
				default_mb: String(figures.default),
				extra_mb: String(figures.extra),
				total_mb: String(figures.total),
			})),
		);
	});

	it("shows the service's message for a bad product or period (exit 2)", async () => {
		const product = await runCli(["usage", "--product", "xyz"], { env: usageEnv });
		expect(product.code).toBe(2);
		expect(product.stderr).toContain("400 Invalid or missing product: use one of rp, rpc, dcp, mp, sdc");
		const period = await runCli(["usage", "--product", "rp", "--period", "1y"], { env: usageEnv });
		expect(period.code).toBe(2);
		expect(period.stderr).toContain("400 Invalid period: use one of 24h, 3d, 7d");
		const both = await runCli(["usage", "--product", "rp", "--json", "--csv"], { env: usageEnv });
		expect(both.code).toBe(2);
		expect(both.stderr).toContain("--json and --csv");
		const missing = await runCli(["usage"], { env: usageEnv });
		expect(missing.code).toBe(2);
		expect(missing.stderr).toContain("--product");
	});

	it("exits 3 with the service's message when the e-mail is not verified", async () => {
		const unverified = await startEmulator({ port: 0, scenario: { email_verified: false } });
		try {
			const run = await runCli(["usage", "--product", "rp"], {
				env: { SCRAPEJOB_API_URL: unverified.apiUrl, SCRAPEJOB_ACCOUNT_KEY: unverified.accountKey },
			});
			expect(run.code).toBe(3);
			expect(run.stderr).toContain("403 Email verification required");
			expect(run.stderr).toContain("hint:");
			expect(run.stdout).toBe("");
			expect(run.stderr).not.toContain(unverified.accountKey);
		} finally {
			await unverified.close();
		}
	});
});

describe("scrapejob targeting", () => {
	it("lists countries, filtered by a case-insensitive search", async () => {
		const all = await runCli(["targeting", "--product", "rp"], { env });
		expect(all.code).toBe(0);
		expect(all.stdout).toContain("Premium Residential (rp): 8 countries");
		expect(all.stdout).toMatch(/\n\s+US\s+United States\n/);
		const found = await runCli(["targeting", "--product", "rp", "--search", "UNITED"], { env });
		expect(found.stdout).toContain("2 countries");
		expect(found.stdout).toMatch(/GB\s+United Kingdom\n/);
		expect(found.stdout).toMatch(/US\s+United States\n/);
		expect(found.stdout).not.toContain("Germany");
		const json = await runCli(["targeting", "--product", "dcp", "--json"], { env });
		const settings = await client.settings();
		expect(JSON.parse(json.stdout)).toEqual({ product: "dcp", countries: settings.data.dcp?.countries });
	});

	it("a search without --country finds regions and cities of every country too (berl: Berlin)", async () => {
		const run = await runCli(["targeting", "--product", "rp", "--search", "berl"], { env });
		expect(run.code).toBe(0);
		expect(run.stdout).toContain("Premium Residential (rp): 0 countries");
		expect(run.stdout).toMatch(/Cities \(1\)\n\s+id \(--city\)\s+name\s+country\n\s+berlin\s+Berlin\s+DE\n/);
		const json = await runCli(["targeting", "--product", "rp", "--search", "BERL", "--json"], { env });
		expect(JSON.parse(json.stdout).cities).toEqual([expect.objectContaining({ id: "berlin", name: "Berlin" })]);
	});

	it("lists a country's regions, cities and ISPs with the values generation accepts", async () => {
		const run = await runCli(["targeting", "--product", "rp", "--country", "us"], { env });
		expect(run.code).toBe(0);
		expect(run.stdout).toContain("United States (US)");
		expect(run.stdout).toMatch(/Regions \(5\)\n\s+id \(--region\)\s+name\n/);
		expect(run.stdout).toMatch(/\n\s+new\.york\s+New York\n/);
		expect(run.stdout).toMatch(/Cities \(8\)/);
		expect(run.stdout).toMatch(/\n\s+los\.angeles\s+Los Angeles\s+California\n/);
		expect(run.stdout).toMatch(/ISPs \(4\)/);
		expect(run.stdout).toMatch(/\n\s+Comcast Cable\s+comcast\.cable\n/);
		expect(run.stdout).not.toContain("Munich");
		expect(run.stdout).not.toContain("Deutsche Telekom");
	});

	it("filters a country's entries by search and prints them as JSON in the service's shapes", async () => {
		const run = await runCli(["targeting", "--product", "rp", "--country", "US", "--search", "york", "--json"], {
			env,
		});
		expect(run.code).toBe(0);
		expect(JSON.parse(run.stdout)).toEqual({
			product: "rp",
			country: { code: "US", name: "United States" },
			regions: [{ id: "new.york", name: "New York", country_code: "US" }],
			cities: [{ id: "new.york", name: "New York", country_code: "US", region_id: "new.york" }],
			isp: {},
		});
		const isp = await runCli(["targeting", "--product", "rp", "--country", "de", "--search", "VODAFONE", "--json"], {
			env,
		});
		expect(JSON.parse(isp.stdout).isp).toEqual({ "Vodafone GmbH": { value: "vodafone.gmbh", countryCode: "DE" } });
	});

	it("rejects unknown countries and products with suggestions (exit 2)", async () => {
		const country = await runCli(["targeting", "--product", "rp", "--country", "UK"], { env });
		expect(country.code).toBe(2);
		expect(country.stderr).toContain('--country "UK" is not a country code of the rp targeting catalogue');
		expect(country.stderr).toContain("GB (United Kingdom)");
		const product = await runCli(["targeting", "--product", "zz"], { env });
		expect(product.code).toBe(2);
		expect(product.stderr).toContain("catalogues for: rp, rpc, mp, dcp");
	});
});

describe("scrapejob health", () => {
	it("learns the scraper key from the account and reports the rate limit", async () => {
		const run = await runCli(["health"], { env });
		expect(run.code).toBe(0);
		expect(run.stdout).toContain("scraper ok");
		expect(run.stdout).toContain(`endpoint     ${emulator.scraperUrl}`);
		expect(run.stdout).toContain(`${maskSecret(emulator.scraperKey)} (from the account)`);
		expect(run.stdout).toContain("limit 5, remaining 5");
		expectNoSecrets(run);
		const json = await runCli(["health", "--json"], { env });
		expect(JSON.parse(json.stdout)).toEqual({
			ok: true,
			endpoint: emulator.scraperUrl,
			key_source: "account",
			rate_limit: { limit: 5, remaining: 5 },
		});
	});

	it("uses SCRAPEJOB_SCRAPER_KEY without asking the account, and exits 3 when the key is refused", async () => {
		const scraperEnv = { SCRAPEJOB_SCRAPER_URL: emulator.scraperUrl, SCRAPEJOB_SCRAPER_KEY: emulator.scraperKey };
		const before = emulator.ledger.byEndpoint("account/scraper").length;
		const run = await runCli(["health", "--json"], { env: scraperEnv });
		expect(run.code).toBe(0);
		expect(JSON.parse(run.stdout).key_source).toBe("SCRAPEJOB_SCRAPER_KEY");
		expect(emulator.ledger.byEndpoint("account/scraper").length).toBe(before);
		const wrong = await runCli(["health"], { env: { ...scraperEnv, SCRAPEJOB_SCRAPER_KEY: "wrong-scraper-key-42" } });
		expect(wrong.code).toBe(3);
		expect(wrong.stderr).toContain("401 Invalid API key");
		// The service's words do not say which of the user's keys it was; the message does.
		expect(wrong.stderr).toContain("the key refused is the scraper key (SCRAPEJOB_SCRAPER_KEY)");
		expect(wrong.stderr).not.toContain("wrong-scraper-key-42");
	});

	it("exits 3 when the account has no scraper access, and 2 without any key", async () => {
		const bare = await startEmulator({ port: 0, scenario: { has_scraper_access: false } });
		try {
			const run = await runCli(["health"], {
				env: { SCRAPEJOB_API_URL: bare.apiUrl, SCRAPEJOB_ACCOUNT_KEY: bare.accountKey },
			});
			expect(run.code).toBe(3);
			expect(run.stderr).toContain("no scraper access");
		} finally {
			await bare.close();
		}
		const none = await runCli(["health"], { env: {} });
		expect(none.code).toBe(2);
		expect(none.stderr).toContain("SCRAPEJOB_SCRAPER_KEY");
	});

	it("exits 3, as run does, when an address is not the service (a scraper URL without /api/v1, an account API that answers 404)", async () => {
		const withoutPrefix = emulator.scraperUrl.replace(/\/api\/v1$/, "");
		const scraper = await runCli(["health"], {
			env: { SCRAPEJOB_SCRAPER_URL: withoutPrefix, SCRAPEJOB_SCRAPER_KEY: emulator.scraperKey },
		});
		expect(scraper.code, scraper.stderr).toBe(3);
		expect(scraper.stderr).toContain("the scraper service is not at");
		// What to check, for the CLI's user and a library caller (env) alike.
		expect(scraper.stderr).toContain("(--scraper-url, or SCRAPEJOB_SCRAPER_URL in the environment or the config file)");
		// The check it suggests is of the address meant, never of the one that failed again.
		expect(scraper.stderr).toContain(
			`\`npx scrapejob health --scraper-url ${withoutPrefix}/api/v1\` checks it without running a job`,
		);
		const account = await runCli(["health"], {
			env: { SCRAPEJOB_API_URL: `${emulator.apiUrl}/nothing-here`, SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey },
		});
		expect(account.code, account.stderr).toBe(3);
		expect(account.stderr).toContain("the account API is not at");
		expect(account.stderr).toContain("(--api-url, or SCRAPEJOB_API_URL in the environment or the config file)");
		expect(account.stderr).toContain(
			`\`npx scrapejob health --api-url ${emulator.apiUrl}\` checks it without running a job`,
		);
		// The status is said once, not "answered 404 HTTP 404".
		expect(account.stderr).not.toMatch(/answered (\d+) HTTP \1/);
	});

	it("works in the sandbox", async () => {
		const run = await runCli(["health", "--sandbox"]);
		expect(run.code).toBe(0);
		expect(run.stdout).toContain("scraper ok");
	});
});

describe("--help", () => {
	it.each([
		["account", "--show-secrets"],
		["usage", "--period <period>"],
		["targeting", "--search <text>"],
		["proxies", "--no-protocol"],
		["health", "X-RateLimit-Limit"],
		["task", "<task-id>"],
	])("explains %s", async (command, expected) => {
		const run = await runCli([command, "--help"]);
		expect(run.code).toBe(0);
		expect(run.stdout).toContain(`Usage: scrapejob ${command}`);
		expect(run.stdout).toContain(expected);
		expect(run.stdout).toContain("--sandbox");
		expect(run.stdout).toContain("Examples:");
	});
});
