import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startDemoSite } from "../../src/emulator/index.js";
import type { RunSummary } from "../../src/output/index.js";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";

/**
 * `mode: adaptive` and the forecast (docs/behaviour.md, "Adaptive mode", "Forecast") against the emulator:
 * four domains on loopback — `127.0.0.1` serves datacenter addresses, `localhost` blocks them
 * (`block_datacenter`), `127.0.0.2` needs a browser (`browser_only`), `127.0.0.3` refuses everything
 * (`deny_all`). One fetch at a time, so which target learns a domain's rung first is the job's order.
 */
const PER_DOMAIN = 4;
const DOMAINS = ["127.0.0.1", "localhost", "127.0.0.2", "127.0.0.3"] as const;

async function fourDomains(): Promise<{ service: TestService; urls: Record<(typeof DOMAINS)[number], string> }> {
	const service = await useTestService({
		block_datacenter: ["//localhost:"],
		browser_only: ["//127.0.0.2:"],
		deny_all: ["//127.0.0.3:"],
	});
	// The browser-only site is fetched for real by a browser-mode scrape: a demo site of its own there.
	const second = await startDemoSite({ host: "127.0.0.2" });
	const port = service.site.port;
	return {
		service: {
			...service,
			close: async () => {
				await second.close();
				await service.close();
			},
		},
		urls: {
			"127.0.0.1": `http://127.0.0.1:${port}`,
			localhost: `http://localhost:${port}`,
			"127.0.0.2": second.url,
			"127.0.0.3": `http://127.0.0.3:${port}`,
		},
	};
}

function jobYaml(mode: string, urls: Record<string, string>, name = "economics"): string {
	const targets: string[] = [];
	for (const domain of DOMAINS)
		for (let index = 1; index <= PER_DOMAIN; index++) targets.push(`  - ${urls[domain]}/product/${index}\n`);
	return `name: ${name}\nconcurrency: 1\nbreaker: false\ndefaults: {mode: ${mode}}\nretry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}\nextract:\n  price: {css: .price, required: true}\ntargets:\n${targets.join("")}`;
}

/** Run folders of a job, oldest first. */
function runDirs(out: string, job: string): string[] {
	const dir = join(out, job);
	return readdirSync(dir)
		.filter((name) => /^\d/.test(name))
		.sort()
		.map((name) => join(dir, name));
}

/** Per domain of the job: credits spent and useful records, from the records written. */
function perDomain(runDir: string): Record<string, { credits: number; useful: number }> {
	const figures: Record<string, { credits: number; useful: number }> = {};
	for (const record of readRecords(runDir)) {
		const domain = new URL(record.url).hostname;
		const entry = figures[domain] ?? { credits: 0, useful: 0 };
		figures[domain] = entry;
		entry.credits += record.credits_used;
		if (record.useful) entry.useful += 1;
	}
	return figures;
}

/** Credits per useful record; Infinity when credits went to no useful record, 0 when nothing was spent. */
function perUseful(figure: { credits: number; useful: number }): number {
	if (figure.useful > 0) return figure.credits / figure.useful;
	return figure.credits > 0 ? Number.POSITIVE_INFINITY : 0;
}

async function runJob(service: TestService, job: string, out: string, extra: string[] = []) {
	const result = await runCli(["run", job, "--out", out, "--quiet", ...extra], { env: service.env });
	return result;
}

