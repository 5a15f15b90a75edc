import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { extractJobFile, JobValidationError, loadJob, runJobFile } from "../../src/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

/**
 * A job file's problems point at where its allowed keys are listed, in the words of the entry point
 * (docs/guides/library.md): the CLI's user runs `npx scrapejob schema`; a library caller has no CLI to
 * run, and is pointed at the schema file the package ships.
 */
const CLI_HINT = "npx scrapejob schema";
const SCHEMA_FILE = "node_modules/scrapejob/jobs/job.schema.json";

/** A key far from any (the allowed keys are too many to list), and a file that is not a mapping. */
function badJobs(): { dir: string; unknownKey: string; list: string } {
	const dir = tempDir();
	return {
		dir,
		unknownKey: writeJob(dir, "unknown", "name: t\ntargets: [https://shop.example/a]\ndefaults:\n  zqxwv: 1\n"),
		list: writeJob(dir, "list", "- a\n- b\n"),
	};
}

async function problemsOf(call: Promise<unknown>): Promise<string> {
	const error = await call.then(
		() => null,
		(thrown: unknown) => thrown,
	);
	expect(error).toBeInstanceOf(JobValidationError);
	return (error as JobValidationError).problems.map((problem) => problem.message).join("\n");
}

describe("where a job file's allowed keys are", () => {
	it("the CLI (validate, run, extract) says to run `npx scrapejob schema`", async () => {
		const service = await useTestService();
		const { dir, unknownKey, list } = badJobs();
		for (const job of [unknownKey, list]) {
			for (const argv of [
				["validate", job],
				["run", job, "--out", join(dir, "out")],
				["extract", job, "--run", "latest", "--out", join(dir, "out")],
			]) {
				const cli = await runCli(argv, { env: service.env, cwd: dir });
				expect(cli.code, argv.join(" ")).toBe(2);
				expect(cli.stderr, argv.join(" ")).toContain(`\`${CLI_HINT}\``);
				expect(cli.stderr).not.toContain("job.schema.json");
			}
		}
	});

	it("loadJob, runJobFile and extractJobFile name the schema file the package ships", async () => {
		const service = await useTestService();
		const { dir, unknownKey, list } = badJobs();
		for (const job of [unknownKey, list]) {
			for (const call of [
				() => loadJob(job, { env: {} }),
				() => runJobFile(job, { env: service.env, out: join(dir, "out") }),
				() => extractJobFile(job, { env: service.env, out: join(dir, "out"), run: "latest" }),
			]) {
				const messages = await problemsOf(call());
				expect(messages).toContain(SCHEMA_FILE);
				expect(messages).not.toContain(CLI_HINT);
			}
		}
		// The file named is there, and is in what the package publishes.
		expect(existsSync(join(import.meta.dirname, "../../jobs/job.schema.json"))).toBe(true);
		const pkg = JSON.parse(readFileSync(join(import.meta.dirname, "../../package.json"), "utf8")) as {
			name: string;
			files: string[];
		};
		expect(pkg.name).toBe("scrapejob");
		expect(pkg.files).toContain("jobs");
	});
});
