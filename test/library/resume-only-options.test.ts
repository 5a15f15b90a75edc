import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type RunJobFileOptions, runJobFile, UsageError } from "../../src/index.js";
import { shopJobYaml, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { thrownBy } from "../helpers/thrown-by.js";

/**
 * `--force` and `--repair` act on a resumed run (docs/reference/cli.md): alone they once started a new
 * run and paid for every target. Refused before anything is sent, in each entry point's words.
 */

describe("run --force / --repair without --resume or --continue", () => {
	const refused: Array<[string[], string]> = [
		[["--repair"], "--repair acts on a resumed run: give --resume (or --continue) with it"],
		[["--force"], "--force acts on a resumed run: give --resume (or --continue) with it"],
		[["--force", "--repair"], "--force and --repair act on a resumed run: give --resume (or --continue) with them"],
	];
	for (const [flags, message] of refused) {
		it(`${flags.join(" ")}: exit 2, nothing sent, no run folder`, async () => {
			const service = await useTestService();
			const dir = tempDir();
			const out = join(dir, "out");
			const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
			const cli = await runCli(["run", job, "--out", out, "--quiet", ...flags], { env: service.env });
			expect(cli.code).toBe(2);
			expect(cli.stderr).toContain(`${message}; alone, a new run would start, paid for in full`);
			expect(service.emulator.ledger.entries).toHaveLength(0);
			expect(existsSync(join(out, "shop"))).toBe(false);
		});
	}
});

describe("runJobFile with force or repair and neither resume nor continue", () => {
	const refused: Array<[Partial<RunJobFileOptions>, string]> = [
		[{ repair: true }, "repair: true acts on a resumed run: give resume (or continue: true) with it"],
		[{ force: true, resume: false }, "force: true acts on a resumed run: give resume (or continue: true) with it"],
		[
			{ force: true, repair: true, continue: false },
			"force: true and repair: true act on a resumed run: give resume (or continue: true) with them",
		],
	];
	for (const [options, message] of refused) {
		it(`${JSON.stringify(options)}: UsageError, nothing sent, no run folder`, async () => {
			const service = await useTestService();
			const dir = tempDir();
			const out = join(dir, "out");
			const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
			const error = await thrownBy(runJobFile(job, { env: service.env, out, ...options }));
			expect(error).toBeInstanceOf(UsageError);
			expect((error as Error).message).toBe(`${message}; alone, a new run would start, paid for in full`);
			expect(service.emulator.ledger.entries).toHaveLength(0);
			expect(existsSync(join(out, "shop"))).toBe(false);
		});
	}

	it("with continue: true they are taken (a scheduler's one command line): no earlier run, a new one", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		const summary = await runJobFile(job, { env: service.env, out: join(dir, "out"), continue: true, force: true });
		expect(summary.complete).toBe(true);
	});
});
