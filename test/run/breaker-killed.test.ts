import { existsSync, readdirSync, readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, type SpawnedCli, spawnCli } from "../helpers/spawn-cli.js";
import { html, startTargetSite } from "../helpers/target-site.js";
import { until } from "../helpers/until.js";

/**
 * A run killed without a summary (SIGKILL, the OOM killer) keeps its breakers (docs/behaviour.md,
 * "Breakers"): the site's products reached as `localhost` are blocked on datacenter addresses by the
 * emulator (a charged block page), the same site as `127.0.0.1` is a good domain. The site holds the
 * paths it is told to until released, so the CLI is still running when it is killed. One fetch at a time:
 * the order is the job's.
 */
const BLOCKED = 15;
const GOOD = 5;

beforeAll(() => assertBuilt());

/** A product site that holds requests for `held` paths (no answer) until `release`. */
async function holdingSite() {
	const held: ServerResponse[] = [];
	const holds = new Set<string>();
	const answer = (res: ServerResponse, path: string) => html(res, `<h1>Product ${path}</h1><p>In stock.</p>`);
	const site = await startTargetSite((req, res) => {
		const path = req.url ?? "/";
		if (holds.has(path)) held.push(res);
		else answer(res, path);
	});
	return {
		port: new URL(site.origin).port,
		requests: site.requests,
		hold: (path: string) => holds.add(path),
		release: () => {
			holds.clear();
			for (const res of held.splice(0)) answer(res, "held");
		},
	};
}

/** `localhost/1, 127.0.0.1/1, … localhost/15`, with `extra` targets after `localhost/<after>`. */
function jobYaml(port: string, coolDown: string, extra: { after: number; urls: string[] }) {
	const targets: string[] = [];
	for (let index = 1; index <= BLOCKED; index++) {
		targets.push(`  - http://localhost:${port}/product/${index}\n`);
		if (index <= GOOD) targets.push(`  - http://127.0.0.1:${port}/product/${index}\n`);
		if (index === extra.after) for (const url of extra.urls) targets.push(`  - ${url}\n`);
	}
	return `name: breaker\nconcurrency: 1\ndefaults: {mode: request, proxy_type: datacenter}\nretry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}\nbreaker: {cool_down: ${coolDown}}\ntargets:\n${targets.join("")}`;
}

/** Fetches the emulator was sent, and credits it charged, for one host's targets. */
function spentOn(service: TestService, host: string) {
	const entries = service.emulator.ledger.byEndpoint("realtime").filter((entry) => entry.url?.includes(`//${host}:`));
	return { credits: entries.reduce((sum, entry) => sum + entry.creditsCharged, 0), fetches: entries.length };
}

function onlyRunDir(out: string) {
	const runs = join(out, "breaker");
	return join(runs, readdirSync(runs).find((name) => /^\d/.test(name))!);
}

/** SIGKILL the spawned CLI once it has printed `text` and the site holds its request (`holding`). */
async function killOnce(cli: SpawnedCli, text: string, holding: () => boolean) {
	let printed = "";
	cli.child.stdout?.on("data", (chunk: Buffer) => {
		printed += chunk.toString();
	});
	cli.child.stderr?.on("data", (chunk: Buffer) => {
		printed += chunk.toString();
	});
	await until(() => printed.includes(text) && holding(), `"${text}" and a held request`);
	cli.child.kill("SIGKILL");
	const ended = await cli.done;
	expect(ended.signal).toBe("SIGKILL");
}

/** The `event` lines run.log has from the latest invocation (a killed one's may never have reached it). */
function latestEvents(runDir: string, event: string) {
	const lines = readFileSync(join(runDir, "run.log"), "utf8")
		.split("\n")
		.filter((line) => line.startsWith("{"))
		.map((line) => JSON.parse(line) as { event?: string; domain?: string; opened_at?: string });
	const start = lines.findLastIndex((line) => line.event === "run_start");
	return lines.slice(start).filter((line) => line.event === event);
}