describe("mode: adaptive", () => {
	it("climbs per domain on the first run, starts where it ended on the second, and the second run costs no more per useful record than auto and browser on any domain", async () => {
		const { service, urls } = await fourDomains();
		const dir = tempDir();
		const out = join(dir, "out");
		const adaptive = writeJob(dir, "economics", jobYaml("adaptive", urls));
		const first = await runJob(service, adaptive, out);
		// deny_all's targets fail (403): the run is not a success, whatever the mode.
		expect(first.code, first.stderr).toBe(1);
		const [firstDir] = runDirs(out, "economics");
		const firstRecords = readRecords(firstDir!);
		expect(firstRecords).toHaveLength(DOMAINS.length * PER_DOMAIN);
		// The first target of the browser-only domain climbed every rung, each fetch paid: 1 + 2 + 2 + 5.
		const climbed = firstRecords.find((record) => record.url === `${urls["127.0.0.2"]}/product/1`)!;
		expect(climbed).toMatchObject({ mode_requested: "adaptive", mode_used: "browser", credits_used: 10, useful: true });
		expect(climbed.attempts).toBe(4);
		// The blocked-datacenter domain's first target: the block page (1), then a residential request (2).
		const residential = firstRecords.find((record) => record.url === `${urls.localhost}/product/1`)!;
		expect(residential).toMatchObject({ mode_used: "request+residential", credits_used: 3, useful: true });
		// Later targets of a domain start on the rung that worked: one fetch each.
		const later = firstRecords.find((record) => record.url === `${urls["127.0.0.2"]}/product/2`)!;
		expect(later).toMatchObject({ mode_used: "browser", credits_used: 5, attempts: 1 });
		// A 404-like failure is not climbed; a 403 everywhere is, for free, once, then the domain is given up.
		const denied = firstRecords.filter((record) => record.url.startsWith(urls["127.0.0.3"]));
		expect(denied.map((record) => record.attempts)).toEqual([4, 1, 1, 1]);
		const firstSummary = readSummary(firstDir!);
		expect(firstSummary.modes).toEqual({
			"127.0.0.1": { mode: "request", proxy_type: "datacenter", credits_per_useful: 1 },
			"127.0.0.2": { mode: "browser", proxy_type: "residential", credits_per_useful: 25 / 4 },
			"127.0.0.3": { mode: "request", proxy_type: "datacenter", credits_per_useful: null },
			localhost: { mode: "request", proxy_type: "residential", credits_per_useful: 9 / 4 },
		});

		const before = service.emulator.ledger.byEndpoint("realtime").length;
		const second = await runJob(service, adaptive, out);
		expect(second.code, second.stderr).toBe(1);
		// Remembered: the second run sends each target once, on its domain's rung (deny_all: the cheapest).
		const sent = service.emulator.ledger.byEndpoint("realtime").slice(before);
		expect(sent).toHaveLength(DOMAINS.length * PER_DOMAIN);
		const modeOf = (domain: string) =>
			new Set(
				sent.filter((entry) => entry.url?.includes(`//${domain}:`)).map((e) => `${e.mode}+${e.params?.proxy_type}`),
			);
		expect(modeOf("127.0.0.1")).toEqual(new Set(["request+datacenter"]));
		expect(modeOf("localhost")).toEqual(new Set(["request+residential"]));
		expect(modeOf("127.0.0.2")).toEqual(new Set(["browser+residential"]));
		expect(modeOf("127.0.0.3")).toEqual(new Set(["request+datacenter"]));
		const learned = perDomain(runDirs(out, "economics")[1]!);
		// What the records say they cost is what the emulator charged, domain by domain.
		for (const domain of DOMAINS) {
			const charged = sent
				.filter((entry) => entry.url?.includes(`//${domain}:`))
				.reduce((sum, entry) => sum + entry.creditsCharged, 0);
			expect(learned[domain]!.credits, domain).toBe(charged);
		}

		// The same targets in auto and in browser mode, as jobs of their own.
		for (const mode of ["auto", "browser"]) {
			const job = writeJob(dir, mode, jobYaml(mode, urls, mode));
			await runJob(service, job, out);
		}
		const auto = perDomain(runDirs(out, "auto")[0]!);
		const browser = perDomain(runDirs(out, "browser")[0]!);
		for (const domain of DOMAINS) {
			expect(perUseful(learned[domain]!), domain).toBeLessThanOrEqual(perUseful(auto[domain]!));
			expect(perUseful(learned[domain]!), domain).toBeLessThanOrEqual(perUseful(browser[domain]!));
			expect(learned[domain]!.credits, domain).toBeLessThanOrEqual(browser[domain]!.credits);
		}
		// Strictly cheaper where auto pays more (datacenter-friendly) or pays for nothing (browser-only).
		expect(perUseful(learned["127.0.0.1"]!)).toBeLessThan(perUseful(auto["127.0.0.1"]!));
		expect(perUseful(learned["127.0.0.2"]!)).toBeLessThan(perUseful(auto["127.0.0.2"]!));
	});

	it("a useless record goes one rung up: a new fetch, both charges on the record", async () => {
		const { service, urls } = await fourDomains();
		const dir = tempDir();
		const out = join(dir, "out");
		// Only the browser-only domain: its shell has no price (required_empty), so every cheaper rung is useless.
		const job = writeJob(
			dir,
			"useless",
			`name: useless\nconcurrency: 1\ndefaults: {mode: adaptive, proxy_type: residential}\nextract:\n  price: {css: .price, required: true}\ntargets:\n  - ${urls["127.0.0.2"]}/product/1\n`,
		);
		const result = await runJob(service, job, out);
		expect(result.code, result.stderr).toBe(0);
		const [record] = readRecords(runDirs(out, "useless")[0]!);
		// proxy_type: residential leaves the datacenter rung out: request (2), auto (2), browser (5).
		expect(record).toMatchObject({ useful: true, mode_used: "browser", credits_used: 9, attempts: 3 });
		const sent = service.emulator.ledger.byEndpoint("realtime");
		expect(sent.map((entry) => entry.mode)).toEqual(["request", "auto", "browser"]);
		expect(sent.reduce((sum, entry) => sum + entry.creditsCharged, 0)).toBe(9);
	});
	it("a failure no stronger mode fixes is not climbed (a 404: one fetch); a refusal is (a 403: every rung once)", async () => {
		const { service, urls } = await fourDomains();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"unfixable",
			`name: unfixable\nconcurrency: 1\nretry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}\ndefaults: {mode: adaptive}\ntargets:\n  - ${urls["127.0.0.1"]}/status/404\n  - ${urls["127.0.0.1"]}/status/403\n`,
		);
		await runJob(service, job, out);
		const sent = service.emulator.ledger.byEndpoint("realtime");
		const modesOf = (path: string) =>
			sent.filter((entry) => entry.url?.endsWith(path)).map((entry) => `${entry.mode}+${entry.params?.proxy_type}`);
		// A page that is not there is not there in any mode.
		expect(modesOf("/status/404")).toEqual(["request+datacenter"]);
		// A refusal may be the address's: every rung, once each.
		expect(modesOf("/status/403")).toEqual([
			"request+datacenter",
			"request+residential",
			"auto+residential",
			"browser+residential",
		]);
	});

	it("each stronger fetch is booked against the budget before it is sent: a budget that fits two rungs ends the climb there", async () => {
		const { service, urls } = await fourDomains();
		const dir = tempDir();
		const out = join(dir, "out");
		// Rungs 1 (1 credit) and 2 (2) fit in 3; rung 3 (auto, worst case 6) does not.
		const job = writeJob(
			dir,
			"budget",
			`name: budget\nconcurrency: 1\nmax_credits: 3\ndefaults: {mode: adaptive}\nextract:\n  price: {css: .price, required: true}\ntargets:\n  - ${urls["127.0.0.2"]}/product/1\n`,
		);
		await runJob(service, job, out);
		const runDir = runDirs(out, "budget")[0]!;
		const [record] = readRecords(runDir);
		expect(record).toMatchObject({ useful: false, mode_used: "request+residential", credits_used: 3, attempts: 2 });
		expect(readSummary(runDir).stopped_reason).toBe("budget_exhausted");
		const sent = service.emulator.ledger.byEndpoint("realtime");
		expect(sent.map((entry) => entry.mode)).toEqual(["request", "request"]);
		expect(sent.reduce((sum, entry) => sum + entry.creditsCharged, 0)).toBe(3);
	});
});

