import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAccountClient, type ParsedProxy } from "../../src/api/index.js";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { runCli } from "./cli-harness.js";

let emulator: Emulator;
let env: NodeJS.ProcessEnv;
let rp: { username: string; password: string };
let tempDir: string;

beforeAll(async () => {
	emulator = await startEmulator({ port: 0 });
	env = { SCRAPEJOB_API_URL: emulator.apiUrl, SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey };
	const proxy = await createAccountClient({ accountKey: emulator.accountKey, baseUrl: emulator.apiUrl }).proxyData();
	rp = proxy.products.rp as typeof rp;
	tempDir = await mkdtemp(join(tmpdir(), "scrapejob-proxies-"));
});

afterAll(async () => {
	await emulator.close();
	await rm(tempDir, { recursive: true, force: true });
});

beforeEach(() => {
	emulator.ledger.clear();
});

const generateCalls = () => emulator.ledger.byEndpoint("account/generate").length;

describe("scrapejob proxies: generation", () => {
	it("prints one proxy a line in format 1 with the protocol prefix", async () => {
		const run = await runCli(["proxies", "--product", "rp", "--amount", "3"], { env });
		expect(run.code).toBe(0);
		expect(run.stderr).toBe("");
		const lines = run.stdout.trimEnd().split("\n");
		expect(lines).toHaveLength(3);
		for (const line of lines) {
			expect(line).toBe(`http://${rp.username}:${rp.password}@premium-residential.evomi.com:1000`);
		}
		expect(run.stdout).not.toContain(emulator.accountKey);
	});

	it("encodes countries, city, region, sticky sessions and lifetime into the passwords", async () => {
		const run = await runCli(
			[
				"proxies",
				"--product",
				"rp",
				"--countries",
				"us",
				"--region",
				"new.york",
				"--city",
				"new.york",
				"--session",
				"sticky",
				"--lifetime",
				"60",
				"--amount",
				"2",
			],
			{ env },
		);
		expect(run.stderr).toBe("");
		expect(run.code).toBe(0);
		const lines = run.stdout.trimEnd().split("\n");
		expect(lines).toHaveLength(2);
		for (const line of lines) {
			expect(line).toMatch(
				new RegExp(
					`^http://${rp.username}:${rp.password}_country-US_city-new\\.york_region-new\\.york_session-[a-z0-9]{8}_lifetime-60@premium-residential\\.evomi\\.com:1000$`,
				),
			);
		}
	});

	it("honours --format, --protocol and --no-protocol together", async () => {
		const run = await runCli(
			["proxies", "--product", "rp", "--format", "2", "--protocol", "socks5", "--no-protocol", "--amount", "1"],
			{ env },
		);
		expect(run.code).toBe(0);
		expect(run.stdout).toBe(`premium-residential.evomi.com:1002:${rp.username}:${rp.password}\n`);
		const three = await runCli(["proxies", "--product", "mp", "--format", "3", "--adblock", "--amount", "1"], { env });
		expect(three.code).toBe(0);
		expect(three.stdout).toMatch(/^http:\/\/[a-z0-9]+:[a-z0-9]+_adblock-1:mp\.evomi\.com:3000\n$/);
	});

	it("--json prints the parsed proxies", async () => {
		const run = await runCli(
			["proxies", "--product", "rp", "--countries", "DE", "--isp", "Vodafone GmbH", "--amount", "2", "--json"],
			{ env },
		);
		expect(run.code).toBe(0);
		const proxies = JSON.parse(run.stdout) as ParsedProxy[];
		expect(proxies).toHaveLength(2);
		expect(proxies[0]).toEqual({
			protocol: "http",
			host: "premium-residential.evomi.com",
			port: 1000,
			username: rp.username,
			password: `${rp.password}_country-DE_isp-vodafone.gmbh`,
			targeting: { country: "DE", isp: "vodafone.gmbh" },
			line: `http://${rp.username}:${rp.password}_country-DE_isp-vodafone.gmbh@premium-residential.evomi.com:1000`,
		});
	});

	it("--out writes the list to a file and says where", async () => {
		const run = await runCli(
			["proxies", "--product", "sdc", "--countries", "NL", "--amount", "4", "--out", "list.txt"],
			{
				env,
				cwd: tempDir,
			},
		);
		expect(run.code).toBe(0);
		const path = join(tempDir, "list.txt");
		expect(run.stdout).toBe(`wrote 4 proxies to ${path}\n`);
		const lines = (await readFile(path, "utf8")).trimEnd().split("\n");
		expect(lines).toHaveLength(4);
		for (const line of lines) expect(line).toMatch(/_country-NL@dcp\.evomi\.com:2000$/);
	});

	it("static-residential ignores filters, says so on stderr and returns every static proxy", async () => {
		const run = await runCli(
			["proxies", "--product", "static_residential", "--countries", "US", "--amount", "50", "--session", "hard"],
			{ env },
		);
		expect(run.code).toBe(0);
		expect(run.stderr).toBe(
			"note: static-residential ignores filters and returns all the account's static proxies; ignored: --countries, --session, --amount\n",
		);
		const lines = run.stdout.trimEnd().split("\n");
		expect(lines).toHaveLength(3);
		lines.forEach((line, index) => {
			expect(line).toMatch(
				new RegExp(`^http://${rp.username}:203\\.0\\.113\\.${10 + index}_[a-z0-9]{10}@isp-2\\.evomi\\.com:12345$`),
			);
		});
		const sent = emulator.ledger.byEndpoint("account/generate");
		expect(sent).toHaveLength(1);
	});

	it("shows the service's 400 (exit 2) and 429 (exit 1) with their text", async () => {
		const empty = await startEmulator({ port: 0, scenario: { balances_mb: { rp: 0 } } });
		try {
			const run = await runCli(["proxies", "--product", "rp"], {
				env: { SCRAPEJOB_API_URL: empty.apiUrl, SCRAPEJOB_ACCOUNT_KEY: empty.accountKey },
			});
			expect(run.code).toBe(2);
			expect(run.stderr).toContain("GET /public/generate answered 400 Invalid product for user");
			expect(run.stdout).toBe("");
		} finally {
			await empty.close();
		}
		const limited = await startEmulator({
			port: 0,
			scenario: { faults: [{ kind: "rate_limit", on: "account", match: "/public/generate" }] },
		});
		try {
			const run = await runCli(["proxies", "--product", "rp"], {
				env: { SCRAPEJOB_API_URL: limited.apiUrl, SCRAPEJOB_ACCOUNT_KEY: limited.accountKey },
			});
			expect(run.code).toBe(1);
			expect(run.stderr).toContain("GET /public/generate answered 429 Too many requests");
			expect(run.stderr).not.toContain(limited.accountKey);
		} finally {
			await limited.close();
		}
	});
});

