import { appendFileSync, mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { extractJobFile, type RunJobFileOptions, runJobFile } from "../../src/index.js";
import { acquireRunLock } from "../../src/run/locks/run-lock.js";
import { keptPagesShopJob, onlyRunDir, shopJobYaml, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";
import { messageOf } from "../helpers/thrown-by.js";

/**
 * A library caller passes options (`resume: true`, `maxCredits`), not flags: what a call throws or
 * stops with names those; the CLI's words for the same case stay its flags.
 */

/** Whether a text names a CLI flag (`--resume`, `--max-credits`, …). */
const FLAG = /(^|[\s(`])--[a-z]/;

describe("the budget's stop_message", () => {
	it("names resume and maxCredits for a library run, --resume --max-credits for the CLI's", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		const library = await runJobFile(job, { env: service.env, out: join(dir, "lib"), maxCredits: 1 });
		expect(library.stopped_reason).toBe("budget_exhausted");
		expect(library.stop_message).toBe(
			"stopping: max_credits 1 reached (0 spent; the next fetch may cost 2); continue with resume: true and a larger maxCredits",
		);
		const cli = await runCli(["run", job, "--out", join(dir, "cli"), "--max-credits", "1", "--quiet", "--json"], {
			env: service.env,
		});
		expect(cli.code).toBe(1);
		expect((JSON.parse(cli.stdout) as { stop_message: string }).stop_message).toBe(
			"stopping: max_credits 1 reached (0 spent; the next fetch may cost 2); continue with --resume --max-credits <larger>",
		);
	});
});

describe("refusals before anything is sent name the library's options", () => {
	it("a resume with a budget at or below what the run spent", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		const first = await runJobFile(job, { env: service.env, out, maxCredits: 4 });
		expect(first.complete).toBe(false);
		const spent = first.credits.used;
		const library = await messageOf(runJobFile(job, { env: service.env, out, resume: true, maxCredits: spent }));
		expect(library).toBe(
			`maxCredits ${spent} is not above the ${spent} credits this run has already spent; resume with maxCredits larger than ${spent}`,
		);
		const cli = await runCli(["run", job, "--out", out, "--resume", "--max-credits", String(spent)], {
			env: service.env,
		});
		expect(cli.code).toBe(2);
		expect(cli.stderr).toContain(`--max-credits ${spent} is not above the ${spent} credits`);
	});

	it("a resume of a run whose results.jsonl holds a line that is not a record: the call that repairs it", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		await runJobFile(job, { env: service.env, out, maxCredits: 1 });
		const runDir = onlyRunDir(out, "shop");
		appendFileSync(join(runDir, "results.jsonl"), "not a record\n");
		const message = await messageOf(runJobFile(job, { env: service.env, out, resume: true }));
		expect(message).toMatch(
			new RegExp(`fetch their targets again, call runJobFile with \`resume: "${basename(runDir)}", repair: true\`$`),
		);
		const repaired = await runJobFile(job, {
			env: service.env,
			out,
			resume: basename(runDir),
			repair: true,
			maxCredits: 100,
		});
		expect(repaired.complete).toBe(true);
	});

	const refused: Array<[string, Partial<RunJobFileOptions>, string]> = [
		[
			"no key",
			{},
			"no key: set SCRAPEJOB_ACCOUNT_KEY (or SCRAPEJOB_SCRAPER_KEY for scraping only), or try it offline with sandbox: true",
		],
		[
			"a fleet run named without a fleet",
			{ fleetRun: "nightly" },
			"fleetRun names a fleet run: it needs the fleet option (or SCRAPEJOB_FLEET_URL)",
		],
		["a shard that is not I/N", { shard: "two" }, 'shard must be I/N (1-based, e.g. 2/8) or auto/N, got "two"'],
		[
			"a fleet worker asked to resume and repair",
			{ fleet: "postgres://worker@127.0.0.1:9/jobs", resume: true, repair: true },
			"not with fleet: resume (use continue: true: the fleet run goes on by itself), repair",
		],
	];
	for (const [what, options, message] of refused) {
		it(`${what}: ${message}`, async () => {
			const dir = tempDir();
			const job = writeJob(dir, "shop", shopJobYaml("http://127.0.0.1:9", 1));
			const env =
				what === "no key" ? {} : { SCRAPEJOB_ACCOUNT_KEY: "sk_never_used", SCRAPEJOB_API_URL: "http://127.0.0.1:9" };
			const text = await messageOf(runJobFile(job, { env, out: join(dir, "out"), ...options }));
			expect(text).toBe(message);
			expect(text).not.toMatch(FLAG);
		});
	}

	it("an accept, a retryFailed and an extract's run that name no run of the job", async () => {
		const service = await useTestService();
		const { out, job } = keptPagesShopJob(service.site.url);
		await runJobFile(job, { env: service.env, out });
		const accept = await messageOf(runJobFile(job, { env: service.env, out, accept: "20990101T000000Z-000000" }));
		expect(accept).toMatch(/^accept: no run 20990101T000000Z-000000 in /);
		const retry = await messageOf(runJobFile(job, { env: service.env, out, retryFailed: "20990101T000000Z-000000" }));
		expect(retry).toMatch(/^retryFailed: no run 20990101T000000Z-000000 of job shop under /);
		const extract = await messageOf(extractJobFile(job, { env: service.env, out, run: "20990101T000000Z-000000" }));
		expect(extract).toMatch(/^run: no run 20990101T000000Z-000000 of job shop under /);
		const cli = await runCli(["extract", job, "--out", out, "--run", "20990101T000000Z-000000"], { env: service.env });
		expect(cli.code).toBe(2);
		expect(cli.stderr).toContain("--run: no run 20990101T000000Z-000000 of job shop under ");
	});
});

describe("a run of another shard layout in progress", () => {
	it("the refusal names the library's shard option, and suggests a layout only when the other run has one", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		mkdirSync(join(out, "shop"), { recursive: true });
		// Shard 2/2 of the job runs (this process holds its lock).
		const held = acquireRunLock(join(out, "shop"), "20261129T000000Z-0a0b0c", { name: ".lock-shard-2-of-2" });
		try {
			const library = await messageOf(runJobFile(job, { env: service.env, out, shard: "1/3" }));
			expect(library).toContain("run it when that one has ended, or with shard I/2");
			expect(library).not.toMatch(FLAG);
		} finally {
			held.release();
		}
		const unsharded = acquireRunLock(join(out, "shop"), "20261129T000000Z-0d0e0f");
		try {
			const library = await messageOf(runJobFile(job, { env: service.env, out, shard: "1/2" }));
			expect(library).toMatch(/would fetch its targets a second time: run it when that one has ended$/);
		} finally {
			unsharded.release();
		}
		expect(service.emulator.ledger.byEndpoint("realtime")).toEqual([]);
	});
});
