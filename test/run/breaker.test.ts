import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import type { TestService } from "../helpers/service.js";
import { useTestService } from "../helpers/service.js";
import { until } from "../helpers/until.js";

/**
 * The per-domain paid-failure breaker (docs/behaviour.md, "Breakers"): the demo site reached as
 * `localhost` serves datacenter requests a block page (charged, useless), the same site as `127.0.0.1` is
 * a good domain. One fetch at a time, so the order is the job's.
 */
const BLOCKED = 15;
const GOOD = 5;

function jobYaml(service: TestService, extra = "") {
	const port = new URL(service.site.url).port;
	const targets: string[] = [];
	for (let index = 1; index <= BLOCKED; index++) {
		targets.push(`  - http://localhost:${port}/product/${index}\n`);
		if (index <= GOOD) targets.push(`  - http://127.0.0.1:${port}/product/${index}\n`);
	}
	return `name: breaker\nconcurrency: 1\ndefaults: {mode: request, proxy_type: datacenter}\nretry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}\n${extra}targets:\n${targets.join("")}`;
}

/** Credits the emulator charged, and fetches it was sent, for one host's targets. */
function spentOn(service: TestService, host: string) {
	const entries = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.url?.includes(`//${host}:`));
	return { credits: entries.reduce((sum, entry) => sum + entry.creditsCharged, 0), fetches: entries.length };
}

function onlyRunDir(out: string) {
	const runs = join(out, "breaker");
	return join(runs, readdirSync(runs).find((name) => /^\d/.test(name))!);
}

/** A short cool-down: the resume after it is waited for on the clock. */
const COOL_DOWN = "1s";
const COOL_DOWN_MS = 1000;

