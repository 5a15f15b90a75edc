import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { HostCost } from "../../src/history/index.js";
import { forecastCredits, forecastReport } from "../../src/run/economics/forecast.js";
import { hostOf } from "../../src/run/economics/host-costs.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

/** A host's past: `costs` are the credits of each of its targets (every fetch, first and last alike). */
function past(host: string, costs: readonly number[], first = costs, last = costs): HostCost {
	const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
	const squares = (values: readonly number[]) => values.reduce((a, b) => a + b * b, 0);
	return {
		host,
		targets: costs.length,
		credits: sum(costs),
		creditsSq: squares(costs),
		first: sum(first),
		firstSq: squares(first),
		last: sum(last),
		lastSq: squares(last),
	};
}

/** The forecast model (docs/behaviour.md, "Forecast"). */
describe("forecastCredits", () => {
	it("scales a domain's mean by its targets now; a steady domain has no spread", () => {
		const forecast = forecastCredits(
			[{ host: "shop.example", targets: 10, min: 20, max: 20 }],
			[past("shop.example", [2, 2, 2, 2])],
			[],
			false,
		);
		expect(forecast).toEqual({ expected: 20, low: 20, high: 20 });
	});

	it("the 80 % interval is ±1.2816 sd of the total: each target's spread and the mean's own", () => {
		// Mean 3, variance 1 over k = 4 targets; n = 16 now: variance 16·1 + 256·1/4 = 80.
		const forecast = forecastCredits(
			[{ host: "a.example", targets: 16, min: 32, max: 96 }],
			[past("a.example", [2, 4, 2, 4])],
			[],
			false,
		);
		const margin = 1.2816 * Math.sqrt(80);
		expect(forecast!.expected).toBe(48);
		expect(forecast!.low).toBeCloseTo(48 - margin, 1);
		expect(forecast!.high).toBeCloseTo(48 + margin, 1);
	});

	it("hosts are grouped by registrable domain; an unknown domain adds its static range, its middle expected", () => {
		const forecast = forecastCredits(
			[
				{ host: "www.shop.example", targets: 2, min: 4, max: 4 },
				{ host: "img.shop.example", targets: 2, min: 4, max: 4 },
				{ host: "new.example", targets: 3, min: 6, max: 18 },
			],
			[past("shop.example", [1, 1])],
			[],
			false,
		);
		expect(forecast).toEqual({ expected: 4 + 12, low: 4 + 6, high: 4 + 18 });
	});

	it("no known domain, no forecast", () => {
		expect(forecastCredits([{ host: "new.example", targets: 3, min: 6, max: 18 }], [], [], false)).toBeNull();
		expect(
			forecastCredits([{ host: "new.example", targets: 3, min: 6, max: 18 }], [past("old.example", [1])], [], false),
		).toBeNull();
	});

	it("adaptive: a remembered rung forecasts from the last fetch, a domain given up from the first", () => {
		const targets = [
			{ host: "climbs.example", targets: 2, min: 2, max: 28 },
			{ host: "blocked.example", targets: 2, min: 2, max: 28 },
		];
		const costs = [past("climbs.example", [10, 5], [1, 5], [5, 5]), past("blocked.example", [0, 0], [0, 0], [0, 0])];
		const modes = [
			{ domain: "climbs.example", mode: "browser", proxyType: "residential", useful: true },
			{ domain: "blocked.example", mode: "request", proxyType: "datacenter", useful: false },
		];
		expect(forecastCredits(targets, costs, modes, true)!.expected).toBe(10);
		// The same store read for a job that is not adaptive: every fetch counts.
		expect(forecastCredits(targets, costs, modes, false)!.expected).toBe(15);
	});

	it("the report's error is (spent − expected) / expected", () => {
		expect(forecastReport({ expected: 40, low: 30, high: 50 }, 46)).toEqual({
			expected: 40,
			low: 30,
			high: 50,
			spent: 46,
			error: 0.15,
		});
		expect(forecastReport({ expected: 0, low: 0, high: 0 }, 0).error).toBeNull();
	});
});

describe("hostOf", () => {
	it("reads the usual URL's host without parsing it, and any other as the URL parser does", () => {
		for (const url of [
			"http://127.0.0.1:8080/product/1",
			"https://shop.example/a?b#c",
			"https://shop.example",
			"https://Shop.Example/A",
			"http://user:secret@shop.example/",
			"http://[::1]:4/x",
		])
			expect(hostOf(url), url).toBe(new URL(url).hostname);
		expect(hostOf("not a url")).toBe("not a url");
	});
});

describe("the forecast across runs of a job", () => {
	it("a --retry-failed run (its failures only) does not replace what the full run cost: the next full run is forecast from that", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		// Three pages that answer and one 404: the retry run fetches only the 404.
		const targets = ["1", "2", "3", "999"].map((page) => `  - ${service?.site.url}/product/${page}`);
		const job = writeJob(
			dir,
			"shop",
			["name: shop", "defaults: {mode: request}", "targets:", ...targets, ""].join("\n"),
		);
		const run = async (...flags: string[]) => {
			const result = await runCli(["run", job, "--out", out, "--json", ...flags], { env: service?.env });
			return JSON.parse(result.stdout.trim().split("\n").at(-1)!) as { credits: { used: number } };
		};
		const full = (await run()).credits.used;
		const retried = (await run("--retry-failed")).credits.used;
		// The retry's one target costs other than the full run's mean: a forecast from it would differ.
		expect(retried * 4).not.toBe(full);
		const dry = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
		expect(dry.code, dry.stderr).toBe(0);
		expect(JSON.parse(dry.stdout)[0].forecast.expected).toBe(full);
	});
});
