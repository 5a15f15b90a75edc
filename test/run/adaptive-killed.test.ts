import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { journalLines, onlyRunDir, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";
import { until } from "../helpers/until.js";

/**
 * `mode: adaptive` killed mid-climb (docs/behaviour.md, "Adaptive mode", "Pay once, never lose a record"):
 * a cheaper rung's answer was paid and left for a stronger one, and the process dies before the stronger
 * one answers. The resume counts what the dead process paid, and its figures equal the service's ledger.
 */
beforeAll(() => assertBuilt());

/** The datacenter-rung fetches the service answered for URLs with `part` in them. */
function datacenterFetches(service: TestService, part: string): number {
	return service.emulator.ledger
		.byEndpoint("realtime")
		.filter((entry) => entry.url?.includes(part) && entry.params?.proxy_type === "datacenter").length;
}

/**
 * `/product/1` on datacenter addresses: a block page (charged 1); the next rung's first attempt: a charged failure
 * whose retry waits (days), and the process is killed then. `/product/2` is served on any rung.
 */
async function killedMidClimb(
	extra: string,
): Promise<{ service: TestService; job: string; out: string; runDir: string }> {
	const service = await useTestService({
		concurrency: 2,
		block_datacenter: ["/\\/product\\/1$/"],
		faults: [
			{ kind: "slow", match: "/\\/product\\/1$/", times: 1, delay_ms: 0 },
			{ kind: "scraping_error", match: "/\\/product\\/1$/", times: 1, credits: 1 },
		],
	});
	const dir = tempDir();
	const out = join(dir, "out");
	const job = writeJob(
		dir,
		"climbkill",
		[
			"name: climbkill",
			"concurrency: 1",
			"breaker: false",
			"defaults: {mode: adaptive}",
			"retry: {attempts: 3, backoff_ms: 2000000000, max_backoff_ms: 2000000000}",
			extra,
			"targets:",
			`  - ${service.site.url}/product/1`,
			`  - ${service.site.url}/product/2`,
			"",
		].join("\n"),
	);
	const first = spawnCli(["run", job, "--out", out], service.env);
	let runDir = "";
	await until(() => {
		runDir = onlyRunDir(out, "climbkill");
		// The stronger rung's charged failure journalled, after the climb's line: a kill between the service's
		// charge and its line is the one window the docs name, not what this tests.
		const events = journalLines(runDir).map((line) => line.e);
		return events.lastIndexOf("charged") > events.indexOf("climb") && events.includes("climb");
	}, "the journal's line of the stronger rung's charged failure");
	first.child.kill("SIGKILL");
	expect((await first.done).signal).toBe("SIGKILL");
	// The block page (1) and the stronger rung's failure (1).
	expect(service.emulator.ledger.totalCharged()).toBe(2);
	expect(datacenterFetches(service, "/product/1")).toBe(1);
	return { service, job, out, runDir };
}

describe("mode: adaptive, SIGKILL mid-climb", () => {
	for (const [name, extra] of [
		["without a page read", ""],
		["with extract: (the block page's answer kept in paid/ while read)", "extract:\n  title: h1"],
	] as const) {
		it(`${name}: the resume goes on from the rung climbed to, and its credits equal the ledger`, async () => {
			const { service, job, out, runDir } = await killedMidClimb(extra);
			const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
				env: service.env,
			});
			expect(resumed.code, resumed.stderr).toBe(0);
			// The rung the killed process paid is not paid again.
			expect(datacenterFetches(service, "/product/1")).toBe(1);
			const charged = service.emulator.ledger.totalCharged();
			const records = readRecords(runDir);
			expect(records).toHaveLength(2);
			expect(records.every((record) => record.useful === true)).toBe(true);
			// Block page 1, the failure 1, the residential request 2.
			expect(records.find((record) => record.url.endsWith("/product/1"))).toMatchObject({
				credits_used: 4,
				mode_used: "request+residential",
			});
			expect(readSummary(runDir).credits.used).toBe(charged);
			expect(records.reduce((sum, record) => sum + record.credits_used, 0)).toBe(charged);
		}, 30_000);
	}
});

describe("mode: adaptive, SIGKILL after a domain learned its rung", () => {
	it("the resume starts the domain's targets on that rung: the cheap rung is not paid again to learn it", async () => {
		// Datacenter fetches of localhost get a block page: the first target climbs to residential, the rest start there.
		const service = await useTestService({ block_datacenter: ["//localhost:"] }, 20);
		const port = new URL(service.site.url).port;
		const dir = tempDir();
		const out = join(dir, "out");
		const targets = Array.from({ length: 6 }, (_, index) => `  - http://localhost:${port}/product/${index + 1}`);
		const job = writeJob(
			dir,
			"learned",
			[
				"name: learned",
				"concurrency: 1",
				"breaker: false",
				"defaults: {mode: adaptive}",
				"targets:",
				...targets,
				"",
			].join("\n"),
		);
		const first = spawnCli(["run", job, "--out", out], service.env);
		let runDir = "";
		await until(() => {
			runDir = onlyRunDir(out, "learned");
			return readRecords(runDir).length >= 2;
		}, "two records");
		first.child.kill("SIGKILL");
		expect((await first.done).signal).toBe("SIGKILL");
		expect(datacenterFetches(service, "localhost")).toBe(1);

		const resumed = await runCli(["run", job, "--out", out, "--resume", basename(runDir), "--quiet"], {
			env: service.env,
		});
		expect(resumed.code, resumed.stderr).toBe(0);
		expect(readRecords(runDir)).toHaveLength(6);
		// Only the first target's block page was fetched on datacenter addresses, before the kill.
		expect(datacenterFetches(service, "localhost")).toBe(1);
		expect(readSummary(runDir).modes).toEqual({
			localhost: expect.objectContaining({ mode: "request", proxy_type: "residential" }),
		});
	}, 30_000);
});
