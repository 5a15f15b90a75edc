import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ServiceError } from "../../src/api/index.js";
import { etaText, pauseNote, progressLogFields } from "../../src/cli/progress-display.js";
import { formatSummary, type RunSummary } from "../../src/output/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

describe("small things a new user noticed", () => {
	it("a 402 says 'Insufficient credits' once", async () => {
		const error = new ServiceError({
			status: 402,
			errorType: "Insufficient credits",
			detail: "Insufficient credits: required 2, available 0",
			endpoint: "POST /scraper/realtime",
		});
		expect(error.message).toBe("POST /scraper/realtime answered 402 Insufficient credits: required 2, available 0");
		expect(
			new ServiceError({ status: 503, errorType: "Unavailable", detail: "try later", endpoint: "x" }).message,
		).toBe("x answered 503 Unavailable: try later");

		service = await startTestService({ credits: 0 });
		const dir = tempDir();
		const job = writeJob(dir, "shop", `name: shop\ntargets:\n  - ${service.site.url}/product/1\n`);
		const run = await runCli(["run", job, "--out", join(dir, "out")], { env: service.env });
		expect(run.code).toBe(3);
		expect(run.stderr).toContain("402 Insufficient credits: required");
		expect(run.stderr).not.toContain("Insufficient credits: Insufficient credits");
	});

	it("--sandbox says on the terminal, in one line, the latency, 503s and timeout it plays", async () => {
		const dir = tempDir();
		// biome-ignore lint/suspicious/noTemplateCurlyInString: the job format's own variable
		const job = writeJob(dir, "sandboxed", "name: sandboxed\ntargets:\n  - ${SCRAPEJOB_DEMO_SITE}/product/1\n");
		const run = await runCli(["run", job, "--sandbox", "--out", join(dir, "out")]);
		expect(run.code).toBe(0);
		// Not a terminal here: one JSON log line (a terminal gets the sentence as `scrapejob: sandbox: …`).
		const notices = run.stderr
			.split("\n")
			.filter((line) => line.includes("sandbox: the local emulator"))
			.map((line) => (JSON.parse(line) as { msg: string }).msg);
		expect(notices).toEqual([
			"sandbox: the local emulator plays a real service on a fair day: 120 ms latency per request, 5 % of requests answered 503 (retried: they show as retries), realtime fetches over 1 s become tasks, concurrency 5; credits start afresh each run",
		]);
		const quiet = await runCli(["run", job, "--sandbox", "--quiet", "--out", join(dir, "out")]);
		expect(quiet.stderr).not.toContain("sandbox:");
	});

	it("counts read in the right number: 1 retry, 1 task, 1 target, 1 country", async () => {
		const summary = {
			job: "shop",
			run_id: "r",
			complete: false,
			stopped_reason: "interrupted",
			stop_message: null,
			targets: {
				total: 2,
				done: 1,
				remaining: 1,
				by_status: { ok: 1, failed: 0, skipped: 0 },
				duplicates: 0,
				skipped_rows: 0,
			},
			credits: { used: 2, by_mode: {}, remaining: null, max_credits: null },
			retries: 1,
			rate_limit_pauses: 1,
			tasks: { created: 1, completed: 1, failed: 0, left_pending: 0 },
			errors_by_kind: {},
			started_at: "",
			finished_at: "",
			wall_ms: 1000,
			throughput_per_s: 1,
			latency_ms: { p50: 1, p95: 1 },
			concurrency: 1,
			resumed_from: null,
		} satisfies RunSummary;
		const text = formatSummary(summary, "/out/shop/r", { resume: "scrapejob run shop.yaml --resume" });
		expect(text).toContain("1 retry, 1 rate-limit pause, 1 task");
		expect(text).toContain("1 target: finish with `scrapejob run shop.yaml --resume`");
		expect(formatSummary({ ...summary, retries: 2, tasks: { ...summary.tasks, created: 0 } }, "/o")).toContain(
			"2 retries, 1 rate-limit pause, 0 tasks",
		);
		// A domain's credits per useful record are rounded as the run's are (2.83, not 2.833).
		const modes = { "shop.example": { mode: "request", proxy_type: "residential", credits_per_useful: 17 / 6 } };
		expect(formatSummary({ ...summary, modes }, "/o")).toContain(
			"mode       shop.example: request+residential next run; 2.83 credits per useful record",
		);
		const single = { "shop.example": { ...modes["shop.example"], credits_per_useful: 1 } };
		expect(formatSummary({ ...summary, modes: single }, "/o")).toContain("next run; 1 credit per useful record");
		// The run's own figure says it the same way.
		const oneEach = { ...summary, credits: { ...summary.credits, used: 1 }, useful: { records: 1, rate: 1 } };
		expect(formatSummary(oneEach, "/o")).toMatch(/useful +1 of 1 records \(100%\); 1 credit per useful record/);

		service = await startTestService();
		const one = await runCli(["targeting", "--product", "rp", "--search", "germany"], { env: service.env });
		expect(one.stdout).toContain("1 country");
		expect(one.stdout).not.toContain("1 countries");
	});

	it("a job file named twice, or a copy of it, is refused before anything is sent (exit 2)", async () => {
		service = await startTestService();
		const dir = tempDir();
		const yaml = `name: twice\ndefaults:\n  mode: request\ntargets:\n  - ${service.site.url}/product/1\n`;
		const job = writeJob(dir, "twice", yaml);
		const copy = writeJob(dir, "copy", yaml);
		const out = join(dir, "out");
		const same = await runCli(["run", job, job, "--out", out], { env: service.env, cwd: dir });
		expect(same.stderr).toContain("twice.yaml is named twice: each job runs once per command");
		expect(same.code).toBe(2);
		const named = await runCli(["run", job, copy, "--out", out], { env: service.env, cwd: dir });
		expect(named.stderr).toContain('twice.yaml and copy.yaml are the same job ("twice", the same targets)');
		expect(named.code).toBe(2);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(0);
		expect(existsSync(out)).toBe(false);
	});

	it("export --json and extract --json that fail answer on stdout in one JSON line, as run --json does", async () => {
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "none", "name: none\ntargets:\n  - https://a.example/\n");
		const bad = writeJob(dir, "bad", "name: bad\ntargets:\n  - nope\n");
		const answers: Array<{ error: { code: string; message: string; problems?: unknown[] } }> = [];
		for (const argv of [
			["export", job, "--latest", "--from", out, "--out", join(dir, "x.csv"), "--json"],
			["export", bad, "--latest", "--from", out, "--out", join(dir, "x.csv"), "--json"],
			["extract", job, "--run", "latest", "--out", out, "--json"],
			["extract", bad, "--run", "latest", "--out", out, "--json"],
		]) {
			const result = await runCli(argv, { cwd: dir });
			expect(result.code, `${argv.join(" ")}: ${result.stderr}`).toBe(2);
			const lines = result.stdout.trim().split("\n");
			expect(lines, argv.join(" ")).toHaveLength(1);
			answers.push(JSON.parse(lines[0]!));
		}
		expect(answers.map((answer) => answer.error.code)).toEqual([
			"SCRAPEJOB_USAGE",
			"SCRAPEJOB_JOB_INVALID",
			expect.stringMatching(/^SCRAPEJOB_/),
			"SCRAPEJOB_JOB_INVALID",
		]);
		expect(answers[0]!.error.message).toContain("nothing to export");
		expect(answers[1]!.error.problems).toEqual([expect.objectContaining({ line: 3 })]);
	});

	it("health --json and fleet status --json that fail answer on stdout in one JSON line too (what a check or an alert reads)", async () => {
		const dir = tempDir();
		const job = writeJob(dir, "none", "name: none\ntargets:\n  - https://a.example/\n");
		const bad = writeJob(dir, "bad", "name: bad\ntargets:\n  - nope\n");
		const answers: Array<{ error: { code: string; message: string; problems?: unknown[] } }> = [];
		for (const [argv, code] of [
			[["health", "--json"], 2],
			[["health", "--json", "--scraper-url", "http://127.0.0.1:9/api/v1"], 3],
			[["fleet", "status", job, "--json"], 2],
			[["fleet", "status", job, "--json", "--fleet", "postgres://u:pw-not-shown@127.0.0.1:9/db"], 3],
			[["fleet", "status", bad, "--json"], 2],
		] as const) {
			const env = (argv as readonly string[]).includes("--scraper-url")
				? { SCRAPEJOB_SCRAPER_KEY: "some-scraper-key-1" }
				: {};
			const result = await runCli([...argv], { cwd: dir, env });
			expect(result.code, `${argv.join(" ")}: ${result.stderr}`).toBe(code);
			const lines = result.stdout.trim().split("\n");
			expect(lines, argv.join(" ")).toHaveLength(1);
			answers.push(JSON.parse(lines[0]!));
		}
		expect(answers.map((answer) => answer.error.code)).toEqual([
			"SCRAPEJOB_USAGE",
			"SCRAPEJOB_NETWORK",
			"SCRAPEJOB_USAGE",
			"SCRAPEJOB_FLEET_DATABASE",
			"SCRAPEJOB_JOB_INVALID",
		]);
		expect(answers[3]!.error.message).not.toContain("pw-not-shown");
		expect(answers[4]!.error.problems).toEqual([expect.objectContaining({ line: 3 })]);
	});

	it("every other command with --json that fails answers on stdout in one JSON line too: account, usage, task, proxies, targeting, report, merge", async () => {
		const dir = tempDir();
		// No key in the environment: the account commands refuse before sending anything.
		const env = { SCRAPEJOB_ACCOUNT_KEY: "", SCRAPEJOB_SCRAPER_KEY: "" };
		for (const [argv, message] of [
			[["account", "--json"], /^no account key: set SCRAPEJOB_ACCOUNT_KEY/],
			[["task", "abc", "--json"], /^no key: set SCRAPEJOB_ACCOUNT_KEY/],
			[["usage", "--json"], /^required option '--product <code>' not specified$/],
			[["proxies", "--json"], /^required option '--product <code>' not specified$/],
			[["targeting", "--json"], /^required option '--product <code>' not specified$/],
			[["report", join(dir, "nothing"), "--json"], /is not a run folder: cannot read summary\.json$/],
			[
				["merge", join(dir, "nothing"), "--out", join(dir, "m"), "--json"],
				/is not a run folder: cannot read run\.json$/,
			],
			[["report", "--json", "--bogus"], /^unknown option '--bogus'$/],
		] as const) {
			const result = await runCli([...argv], { cwd: dir, env });
			expect(result.code, `${argv.join(" ")}: ${result.stderr}`).toBe(2);
			expect(result.stdout, argv.join(" ")).toMatch(/^[^\n]+\n$/);
			const answer = JSON.parse(result.stdout) as { error: { code: string; message: string } };
			expect(answer.error.code, argv.join(" ")).toBe("SCRAPEJOB_USAGE");
			expect(answer.error.message, argv.join(" ")).toMatch(message);
		}
	});

	it("a command given no job file (or run folder) says that first, before any option it requires", async () => {
		const dir = tempDir();
		const job = writeJob(dir, "c", "name: c\ntargets:\n  - https://a.example/\n");
		for (const [argv, first] of [
			[["export"], "error: missing required argument 'job'"],
			[["extract"], "error: missing required argument 'job'"],
			[["merge"], "error: missing required argument 'run-dirs'"],
			// The options are still required, and said as commander says them.
			[["export", job], "error: required option '--latest' not specified"],
			[["export", job, "--latest"], "error: required option '--out <file>' not specified"],
			[["extract", job], "error: required option '--run <run-id|latest>' not specified"],
			[["merge", dir], "error: required option '--out <dir>' not specified"],
		] as const) {
			const result = await runCli([...argv], { cwd: dir });
			expect(result.code, argv.join(" ")).toBe(2);
			expect(result.stderr.split("\n")[0], argv.join(" ")).toBe(first);
		}
		const help = await runCli(["export", "--help"], { cwd: dir });
		expect(help.code).toBe(0);
	});

	it("--json usage errors commander finds (invalid value, missing option, unknown option) answer on stdout in one JSON line too", async () => {
		const dir = tempDir();
		const job = writeJob(dir, "c", "name: c\ntargets:\n  - https://a.example/\n");
		for (const [argv, message] of [
			[
				["run", job, "--json", "--sandbox", "--max-credits", "abc"],
				`option '--max-credits <n>' argument 'abc' is invalid. --max-credits must be a number >= 0, got "abc"`,
			],
			[["export", job, "--json"], "required option '--latest' not specified"],
			[["run", job, "--json", "--bogus"], "unknown option '--bogus'"],
			[["fleet", "status", "--json"], "missing required argument 'job'"],
		] as const) {
			const result = await runCli([...argv], { cwd: dir });
			expect(result.code, argv.join(" ")).toBe(2);
			// The words for people stay on stderr, as commander says them.
			expect(result.stderr).toContain(`error: ${message}`);
			expect(result.stdout, argv.join(" ")).toMatch(/^[^\n]+\n$/);
			expect(JSON.parse(result.stdout)).toEqual({ error: { code: "SCRAPEJOB_USAGE", message } });
		}
		// Without --json (or with it only after `--`), stdout stays empty.
		for (const argv of [
			["run", job, "--bogus"],
			["run", job, "--bogus", "--", "--json"],
		]) {
			const result = await runCli(argv, { cwd: dir });
			expect(result.code, argv.join(" ")).toBe(2);
			expect(result.stdout, argv.join(" ")).toBe("");
		}
	});

	it("an invalid mode gives the service's words first, then the allowed values", async () => {
		const dir = tempDir();
		const job = writeJob(dir, "bad", "name: bad\ndefaults:\n  mode: browsr\ntargets:\n  - https://a.example/\n");
		const run = await runCli(["validate", job]);
		expect(run.code).toBe(2);
		expect(run.stderr).toContain(
			'bad.yaml:3:9 defaults.mode: invalid mode value (allowed: request, browser, auto, adaptive; got "browsr"; did you mean "browser"?)',
		);
	});

	it("progress log lines use snake_case keys, like every other log line", () => {
		const fields = progressLogFields({
			done: 1,
			total: 2,
			ok: 1,
			failed: 0,
			skipped: 0,
			creditsUsed: 2,
			retries: 0,
			inFlight: 1,
			sessionDone: 1,
			paused: { reason: "rate_limited", leftMs: 4000 },
		});
		expect(fields).toEqual({
			done: 1,
			total: 2,
			ok: 1,
			failed: 0,
			skipped: 0,
			credits_used: 2,
			retries: 0,
			in_flight: 1,
			session_done: 1,
			paused: "rate_limited",
			paused_left_ms: 4000,
		});
	});

	it("a pause shows on the bar with its reason and what is left of it", () => {
		expect(pauseNote({ reason: "rate_limited", leftMs: 42_100 })).toBe("paused by the service: 43 s left");
		expect(pauseNote({ reason: "service_unavailable", leftMs: null })).toBe(
			"service unreachable: paused, probing /scraper/health",
		);
		expect(pauseNote({ reason: "share_wait", leftMs: null })).toBe(
			"waiting for a turn on the key (other shards hold its slots)",
		);
		expect(pauseNote(null)).toBeNull();
	});
});