describe("forecast", () => {
	it("a second identical run lands within 15 % of its forecast; --dry-run --json carries it", async () => {
		const { service, urls } = await fourDomains();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "economics", jobYaml("adaptive", urls));
		const dryBefore = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
		expect(dryBefore.code, dryBefore.stderr).toBe(0);
		expect(JSON.parse(dryBefore.stdout)[0].forecast).toBeUndefined();
		await runJob(service, job, out);
		expect(readSummary(runDirs(out, "economics")[0]!).forecast).toBeUndefined();

		const dry = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
		expect(dry.code, dry.stderr).toBe(0);
		const forecast = JSON.parse(dry.stdout)[0].forecast as { expected: number; low: number; high: number };
		expect(forecast.low).toBeLessThanOrEqual(forecast.expected);
		expect(forecast.high).toBeGreaterThanOrEqual(forecast.expected);
		const text = await runCli(["run", job, "--out", out, "--dry-run"], { env: service.env });
		expect(text.stdout).toContain(`forecast from earlier runs: ${forecast.expected} credits expected`);

		await runJob(service, job, out);
		const summary = readSummary(runDirs(out, "economics")[1]!) as RunSummary;
		expect(summary.forecast).toBeDefined();
		const { expected, spent, error } = summary.forecast!;
		expect(expected).toBe(forecast.expected);
		expect(spent).toBe(summary.credits.used);
		expect(Math.abs(error!)).toBeLessThanOrEqual(0.15);
	});
});
