import { describe, expect, test } from "vitest";
import type { Emulator } from "../../src/emulator/index.js";
import { account, useEmulator } from "./helpers.js";

async function credentials(emulator: Emulator, code: string) {
	const data = await account(emulator, "/public");
	return (data.json.products as Record<string, { username: string; password: string }>)[code] as {
		username: string;
		password: string;
	};
}

async function generate(emulator: Emulator, query: Record<string, string>) {
	const answer = await account(emulator, "/public/generate", query);
	return { ...answer, lines: answer.status === 200 ? answer.text.trimEnd().split("\n") : [] };
}

describe("GET /public/generate: formats and protocol", () => {
	test("plain text, one proxy a line, format 1 with the http:// prefix by default", async () => {
		const emulator = await useEmulator();
		const rp = await credentials(emulator, "rp");
		const answer = await generate(emulator, { product: "rp", amount: "3" });
		expect(answer.status).toBe(200);
		expect(answer.headers.get("content-type")).toBe("text/plain; charset=utf-8");
		expect(answer.lines).toEqual(
			Array(3).fill(`http://${rp.username}:${rp.password}@premium-residential.evomi.com:1000`),
		);
	});

	test("format 2 and 3, socks5 and prepend_protocol=false", async () => {
		const emulator = await useEmulator();
		const mp = await credentials(emulator, "mp");
		const two = await generate(emulator, { product: "mp", amount: "1", format: "2", protocol: "socks5" });
		expect(two.lines).toEqual([`socks5://mp.evomi.com:3002:${mp.username}:${mp.password}`]);
		const three = await generate(emulator, { product: "mp", amount: "1", format: "3", prepend_protocol: "false" });
		expect(three.lines).toEqual([`${mp.username}:${mp.password}:mp.evomi.com:3000`]);
	});

	test("sdc uses the datacenter credentials and gateway", async () => {
		const emulator = await useEmulator();
		const dcp = await credentials(emulator, "dcp");
		const answer = await generate(emulator, { product: "sdc", amount: "1" });
		expect(answer.lines).toEqual([`http://${dcp.username}:${dcp.password}@dcp.evomi.com:2000`]);
	});

	test("amount defaults to 10", async () => {
		const emulator = await useEmulator();
		expect((await generate(emulator, { product: "rp" })).lines).toHaveLength(10);
	});
});

describe("targeting in the password", () => {
	test("country, city, region, isp, sticky session with default lifetime 30, adblock", async () => {
		const emulator = await useEmulator();
		const rp = await credentials(emulator, "rp");
		const answer = await generate(emulator, {
			product: "rp",
			amount: "2",
			countries: "US",
			city: "new.york",
			region: "new.york",
			isp: "Comcast Cable",
			session: "sticky",
			adblock: "true",
		});
		expect(answer.status).toBe(200);
		for (const line of answer.lines) {
			expect(line).toMatch(
				new RegExp(
					`^http://${rp.username}:${rp.password}_country-US_city-new\\.york_region-new\\.york_isp-comcast\\.cable_session-[a-z0-9]{8}_lifetime-30_adblock-1@premium-residential\\.evomi\\.com:1000$`,
				),
			);
		}
		const sessions = answer.lines.map((line) => /_session-([a-z0-9]+)/.exec(line)?.[1]);
		expect(new Set(sessions).size).toBe(2);
	});

	test("hard sessions and explicit lifetime", async () => {
		const emulator = await useEmulator();
		const hard = await generate(emulator, { product: "rp", amount: "1", session: "hard" });
		expect(hard.lines[0]).toMatch(/_hardsession-[a-z0-9]{8}@/);
		expect(hard.lines[0]).not.toContain("_lifetime-");
		const sticky = await generate(emulator, { product: "rpc", amount: "1", session: "sticky", lifetime: "1440" });
		expect(sticky.lines[0]).toMatch(/_session-[a-z0-9]{8}_lifetime-1440@core-residential\.evomi\.com:1000$/);
	});

	test("several countries: one chosen at random per line, reproducibly from the seed", async () => {
		const run = async () => {
			const emulator = await useEmulator({ scenario: { seed: 11 } });
			return (await generate(emulator, { product: "rp", amount: "40", countries: "US,DE,FR" })).lines.map(
				(line) => /_country-([A-Z]{2})/.exec(line)?.[1],
			);
		};
		const first = await run();
		expect(new Set(first)).toEqual(new Set(["US", "DE", "FR"]));
		expect(await run()).toEqual(first);
	});

	test("static-residential (and static_residential) ignores filters and returns every IP", async () => {
		const emulator = await useEmulator({ scenario: { static_residential_ips: 3 } });
		const rp = await credentials(emulator, "rp");
		const data = await account(emulator, "/public");
		const packages = (
			data.json.products as {
				static_residential: { packages: Array<{ ips: Array<{ ipInfo: { ip: string }; password: string }> }> };
			}
		).static_residential.packages;
		const expected = packages
			.flatMap((pkg) => pkg.ips)
			.map((ip) => `http://${rp.username}:${ip.ipInfo.ip}_${ip.password}@isp-2.evomi.com:12345`);
		const hyphen = await generate(emulator, { product: "static-residential", countries: "DE", amount: "1" });
		const underscore = await generate(emulator, { product: "static_residential" });
		expect(hyphen.lines).toEqual(expected);
		expect(underscore.lines).toEqual(expected);
	});
});