describe("words and numbers a scheduler or a script reads", () => {
	it("a refused account key names SCRAPEJOB_ACCOUNT_KEY; dry-run with an unreadable --config exits 2 as run does", async () => {
		service = await startTestService();
		const dir = tempDir();
		const job = writeJob(dir, "shop", `name: shop\ntargets:\n  - ${service.site.url}/product/1\n`);
		const env = { ...service.env, SCRAPEJOB_ACCOUNT_KEY: "wrong-account-key-123" };
		const refused = await runCli(["run", job, "--out", join(dir, "out")], { env });
		expect(refused.code).toBe(3);
		expect(refused.stderr).toContain("401 Invalid API key");
		expect(refused.stderr).toContain("SCRAPEJOB_ACCOUNT_KEY");
		expect(refused.stderr).not.toContain("wrong-account-key-123");

		const missing = join(dir, "no-such.env");
		const dry = await runCli(["run", job, "--dry-run", "--config", missing], { env: service.env });
		const real = await runCli(["run", job, "--config", missing, "--out", join(dir, "out")], { env: service.env });
		expect(real.code).toBe(2);
		expect(dry.code).toBe(2);
		expect(dry.stderr).toContain(`cannot read config file ${missing}`);
	});

	it("a --config file holding SCRAPEJOB_DEMO_SITE is named as the mistake, not the job's variable 'not set'", async () => {
		const dir = tempDir();
		const job = writeJob(dir, "demo", "name: demo\ntargets:\n  - ${SCRAPEJOB_DEMO_SITE}/product/1\n");
		writeFileSync(join(dir, "run.env"), "SCRAPEJOB_DEMO_SITE=http://127.0.0.1:8701\n");
		for (const extra of [["--dry-run"], ["--out", join(dir, "out")]]) {
			const run = await runCli(["run", job, "--config", join(dir, "run.env"), ...extra], { env: {} });
			expect(run.code, extra.join(" ")).toBe(2);
			expect(run.stderr).toContain(
				"run.env:1:1 SCRAPEJOB_DEMO_SITE is not read from a config file: `run --sandbox` sets it to its demo site; elsewhere set it in the environment",
			);
			expect(run.stderr).not.toContain("is not set");
		}
		expect(existsSync(join(dir, "out"))).toBe(false);
	});
	it("run --dry-run --json names its figures as validate --json does (snake_case, one vocabulary)", async () => {
		const dir = tempDir();
		const job = writeJob(dir, "shop", "name: shop\ntargets:\n  - https://example.com/a\n  - https://example.com/a\n");
		const [dry] = JSON.parse((await runCli(["run", job, "--dry-run", "--json"])).stdout) as Array<
			Record<string, unknown>
		>;
		const validated = (JSON.parse((await runCli(["validate", job, "--json"])).stdout) as { jobs: unknown[] })
			.jobs[0] as Record<string, unknown>;
		for (const key of ["targets", "duplicates", "skipped_rows", "by_mode", "credits", "credits_by_mode"])
			expect(dry![key], key).toEqual(validated[key]);
		const camel = (value: unknown): string[] =>
			value !== null && typeof value === "object"
				? Object.entries(value).flatMap(([key, inner]) => [...(/[A-Z]/.test(key) ? [key] : []), ...camel(inner)])
				: [];
		expect(camel(dry)).toEqual([]);
	});

	it("run --json with an invalid job file answers on stdout in JSON, as its other failures do", async () => {
		const dir = tempDir();
		writeJob(dir, "shop", "name: shop\nconcurency: 2\ntargets:\n  - https://example.com/a\n");
		const invalid = await runCli(["run", "shop.yaml", "--json"], { cwd: dir });
		expect(invalid.code).toBe(2);
		expect(invalid.stderr).toContain('shop.yaml:2:1 concurency: unknown key; did you mean "concurrency"?');
		const answer = JSON.parse(invalid.stdout) as {
			error: { code: string; message: string; problems: Array<Record<string, unknown>> };
		};
		expect(answer.error.code).toBe("SCRAPEJOB_JOB_INVALID");
		expect(answer.error.problems).toEqual([
			expect.objectContaining({
				file: "shop.yaml",
				line: 2,
				col: 1,
				message: 'concurency: unknown key; did you mean "concurrency"?',
			}),
		]);
		// The same answer as a usage error's, which run --json gave already.
		const usage = await runCli(["run", "shop.yaml", "--json", "--resume", "--continue"], { cwd: dir });
		expect(Object.keys(JSON.parse(usage.stdout) as object)).toEqual(["error"]);
	});

	it("a hint names a job file outside the current folder by its absolute path, as typed", async () => {
		service = await startTestService();
		const jobs = tempDir();
		const elsewhere = tempDir();
		const job = writeJob(
			jobs,
			"shop",
			`name: shop\nmax_credits: 1\ntargets:\n  - ${service.site.url}/product/1\n  - ${service.site.url}/product/2\n`,
		);
		const run = await runCli(["run", job, "--out", "out"], { env: service.env, cwd: elsewhere });
		expect(run.code).toBe(1);
		expect(run.stdout).toContain(`npx scrapejob run ${job} --out out --resume`);
		expect(run.stdout).not.toContain("../");
	});

	it("the progress bar's ETA is rounded before it is split: never 1m60s", () => {
		expect(etaText(119.6)).toBe("2m00s");
		expect(etaText(59.5)).toBe("1m00s");
		expect(etaText(3599.7)).toBe("1h00m");
		expect(etaText(42.2)).toBe("42s");
		expect(etaText(Number.POSITIVE_INFINITY)).toBe("…");
	});
});

