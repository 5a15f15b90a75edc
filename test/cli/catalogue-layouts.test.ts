import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPlaces } from "../../src/api/targeting-places.js";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { runCli } from "./cli-harness.js";

/** Both city/region layouts the service may send (the service documents neither: docs/service.md, "Targeting catalogue"): every check runs on each. */
describe.each(["flat", "grouped"] as const)("the targeting catalogue, %s layout", (layout) => {
	let emulator: Emulator;
	let env: NodeJS.ProcessEnv;
	beforeAll(async () => {
		emulator = await startEmulator({ port: 0, scenario: { catalogue_layout: layout } });
		env = { SCRAPEJOB_API_URL: emulator.apiUrl, SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey };
	});
	afterAll(async () => {
		await emulator.close();
	});

	it("the emulator serves that layout", async () => {
		const response = await fetch(`${emulator.apiUrl}/public/settings`, {
			headers: { "x-apikey": emulator.accountKey },
		});
		const body = (await response.json()) as { data: { rp: { cities: { data: Array<Record<string, unknown>> } } } };
		const first = body.data.rp.cities.data[0] ?? {};
		if (layout === "flat") expect(Object.keys(first).sort()).toEqual(["country_code", "id", "name", "region_id"]);
		else expect(first).toMatchObject({ country_code: expect.any(String), cities: expect.any(Array) });
	});

	it("targeting --search finds a country's cities and regions", async () => {
		const run = await runCli(["targeting", "--product", "rp", "--country", "US", "--search", "york", "--json"], {
			env,
		});
		expect(run.code).toBe(0);
		const found = JSON.parse(run.stdout) as { cities: unknown[]; regions: unknown[] };
		expect(found.cities).toEqual([{ id: "new.york", name: "New York", country_code: "US", region_id: "new.york" }]);
		expect(found.regions).toEqual([{ id: "new.york", name: "New York", country_code: "US" }]);
		const table = await runCli(["targeting", "--product", "rp", "--country", "US"], { env });
		expect(table.stdout).toMatch(/\n\s+los\.angeles\s+Los Angeles\s+California\n/);
	});

	it("proxies --city suggests the closest real values, never empty ones", async () => {
		const city = await runCli(["proxies", "--product", "rp", "--countries", "US", "--city", "New York"], { env });
		expect(city.code).toBe(2);
		expect(city.stderr).toContain('closest: "new.york" (New York)');
		expect(city.stderr).not.toContain('""');
		const ok = await runCli(["proxies", "--product", "rp", "--countries", "US", "--city", "new.york"], { env });
		expect(ok.code).toBe(0);
		expect(ok.stdout).toContain("_city-new.york");
	});

	it("targeting --search with no match says so and exits 1", async () => {
		const countries = await runCli(["targeting", "--product", "rp", "--search", "zzzz"], { env });
		expect(countries.code).toBe(1);
		expect(countries.stderr).toContain('nothing matches "zzzz"');
		expect(countries.stdout).toBe("");
		const places = await runCli(["targeting", "--product", "rp", "--country", "US", "--search", "zzzz"], { env });
		expect(places.code).toBe(1);
		expect(places.stderr).toContain('nothing matches "zzzz"');
	});
});

describe("reading city and region lists tolerantly", () => {
	it("reads flat items, groups of objects or plain names, and groups keyed by country; drops empty entries", () => {
		expect(readPlaces([{ id: "miami", name: "Miami", country_code: "us" }, { name: "" }, {}])).toEqual([
			{ id: "miami", name: "Miami", country_code: "US" },
		]);
		expect(readPlaces([{ countryCode: "DE", cities: ["berlin", { label: "Munich", value: "munich" }, ""] }])).toEqual([
			{ id: "berlin", name: "berlin", country_code: "DE" },
			{ id: "munich", name: "Munich", country_code: "DE" },
		]);
		expect(readPlaces({ fr: [{ name: "Paris" }] })).toEqual([{ name: "Paris", country_code: "FR" }]);
		expect(readPlaces("nonsense")).toEqual([]);
	});
});
