import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadJob, runJobFile, surveyNewRun, surveyTargets, UsageError } from "../../src/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

/** What `run --dry-run --json` prints for one job (the fields a survey has). */
interface DryRunReport {
	targets: number;
	total: number;
	deselected: number;
	credits: { min: number; max: number };
	forecast?: { expected: number; low: number; high: number };
}

/** Six product pages and two that fail: once run, the six are fresh for an hour. */
function freshJobYaml(site: string): string {
	const products = Array.from({ length: 6 }, (_, index) => `  - ${site}/product/${index + 1}`);
	return ["name: shop", "freshness: 1h", "defaults:", "  mode: request", "targets:", ...products]
		.concat([`  - ${site}/status/500`, `  - ${site}/status/404`, ""])
		.join("\n");
}

describe("surveyNewRun counts what `run --dry-run` counts", () => {
	it("a job with history and freshness: the same targets, left out and forecast as the dry run's; surveyTargets counts all", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", freshJobYaml(service.site.url));
		await runJobFile(job, { env: service.env, out, maxCredits: 100 });

		const loaded = await loadJob(job, { env: {}, cwd: dir });
		const survey = await surveyNewRun(loaded, { out });
		const cli = await runCli(["run", job, "--out", out, "--dry-run", "--json"], { env: service.env });
		expect(cli.code).toBe(0);
		const [dry] = JSON.parse(cli.stdout) as DryRunReport[];
		expect(dry!.deselected).toBe(6);
		expect({
			targets: survey.targets,
			total: survey.total,
			deselected: survey.deselected,
			credits: survey.creditRange,
			forecast: survey.forecast,
		}).toEqual({
			targets: dry!.targets,
			total: dry!.total,
			deselected: dry!.deselected,
			credits: dry!.credits,
			forecast: dry!.forecast,
		});
		expect(survey.total).toBe(2);
		expect(survey.leftOut).toBe("fresh");
		expect(survey.forecast).not.toBeNull();
		// The job's every target, none left out: what the guide once called the dry run.
		const all = await surveyTargets(loaded.job, loaded.counts);
		expect([all.total, all.deselected]).toEqual([8, 0]);

		// Its options are runJobFile's words for the same choices, as `--freshness 0` and `--retry-failed`.
		const none = await surveyNewRun(loaded, { out, freshness: "0" });
		expect([none.total, none.deselected, none.leftOut]).toEqual([8, 0, null]);
		const failed = await surveyNewRun(loaded, { out, retryFailed: true });
		expect([failed.total, failed.deselected, failed.leftOut]).toEqual([2, 6, "not failed"]);
	});

	it("refuses a misspelt option or a freshness that is not a duration (UsageError)", async () => {
		const dir = tempDir();
		const loaded = await loadJob(writeJob(dir, "shop", freshJobYaml("http://127.0.0.1:9")), { env: {}, cwd: dir });
		const typo = { out: join(dir, "out"), freshnes: "1h" } as Parameters<typeof surveyNewRun>[1];
		await expect(surveyNewRun(loaded, typo)).rejects.toThrow(
			new UsageError('surveyNewRun: unknown option "freshnes"; did you mean "freshness"?'),
		);
		await expect(surveyNewRun(loaded, { freshness: "soon" })).rejects.toThrow(/^freshness must be /);
	});
});