describe("breaker", () => {
	it("a blocking domain's breaker opens after trip of window charged useless fetches: the rest parked, the good domain done, exit 6; a --resume within the cool-down sends nothing; after it, the block lifted, the parked targets are fetched once", async () => {
		const blocking = await useTestService({ block_datacenter: ["//localhost:"] });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "breaker", jobYaml(blocking, `breaker: {cool_down: ${COOL_DOWN}}\n`));
		const metrics = join(dir, "metrics", "scrapejob.prom");
		const result = await runCli(["run", job, "--out", out, "--metrics", metrics], { env: blocking.env });
		expect(result.code, result.stderr).toBe(6);
		const runDir = onlyRunDir(out);
		const records = readRecords(runDir);
		const blocked = records.filter((record) => record.url.includes("//localhost:"));
		const good = records.filter((record) => record.url.includes("//127.0.0.1:"));
		// Request on datacenter: 1 credit a fetch, its worst case too. Spent before the breaker opened: at most
		// window × worst case (here trip: 8); after it: none.
		expect(blocked).toHaveLength(8);
		expect(blocked.every((record) => record.useful === false)).toBe(true);
		expect(spentOn(blocking, "localhost")).toEqual({ credits: 8, fetches: 8 });
		expect(good).toHaveLength(GOOD);
		expect(good.every((record) => record.useful === true)).toBe(true);
		const summary = readSummary(runDir);
		expect(summary.complete).toBe(false);
		expect(summary.breakers).toEqual([
			{
				domain: "localhost",
				reason: expect.stringMatching(
					/^8 of the last 8 charged fetches were useless or failed \(last: block_signature/,
				),
				opened_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
				parked: BLOCKED - 8,
				credits_saved: BLOCKED - 8,
			},
		]);
		expect(result.stdout).toMatch(/breaker +localhost open since .*; 7 targets parked, 7 credits saved/);
		// The report names it too (the notify payload is the summary itself).
		expect(readFileSync(join(runDir, "report.html"), "utf8")).toContain(
			"breaker open: localhost (8 of the last 8 charged fetches",
		);
		// And the metrics: a series for the open breaker's domain only (the good domain has none).
		const breakerSeries = () =>
			readFileSync(metrics, "utf8")
				.split("\n")
				.filter((line) => line.startsWith("scrapejob_breaker_open{"));
		expect(breakerSeries()).toEqual([expect.stringMatching(/^scrapejob_breaker_open\{.*domain="localhost".*\} 1$/)]);
		const openedAt = Date.parse(summary.breakers![0]!.opened_at);
		expect(result.stdout).toContain(
			`a resume sends one target as its probe from ${new Date(openedAt + COOL_DOWN_MS).toISOString()}, nothing before`,
		);

		// At once: the breaker is still open (the earlier session's), so its targets stay parked and nothing is sent.
		const early = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: blocking.env,
		});
		expect(early.code, early.stderr).toBe(6);
		expect(spentOn(blocking, "localhost")).toEqual({ credits: 8, fetches: 8 });
		expect(readRecords(runDir)).toHaveLength(8 + GOOD);
		expect(readSummary(runDir).breakers).toEqual([
			expect.objectContaining({ domain: "localhost", parked: BLOCKED - 8 }),
		]);

		// The cool-down over and the block lifted (a new service without the scenario key).
		await until(() => Date.now() >= openedAt + COOL_DOWN_MS, "the breaker's cool-down");
		const lifted = await useTestService();
		const resumed = await runCli(
			["run", job, "--out", out, "--resume", basename(runDir), "--quiet", "--metrics", metrics],
			{ env: { ...lifted.env } },
		);
		expect(resumed.code, resumed.stderr).toBe(0);
		expect(breakerSeries()).toEqual([]);
		expect(spentOn(lifted, "localhost")).toEqual({ credits: BLOCKED - 8, fetches: BLOCKED - 8 });
		expect(spentOn(lifted, "127.0.0.1").fetches).toBe(0);
		const all = readRecords(runDir);
		expect(all).toHaveLength(BLOCKED + GOOD);
		expect(new Set(all.map((record) => record.id)).size).toBe(BLOCKED + GOOD);
		const after = readSummary(runDir);
		expect(after.complete).toBe(true);
		expect(after.breakers).toEqual([]);
	});

	it("a --continue after the cool-down, the domain still blocking, pays for one probe, not another window", async () => {
		const blocking = await useTestService({ block_datacenter: ["//localhost:"] });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "breaker", jobYaml(blocking, `breaker: {cool_down: ${COOL_DOWN}}\n`));
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: blocking.env })).code).toBe(6);
		const runDir = onlyRunDir(out);
		const openedAt = Date.parse(readSummary(runDir).breakers![0]!.opened_at);
		await until(() => Date.now() >= openedAt + COOL_DOWN_MS, "the breaker's cool-down");
		const resumed = await runCli(["run", job, "--out", out, "--continue", "--quiet"], { env: blocking.env });
		expect(resumed.code, resumed.stderr).toBe(6);
		// The probe's block page re-opened it: one credit more, the other six still parked.
		expect(spentOn(blocking, "localhost")).toEqual({ credits: 9, fetches: 9 });
		expect(readSummary(runDir).breakers).toEqual([
			expect.objectContaining({
				domain: "localhost",
				reason: expect.stringMatching(/^the probe after cool_down was useless: block_signature/),
				parked: BLOCKED - 9,
			}),
		]);
	});

	it("a job changed since the breaker opened (another proxy), resumed with --force, is fetched at once", async () => {
		const blocking = await useTestService({ block_datacenter: ["//localhost:"] });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "breaker", jobYaml(blocking));
		expect((await runCli(["run", job, "--out", out, "--quiet"], { env: blocking.env })).code).toBe(6);
		// The cause fixed: residential addresses are not blocked. The default cool-down (5m) has not passed.
		writeJob(dir, "breaker", jobYaml(blocking).replace("proxy_type: datacenter", "proxy_type: residential"));
		const resumed = await runCli(["run", job, "--out", out, "--resume", "--force", "--quiet"], { env: blocking.env });
		expect(resumed.code, resumed.stderr).toBe(0);
		expect(readSummary(onlyRunDir(out)).breakers).toEqual([]);
		// Every target again, each once, on residential addresses (the changed targets are new ones).
		expect(spentOn(blocking, "localhost").fetches).toBe(8 + BLOCKED);
	});

	it("`breaker: false` fetches every target of the blocking domain", async () => {
		const blocking = await useTestService({ block_datacenter: ["//localhost:"] });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "breaker", jobYaml(blocking, "breaker: false\n"));
		const result = await runCli(["run", job, "--out", out, "--quiet"], { env: blocking.env });
		expect(result.code, result.stderr).toBe(0);
		expect(spentOn(blocking, "localhost")).toEqual({ credits: BLOCKED, fetches: BLOCKED });
		expect(readRecords(onlyRunDir(out))).toHaveLength(BLOCKED + GOOD);
		expect(readSummary(onlyRunDir(out)).breakers).toBeUndefined();
	});
});