describe("breaker of a killed run", () => {
	it("SIGKILLed after its breaker opened (no summary.json): the --resume sends nothing to the domain before cool_down, and one probe after it", async () => {
		const blocking = await useTestService({ block_datacenter: ["//localhost:"] });
		const site = await holdingSite();
		// The last target is held: the run is still going, its breaker open, when it is killed.
		site.hold("/held");
		const held = `http://127.0.0.1:${site.port}/held`;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "breaker", jobYaml(site.port, "5m", { after: BLOCKED, urls: [held] }));
		const first = spawnCli(["run", job, "--out", out], blocking.env);
		await killOnce(first, "breaker open for localhost", () => site.requests.some((r) => r.path === "/held"));
		const runDir = onlyRunDir(out);
		expect(existsSync(join(runDir, "summary.json"))).toBe(false);
		expect(spentOn(blocking, "localhost")).toEqual({ credits: 8, fetches: 8 });
		site.release();

		// Within the cool-down: the killed process's breaker is still open, nothing goes to the domain.
		const early = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: blocking.env,
		});
		expect(early.code, early.stderr).toBe(6);
		expect(spentOn(blocking, "localhost")).toEqual({ credits: 8, fetches: 8 });
		const summary = readSummary(runDir);
		expect(summary.breakers).toEqual([
			expect.objectContaining({
				domain: "localhost",
				reason: expect.stringMatching(/^8 of the last 8 charged fetches were useless or failed/),
				parked: BLOCKED - 8,
			}),
		]);
		expect(latestEvents(runDir, "breaker_carried")).toEqual([
			expect.objectContaining({ domain: "localhost", opened_at: summary.breakers![0]!.opened_at }),
		]);
		// The good domain's held target is done.
		expect(readRecords(runDir)).toHaveLength(8 + GOOD + 1);

		// The cool-down over (a shorter one: the job's fetches, and so its fingerprint, are the same): one probe.
		writeJob(dir, "breaker", jobYaml(site.port, "1s", { after: BLOCKED, urls: [held] }));
		const openedAt = Date.parse(summary.breakers![0]!.opened_at);
		await until(() => Date.now() >= openedAt + 1000, "the breaker's cool-down");
		const probed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: blocking.env,
		});
		expect(probed.code, probed.stderr).toBe(6);
		expect(spentOn(blocking, "localhost")).toEqual({ credits: 9, fetches: 9 });
		expect(readSummary(runDir).breakers).toEqual([
			expect.objectContaining({
				domain: "localhost",
				reason: expect.stringMatching(/^the probe after cool_down was useless: block_signature/),
				parked: BLOCKED - 9,
			}),
		]);
	});

	it("a breaker the resume closed, that resume killed, is not carried from the older summary.json: the next resume fetches the domain", async () => {
		const blocking = await useTestService({ block_datacenter: ["//localhost:"] });
		const site = await holdingSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "breaker", jobYaml(site.port, "1s", { after: 0, urls: [] }));
		// Ends with the breaker open and writes its summary.json.
		const first = await runCli(["run", job, "--out", out, "--quiet"], { env: blocking.env });
		expect(first.code, first.stderr).toBe(6);
		const runDir = onlyRunDir(out);
		const openedAt = Date.parse(readSummary(runDir).breakers![0]!.opened_at);
		await until(() => Date.now() >= openedAt + 1000, "the breaker's cool-down");

		// The block lifted: the resume's probe (product 9) closes the breaker, product 10 is held, the process killed.
		const lifted = await useTestService();
		site.hold("/product/10");
		const second = spawnCli(["run", job, "--out", out, "--resume", basename(runDir)], lifted.env);
		await killOnce(second, "breaker closed for localhost", () => site.requests.some((r) => r.path === "/product/10"));
		expect(readSummary(runDir).breakers).toEqual([expect.objectContaining({ domain: "localhost" })]);
		site.release();

		// A cool-down long enough that a breaker carried from that summary would park the domain.
		writeJob(dir, "breaker", jobYaml(site.port, "5m", { after: 0, urls: [] }));
		const again = await useTestService();
		const third = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: again.env,
		});
		expect(third.code, third.stderr).toBe(0);
		expect(spentOn(again, "localhost")).toEqual({ credits: BLOCKED - 9, fetches: BLOCKED - 9 });
		expect(latestEvents(runDir, "breaker_carried")).toEqual([]);
		const after = readSummary(runDir);
		expect(after.complete).toBe(true);
		expect(after.breakers).toEqual([]);
		expect(readRecords(runDir)).toHaveLength(BLOCKED + GOOD);
	});
});