describe("errors", () => {
	const cases: Array<[string, Record<string, string>, number, string | RegExp]> = [
		["missing product", {}, 400, /product/],
		["dcp is not a generate code", { product: "dcp" }, 400, "Invalid product for user"],
		["unknown product", { product: "xyz" }, 400, "Invalid product for user"],
		["amount 0", { product: "rp", amount: "0" }, 400, /amount/],
		["amount not a number", { product: "rp", amount: "many" }, 400, /amount/],
		["amount above 100", { product: "rp", amount: "101" }, 429, "Exceeded maximum proxy count"],
		["bad format", { product: "rp", format: "4" }, 400, /format/],
		["bad protocol", { product: "rp", protocol: "https" }, 400, /protocol/],
		["bad prepend_protocol", { product: "rp", prepend_protocol: "maybe" }, 400, /prepend_protocol/],
		["unknown country", { product: "rp", countries: "XX" }, 400, /country XX/],
		["city with two countries", { product: "rp", countries: "US,DE", city: "berlin" }, 400, /more than one country/],
		["region with two countries", { product: "rp", countries: "US,DE", region: "texas" }, 400, /more than one country/],
		["unknown city", { product: "rp", city: "atlantis" }, 400, /Unknown city atlantis/],
		["city not in country", { product: "rp", countries: "DE", city: "houston" }, 400, /not in country DE/],
		["unknown region", { product: "rp", region: "nowhere" }, 400, /Unknown region/],
		["city not in region", { product: "rp", city: "houston", region: "florida" }, 400, /not in region/],
		["isp on rpc", { product: "rpc", isp: "Comcast Cable" }, 400, "isp targeting is not available for rpc"],
		["unknown isp", { product: "rp", isp: "Nobody Telecom" }, 400, /Unknown isp/],
		["bad session", { product: "rp", session: "forever" }, 400, /session must be/],
		["lifetime with hard", { product: "rp", session: "hard", lifetime: "10" }, 400, /hard sessions/],
		["lifetime out of range", { product: "rp", session: "sticky", lifetime: "1441" }, 400, /1 to 1440/],
		["lifetime without session", { product: "rp", lifetime: "10" }, 400, /session=sticky/],
		["adblock on rpc", { product: "rpc", adblock: "true" }, 400, "adblock is not available for rpc"],
	];
	test.each(cases)("%s", async (_name, query, status, error) => {
		const emulator = await useEmulator();
		const answer = await account(emulator, "/public/generate", query);
		expect(answer.status).toBe(status);
		expect(answer.json.success).toBe(false);
		expect(Object.keys(answer.json).sort()).toEqual(["error", "success"]);
		if (typeof error === "string") expect(answer.json.error).toBe(error);
		else expect(answer.json.error).toMatch(error);
	});

	test("no balance or no static IPs: Invalid product for user", async () => {
		const emulator = await useEmulator({ scenario: { balances_mb: { mp: 0 }, static_residential_ips: 0 } });
		for (const product of ["mp", "static-residential"]) {
			const answer = await account(emulator, "/public/generate", { product });
			expect(answer.status).toBe(400);
			expect(answer.json).toEqual({ error: "Invalid product for user", success: false });
		}
	});
});