describe("passwords never in warnings", () => {
	it("skipped and invalid source rows, and bad --notify / --healthcheck values, are shown without their credentials", async () => {
		const dir = tempDir();
		writeFileSync(
			join(dir, "src.csv"),
			"url\nhttps://user:hunter2@example.com/a b\nnot a url https://u:s3cret@x\nftp://ftpuser:pa55@files.example/\n",
		);
		const skip = writeJob(dir, "skip", "name: skip\non_bad_row: skip\nsources:\n  - src.csv\n");
		const fail = writeJob(dir, "fail", "name: fail\nsources:\n  - src.csv\n");
		const skipped = await runCli(["validate", skip]);
		const failed = await runCli(["validate", fail]);
		const dry = await runCli(["run", skip, "--dry-run"]);
		expect(skipped.stderr + skipped.stdout).toContain("skipped");
		expect(failed.code).toBe(2);
		expect(failed.stderr).toContain("//***@example.com/a b");
		const flags = await runCli(["run", skip, "--healthcheck", "ftp://u:hookpass@hc.example/x"]);
		const notify = await runCli(["run", skip, "--notify", "not-a-url-with-token-abc123"]);
		expect(flags.code).toBe(2);
		expect(notify.code).toBe(2);
		expect(flags.stderr).toContain("--healthcheck must be an http:// or https:// address");
		for (const result of [skipped, failed, dry, flags, notify]) {
			const text = result.stdout + result.stderr;
			for (const secret of ["hunter2", "s3cret", "pa55", "hookpass", "abc123"]) expect(text).not.toContain(secret);
		}
	});

	it("a fleet URL written without postgres:// is refused without its password", async () => {
		const dir = tempDir();
		const job = writeJob(dir, "fleetjob", "name: fleetjob\ntargets:\n  - http://127.0.0.1:9/a\n");
		const urls = [
			"scrapejob:Hunter2-pw@db.internal:5432/scraping",
			"scrapejob:pa/ss@wd-x9@db.internal:5432/scraping",
			"mysql://scrapejob:Hunter2-pw@db.internal/scraping",
		];
		for (const url of urls) {
			for (const argv of [
				["fleet", "status", job, "--fleet", url],
				["export", job, "--latest", "--fleet", url, "--out", join(dir, "x.csv")],
			]) {
				const result = await runCli(argv);
				expect(result.code, result.stderr).toBe(2);
				expect(result.stderr).toContain("***@db.internal");
				expect(result.stderr).toContain("expected postgres://user:password@host:port/database");
				for (const secret of ["Hunter2-pw", "pa/ss", "wd-x9"])
					expect(result.stdout + result.stderr).not.toContain(secret);
			}
		}
		// libpq's key=value form, where a URL was wanted: its password was printed whole (stderr, and stdout with --json).
		for (const dsn of [
			"host=db.internal port=5432 user=scrapejob password=Hunter2-pw dbname=scraping",
			"host=db.internal user=scrapejob password='pa/ss@wd-x9' dbname=scraping",
		]) {
			for (const argv of [
				["fleet", "status", job, "--fleet", dsn, "--json"],
				["export", job, "--latest", "--fleet", dsn, "--out", join(dir, "x.csv"), "--json"],
				["run", job, "--fleet", dsn, "--json", "--out", join(dir, "out")],
			]) {
				const result = await runCli(argv, {
					env: { SCRAPEJOB_SCRAPER_KEY: "k", SCRAPEJOB_API_URL: "http://127.0.0.1:9" },
				});
				expect(result.code, result.stderr).toBe(2);
				expect(result.stderr).toContain("host=db.internal");
				expect(result.stderr).toContain("password=***");
				for (const secret of ["Hunter2-pw", "pa/ss", "wd-x9"])
					expect(result.stdout + result.stderr).not.toContain(secret);
			}
		}
		const env = { SCRAPEJOB_FLEET_URL: urls[0], SCRAPEJOB_SCRAPER_KEY: "k", SCRAPEJOB_API_URL: "http://127.0.0.1:9" };
		const run = await runCli(["run", job, "--fleet-run", "x", "--out", join(dir, "out")], { env });
		expect(run.code, run.stderr).toBe(2);
		expect(run.stderr).toContain("fleet URL ***@db.internal:5432/scraping");
		expect(run.stderr).not.toContain("Hunter2-pw");
	});
});
