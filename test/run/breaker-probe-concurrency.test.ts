import { readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { until } from "../helpers/until.js";

/**
 * The half-open breaker's probe with fetches in parallel (docs/behaviour.md, "Breakers"): the domain's other
 * targets wait for the probe's answer instead of being parked until the next resume, so a useful probe
 * lets the resume finish them.
 */
const BLOCKED = 20;

function jobYaml(service: TestService, concurrency: number) {
	const port = new URL(service.site.url).port;
	const targets = Array.from({ length: BLOCKED }, (_, index) => `  - http://localhost:${port}/product/${index + 1}\n`);
	return `name: probe\nconcurrency: ${concurrency}\nbreaker: {cool_down: 1s}\ndefaults: {mode: request, proxy_type: datacenter}\nretry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}\ntargets:\n${targets.join("")}`;
}

function onlyRunDir(out: string) {
	const runs = join(out, "probe");
	return join(runs, readdirSync(runs).find((name) => /^\d/.test(name))!);
}

/**
 * A run at concurrency 1 whose breaker opened (exit 6, 8 records), once its cool-down is over: what the
 * resume at concurrency 4 starts from.
 */
async function openedBreaker() {
	const blocking = await useTestService({ block_datacenter: ["//localhost:"] });
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(dir, "probe", jobYaml(blocking, 1));
	expect((await runCli(["run", job, "--out", out, "--quiet"], { env: blocking.env })).code).toBe(6);
	const runDir = onlyRunDir(out);
	const openedAt = Date.parse(readSummary(runDir).breakers![0]!.opened_at);
	expect(readRecords(runDir)).toHaveLength(8);
	await until(() => Date.now() >= openedAt + 1000, "the breaker's cool-down");
	return { blocking, dir, out, job, runDir };
}

describe("breaker probe with concurrency", () => {
	it("a useful probe, the block lifted: the resume fetches every parked target, each once, and completes", async () => {
		const { blocking, dir, out, job, runDir } = await openedBreaker();
		const lifted = await useTestService();
		// The same job with four fetches at a time.
		writeJob(dir, "probe", jobYaml(blocking, 4));
		const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: lifted.env,
		});
		expect(resumed.code, resumed.stderr).toBe(0);
		const records = readRecords(runDir);
		expect(records).toHaveLength(BLOCKED);
		expect(new Set(records.map((record) => record.id)).size).toBe(BLOCKED);
		expect(lifted.emulator.ledger.byEndpoint("realtime")).toHaveLength(BLOCKED - 8);
		expect(readSummary(runDir).complete).toBe(true);
	});

	it("a useless probe, the block still there: the targets that waited for it are parked, one fetch paid", async () => {
		const { blocking, dir, out, job, runDir } = await openedBreaker();
		writeJob(dir, "probe", jobYaml(blocking, 4));
		const resumed = await runCli(["run", job, "--out", out, "--continue", "--quiet"], { env: blocking.env });
		expect(resumed.code, resumed.stderr).toBe(6);
		expect(blocking.emulator.ledger.byEndpoint("realtime")).toHaveLength(9);
		expect(readRecords(runDir)).toHaveLength(9);
		expect(readSummary(runDir).breakers).toEqual([
			expect.objectContaining({
				reason: expect.stringMatching(/^the probe after cool_down was useless/),
				parked: BLOCKED - 9,
			}),
		]);
	});
});
