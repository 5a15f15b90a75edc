import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { formatNumber } from "../../src/common/index.js";
import { isRunFolderName, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

/** What the function stands in for: the output must not change for anyone reading it. */
const oracle = (value: number, decimals: number) => value.toLocaleString("en-US", { maximumFractionDigits: decimals });

describe("formatNumber writes what toLocaleString('en-US') writes", () => {
	it("for the edges: halves, carries, grouping, tiny and huge numbers, signs and non-numbers", () => {
		const edges = [
			0,
			-0,
			1,
			-1,
			999,
			1000,
			-1000,
			999_999.995,
			1_234_567,
			1.005,
			2.675,
			0.125,
			0.135,
			1.5,
			2.5,
			-2.5,
			0.994,
			0.995,
			9.995,
			99.995,
			123_456.785,
			1e-7,
			5e-7,
			1.5e-7,
			1e21,
			1.2345e22,
			-9.87654321e25,
			Number.MAX_SAFE_INTEGER,
			Number.MAX_VALUE,
			Number.MIN_VALUE,
			Number.NaN,
			Number.POSITIVE_INFINITY,
			Number.NEGATIVE_INFINITY,
		];
		for (const decimals of [0, 1, 2, 3]) {
			for (const value of edges)
				expect(formatNumber(value, decimals), `${value} to ${decimals}`).toBe(oracle(value, decimals));
		}
	});

	it("for 20,000 random numbers across magnitudes", () => {
		let seed = 42;
		const random = () => {
			seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
			return seed / 2 ** 31;
		};
		for (let i = 0; i < 20_000; i++) {
			const magnitude = 10 ** Math.floor(random() * 16 - 4);
			const value = (random() - 0.3) * magnitude;
			// Prices and credits: numbers with few decimals, where halves are common.
			const rounded = i % 2 === 0 ? value : Math.round(value * 1000) / 1000;
			const decimals = i % 4;
			expect(formatNumber(rounded, decimals), `${rounded} to ${decimals}`).toBe(oracle(rounded, decimals));
		}
	});
});

describe("a run touches no Intl", () => {
	let service: TestService | undefined;
	afterEach(async () => {
		vi.restoreAllMocks();
		await service?.close();
		service = undefined;
	});

	it("neither the dry run's cost sentences nor the run with its report use toLocaleString, Intl or localeCompare", async () => {
		service = await startTestService();
		const dir = tempDir();
		const port = new URL(service.site.url).port;
		// Two hosts with as many failures each: the report's failing-hosts table must break the tie.
		const urls = ["127.0.0.1", "localhost"]
			.flatMap((host) => [`http://${host}:${port}/page/1`, `http://${host}:${port}/status/404`])
			.map((url) => `  - ${url}`)
			.join("\n");
		const job = writeJob(dir, "intl", `name: intl\nmax_credits: 1000\ndefaults:\n  mode: request\ntargets:\n${urls}\n`);
		// The first of these pages ICU's data in: ~9 MB held for the rest of a run (bench/README.md).
		const used = [
			vi.spyOn(Number.prototype, "toLocaleString"),
			vi.spyOn(String.prototype, "localeCompare"),
			vi.spyOn(Intl, "NumberFormat"),
			vi.spyOn(Intl, "Collator"),
		];
		const dry = await runCli(["run", job, "--dry-run"], { env: service.env, cwd: dir });
		expect(dry.stdout).toContain("max_credits 1,000");
		const out = join(dir, "out");
		const run = await runCli(["run", job, "--out", out, "--quiet"], { env: service.env, cwd: dir });
		const runDir = join(out, "intl", readdirSync(join(out, "intl")).find(isRunFolderName)!);
		const summary = readSummary(runDir);
		expect(summary.targets.by_status).toMatchObject({ ok: 2, failed: 2 });
		const report = readFileSync(join(runDir, "report.html"), "utf8");
		expect(report).toContain("localhost");
		for (const spy of used) expect(spy).not.toHaveBeenCalled();
		expect(run.code).toBe(1);
	});
});
