import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ScenarioInput } from "../../src/emulator/index.js";
import { type RunJobFileOptions, runExitCode, runJobFile } from "../../src/index.js";
import { isRunFolderName, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { type TestService, useTestService } from "../helpers/service.js";

/**
 * `runExitCode(summary)` is the exit code `scrapejob run` ends with (docs/reference/exit-codes.md): the
 * same job through `runJobFile` and the CLI, each into its own results root, must agree on it — a
 * wrapper of the library tells its scheduler what the CLI would.
 */
interface Case {
	readonly name: string;
	readonly code: number;
	readonly scenario?: ScenarioInput;
	job(service: TestService): string;
	readonly flags?: readonly string[];
	readonly options?: Partial<RunJobFileOptions>;
}

const head = ["concurrency: 1", "retry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}"];
const products = (service: TestService, paths: readonly string[]) =>
	paths.map((path) => `  - ${service.site.url}${path}`);

const CASES: readonly Case[] = [
	{
		name: "every target ok",
		code: 0,
		job: (service) =>
			["name: shop", ...head, "targets:", ...products(service, ["/product/1", "/product/2"])].join("\n"),
	},
	{
		name: "a failed target",
		code: 1,
		scenario: { faults: [{ kind: "scraping_error", match: "/product/2" }] },
		job: (service) =>
			["name: shop", ...head, "targets:", ...products(service, ["/product/1", "/product/2"])].join("\n"),
	},
	{
		name: "stopped at max_credits",
		code: 1,
		job: (service) =>
			["name: shop", ...head, "max_credits: 2", "defaults: {mode: request}", "targets:"]
				.concat(products(service, ["/product/1", "/product/2", "/product/3"]))
				.join("\n"),
	},
	{
		name: "a required field below min_fill, every target ok",
		code: 1,
		job: (service) =>
			[
				"name: shop",
				...head,
				"extract:",
				"  sku: {css: .no-such-class, required: true}",
				"extract_checks: {min_fill: 0.5}",
				"targets:",
				...products(service, ["/product/1", "/product/2"]),
			].join("\n"),
	},
	{
		name: "a breaker open at the end",
		code: 6,
		scenario: { block_datacenter: ["//localhost:"] },
		job: (service) => {
			const port = new URL(service.site.url).port;
			const blocked = Array.from({ length: 8 }, (_, index) => `  - http://localhost:${port}/product/${index + 1}`);
			return [
				"name: shop",
				...head,
				"breaker: {window: 4, trip: 4}",
				"defaults: {mode: request, proxy_type: datacenter}",
				"targets:",
				...blocked,
				...products(service, ["/product/1"]),
			].join("\n");
		},
	},
	{
		name: "the service down past the outage timeout",
		code: 3,
		scenario: { faults: [{ kind: "unavailable", match: "/./" }] },
		job: (service) =>
			["name: shop", ...head, "targets:", ...products(service, ["/product/1", "/product/2"])].join("\n"),
		flags: ["--outage-timeout", "1s"],
		options: { outageTimeout: "1s" },
	},
];

/** The one run folder under `out` of job `shop`. */
function runDirOf(out: string): string {
	const runs = readdirSync(join(out, "shop")).filter(isRunFolderName);
	expect(runs).toHaveLength(1);
	return join(out, "shop", runs[0]!);
}

describe("runExitCode(summary) is the exit code of `scrapejob run` for the same run", () => {
	for (const entry of CASES) {
		it(`${entry.name}: ${entry.code}`, async () => {
			const service = await useTestService(entry.scenario ?? {});
			const dir = tempDir();
			const job = writeJob(dir, "shop", `${entry.job(service)}\n`);
			const library = await runJobFile(job, { env: service.env, out: join(dir, "lib"), ...entry.options });
			const cli = await runCli(["run", job, "--out", join(dir, "cli"), "--quiet", ...(entry.flags ?? [])], {
				env: service.env,
			});
			expect(cli.code, cli.stderr).toBe(entry.code);
			expect(runExitCode(library)).toBe(entry.code);
			// The summary.json a run leaves says the same, whichever entry point wrote it.
			expect(runExitCode(readSummary(runDirOf(join(dir, "cli"))))).toBe(entry.code);
			expect(runExitCode(readSummary(library.run_dir))).toBe(entry.code);
		});
	}

	it("a run stopped by its signal: 130, as the CLI's Ctrl-C", async () => {
		const service = await useTestService({ concurrency: 1 });
		const dir = tempDir();
		const job = writeJob(
			dir,
			"shop",
			`${["name: shop", ...head, "targets:", ...products(service, ["/product/1", "/product/2", "/product/3"])].join("\n")}\n`,
		);
		const stop = new AbortController();
		const summary = await runJobFile(job, {
			env: service.env,
			out: join(dir, "lib"),
			signal: stop.signal,
			onProgress: (progress) => {
				if (progress.done >= 1) stop.abort();
			},
		});
		expect(summary.stopped_reason).toBe("interrupted");
		expect(runExitCode(summary)).toBe(130);
	});
});