describe("scrapejob proxies: local validation (exit 2, nothing generated)", () => {
	const cases: Array<[string, string[], string[]]> = [
		[
			"an unknown product",
			["--product", "xx"],
			['--product must be one of rp, rpc, sdc, mp, static-residential (got "xx")'],
		],
		["dcp, which generation calls sdc", ["--product", "dcp"], ['(got "dcp"; datacenter proxies are generated as sdc)']],
		[
			"countries that are not ISO codes",
			["--product", "rp", "--countries", "US,USA"],
			['--countries must be comma-separated two-letter ISO country codes, e.g. US,DE (got "US,USA")'],
		],
		[
			"a city without a country",
			["--product", "rp", "--city", "miami"],
			["--city needs exactly one country in --countries (got none)"],
		],
		[
			"a region with several countries",
			["--product", "rp", "--countries", "US,DE", "--region", "texas"],
			['--region needs exactly one country in --countries (got "US,DE")'],
		],
		[
			"ISP targeting on rpc",
			["--product", "rpc", "--isp", "Comcast Cable"],
			['--isp is not available for rpc (Core Residential) (got "Comcast Cable")'],
		],
		["adblock on rpc", ["--product", "rpc", "--adblock"], ["--adblock is not available for rpc (Core Residential)"]],
		[
			"an unknown session type",
			["--product", "rp", "--session", "forever"],
			['--session must be one of sticky, hard (got "forever")'],
		],
		[
			"a lifetime with a hard session",
			["--product", "rp", "--session", "hard", "--lifetime", "30"],
			['--lifetime is not available with --session hard, whose IP is permanent (got "30")'],
		],
		[
			"a lifetime without a session",
			["--product", "rp", "--lifetime", "30"],
			['--lifetime applies to sticky sessions only: add --session sticky (got "30")'],
		],
		[
			"a lifetime of 0",
			["--product", "rp", "--session", "sticky", "--lifetime", "0"],
			['--lifetime must be a whole number from 1 to 1440 (got "0")'],
		],
		["a lifetime over a day", ["--product", "rp", "--session", "sticky", "--lifetime", "1441"], ['(got "1441")']],
		["a lifetime that is not a number", ["--product", "rp", "--session", "sticky", "--lifetime", "1h"], ['(got "1h")']],
		[
			"an amount of 0",
			["--product", "rp", "--amount", "0"],
			['--amount must be a whole number from 1 to 100 (got "0")'],
		],
		[
			"an amount over 100",
			["--product", "rp", "--amount", "101"],
			['--amount must be a whole number from 1 to 100 (got "101")'],
		],
		["a fractional amount", ["--product", "rp", "--amount", "2.5"], ['(got "2.5")']],
		["an unknown format", ["--product", "rp", "--format", "4"], ['--format must be one of 1, 2, 3 (got "4")']],
		[
			"an unknown protocol",
			["--product", "rp", "--protocol", "https"],
			['--protocol must be one of http, socks5 (got "https")'],
		],
		[
			"several problems at once, all reported",
			["--product", "rpc", "--isp", "x", "--adblock", "--amount", "500", "--format", "9"],
			[
				"invalid options:",
				"--isp is not available for rpc",
				"--adblock is not available for rpc",
				'--amount must be a whole number from 1 to 100 (got "500")',
				'--format must be one of 1, 2, 3 (got "9")',
			],
		],
	];

	it.each(cases)("rejects %s before anything is sent", async (_name, args, messages) => {
		const run = await runCli(["proxies", ...args], { env });
		expect(run.code).toBe(2);
		expect(run.stdout).toBe("");
		for (const message of messages) expect(run.stderr).toContain(message);
		expect(emulator.ledger.requestCount).toBe(0);
	});

	it("rejects a missing --product", async () => {
		const run = await runCli(["proxies"], { env });
		expect(run.code).toBe(2);
		expect(run.stderr).toContain("--product");
		expect(emulator.ledger.requestCount).toBe(0);
	});

	it("checks city and region against the catalogue and suggests the closest values", async () => {
		const city = await runCli(["proxies", "--product", "rp", "--countries", "US", "--city", "New York"], { env });
		expect(city.code).toBe(2);
		expect(city.stderr).toContain(
			'--city needs an exact city id of United States (US) from the rp targeting catalogue (got "New York"); closest: "new.york" (New York)',
		);
		expect(city.stderr).toContain("list them with: npx scrapejob targeting --product rp --country US");
		const region = await runCli(["proxies", "--product", "rp", "--countries", "DE", "--region", "bavria"], { env });
		expect(region.code).toBe(2);
		expect(region.stderr).toContain('closest: "bavaria" (Bavaria)');
		const mismatch = await runCli(
			["proxies", "--product", "rp", "--countries", "US", "--region", "texas", "--city", "miami"],
			{ env },
		);
		expect(mismatch.code).toBe(2);
		expect(mismatch.stderr).toContain('--city "miami" lies in region "florida", not in --region "texas"');
		const country = await runCli(["proxies", "--product", "rp", "--countries", "ZZ", "--city", "miami"], { env });
		expect(country.code).toBe(2);
		expect(country.stderr).toContain('--countries "ZZ" is not a country code of the rp targeting catalogue');
		// Datacenter (sdc reads dcp's catalogue) has no cities at all.
		const sdc = await runCli(["proxies", "--product", "sdc", "--countries", "US", "--city", "miami"], { env });
		expect(sdc.code).toBe(2);
		expect(sdc.stderr).toContain("the catalogue lists no cities there");
		expect(emulator.ledger.byEndpoint("account/settings").length).toBe(5);
		expect(generateCalls()).toBe(0);
	});
});
