import { existsSync, readdirSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it, onTestFinished } from "vitest";
import {
	extractJobFile,
	ResumeError,
	type RunJobFileOptions,
	runJobFile,
	SourceScanStoppedError,
	UsageError,
} from "../../src/index.js";
import {
	isRunFolderName,
	keptPagesShopJob,
	onlyRunDir,
	readRecords,
	readSummary,
	shopJobYaml,
	tempDir,
	writeJob,
} from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { useTestService } from "../helpers/service.js";

/** What a library call's error is, or the summary when it returned. */
async function outcomeOf(call: Promise<unknown>): Promise<unknown> {
	return call.then(
		(result) => ({ returned: result }),
		(error: unknown) => error,
	);
}

describe("runJobFile refuses what `scrapejob run` refuses while parsing its flags: before anything is sent", () => {
	const refused: Array<[string, Partial<RunJobFileOptions>, string]> = [
		["a negative concurrency", { concurrency: -3 }, "concurrency must be a positive integer"],
		["no concurrency", { concurrency: 0 }, "concurrency must be a positive integer"],
		["a fractional concurrency", { concurrency: 1.5 }, "concurrency must be a positive integer"],
		["a negative budget", { maxCredits: -1 }, "maxCredits must be a number >= 0"],
		["a budget that is not a number", { maxCredits: Number.NaN }, "maxCredits must be a number >= 0"],
		["no grace period", { gracePeriodMs: 0 }, "gracePeriodMs must be a positive integer"],
		["a task poll of no time", { taskPollMs: 0 }, "taskPollMs must be a positive integer"],
		["a notify address that is not http", { notify: "ftp://user:notify-secret@127.0.0.1/x" }, "notify must be"],
		["a healthcheck that is not an address", { healthcheck: "ping-secret-uuid" }, "healthcheck must be"],
		["a freshness that is not a duration", { freshness: "soon" }, "freshness must be"],
		["an outage timeout that is not a duration", { outageTimeout: "a while" }, "outageTimeout must be"],
	];
	for (const [what, options, message] of refused) {
		it(`${what}: UsageError, no request, no run folder, no secret in the message`, async () => {
			const service = await useTestService();
			const dir = tempDir();
			const out = join(dir, "out");
			const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
			const error = await outcomeOf(runJobFile(job, { env: service.env, out, ...options }));
			expect(error).toBeInstanceOf(UsageError);
			expect((error as Error).message).toContain(message);
			expect((error as Error).message).not.toMatch(/notify-secret|ping-secret/);
			expect(service.emulator.ledger.entries).toHaveLength(0);
			expect(existsSync(join(out, "shop"))).toBe(false);
		});
	}

	it("the CLI refuses the same values (exit 2) without echoing a secret", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		const out = join(dir, "out");
		const health = await runCli(["run", job, "--out", out, "--healthcheck", "ping-secret-uuid"], { env: service.env });
		expect(health.code).toBe(2);
		expect(health.stderr).toContain("--healthcheck must be");
		expect(health.stderr).not.toContain("ping-secret");
		const budget = await runCli(["run", job, "--out", out, "--max-credits", "-1"], { env: service.env });
		expect(budget.code).toBe(2);
		expect(service.emulator.ledger.entries).toHaveLength(0);
	});
});

describe("runJobFile with nothing to resume", () => {
	it("throws ResumeError, as documented, for no earlier run and for a run id that is not there; nothing sent", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		const none = await outcomeOf(runJobFile(job, { env: service.env, out, resume: true }));
		expect(none).toBeInstanceOf(ResumeError);
		expect((none as Error).message).toMatch(/^no earlier run of job shop under .* to resume$/);
		const missing = await outcomeOf(runJobFile(job, { env: service.env, out, resume: "20990101T000000Z-000000" }));
		expect(missing).toBeInstanceOf(ResumeError);
		expect((missing as ResumeError).code).toBe("SCRAPEJOB_USAGE");
		expect(service.emulator.ledger.entries).toHaveLength(0);
		// Not "nothing to do": the CLI exits 2 for these.
		expect([(none as ResumeError).nothingToDo, (missing as ResumeError).nothingToDo]).toEqual([false, false]);
		expect((await runCli(["run", job, "--out", out, "--resume"], { env: service.env })).code).toBe(2);
	});

	it("says nothingToDo when the CLI would exit 0: a resume of a complete run, a retryFailed with nothing failed", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		expect((await runJobFile(job, { env: service.env, out })).complete).toBe(true);
		const fetched = service.emulator.ledger.byEndpoint("realtime").length;
		const complete = await outcomeOf(runJobFile(job, { env: service.env, out, resume: true }));
		expect(complete).toBeInstanceOf(ResumeError);
		expect((complete as ResumeError).nothingToDo).toBe(true);
		const nothingFailed = await outcomeOf(runJobFile(job, { env: service.env, out, retryFailed: true }));
		expect(nothingFailed).toBeInstanceOf(ResumeError);
		expect((nothingFailed as ResumeError).nothingToDo).toBe(true);
		for (const flag of ["--resume", "--retry-failed"])
			expect((await runCli(["run", job, "--out", out, flag, "--quiet"], { env: service.env })).code).toBe(0);
		// No fetch was sent after the first run.
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(fetched);
	});
});

describe("runJobFile without a key", () => {
	it("throws a UsageError (as the CLI's exit 2) with code SCRAPEJOB_USAGE, before anything is made", async () => {
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml("http://127.0.0.1:9", 1));
		const error = await outcomeOf(runJobFile(job, { env: {}, out }));
		expect(error).toBeInstanceOf(UsageError);
		expect((error as UsageError).code).toBe("SCRAPEJOB_USAGE");
		expect((error as Error).message).toMatch(/^no key: set SCRAPEJOB_ACCOUNT_KEY/);
		expect(existsSync(join(out, "shop", ".lock"))).toBe(false);
	});
});

describe("runJobFile's outageTimeout is --outage-timeout", () => {
	it("a service answering 503 to every fetch stops the run past outageTimeout (service_unavailable), as the flag does", async () => {
		const service = await useTestService({ concurrency: 1, faults: [{ kind: "unavailable", match: "/./" }] });
		const dir = tempDir();
		const job = writeJob(
			dir,
			"shop",
			shopJobYaml(service.site.url, 3, ["retry:", "  attempts: 2", "  backoff_ms: 50"]),
		);
		const library = await runJobFile(job, { env: service.env, out: join(dir, "lib"), outageTimeout: "1s" });
		expect(library.complete).toBe(false);
		expect(library.stopped_reason).toBe("service_unavailable");
		const cli = await runCli(["run", job, "--out", join(dir, "cli"), "--outage-timeout", "1s", "--quiet", "--json"], {
			env: service.env,
		});
		expect(cli.code).toBe(3);
		expect((JSON.parse(cli.stdout) as { stopped_reason: string }).stopped_reason).toBe("service_unavailable");
	});
});

describe("runJobFile stopped before its first fetch throws SourceScanStoppedError (documented), nothing sent", () => {
	it("a signal aborted before the call: nothing started, nothing sent", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		const stop = new AbortController();
		stop.abort();
		const error = await outcomeOf(runJobFile(job, { env: service.env, out, signal: stop.signal }));
		expect(error).toBeInstanceOf(SourceScanStoppedError);
		expect((error as SourceScanStoppedError).code).toBe("SCRAPEJOB_ABORTED");
		expect(service.emulator.ledger.entries).toHaveLength(0);
		expect(existsSync(join(out, "shop"))).toBe(false);
	});

	it("aborted while the account is looked up: SourceScanStoppedError, the lock given back, a later call runs", async () => {
		const service = await useTestService();
		const stop = new AbortController();
		// An account API that never answers: the signal aborts once the look-up has arrived.
		const silent = createServer(() => stop.abort());
		await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
		onTestFinished(
			() =>
				new Promise<void>((resolve) => {
					silent.closeAllConnections();
					silent.close(() => resolve());
				}),
		);
		const apiUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		const error = await outcomeOf(
			runJobFile(job, { env: { ...service.env, SCRAPEJOB_API_URL: apiUrl }, out, signal: stop.signal }),
		);
		expect(error).toBeInstanceOf(SourceScanStoppedError);
		expect((error as Error).message).toBe("stopped while connecting to the service: nothing was sent");
		expect(existsSync(join(out, "shop", ".lock"))).toBe(false);
		const next = await runJobFile(job, { env: service.env, out });
		expect(next.complete).toBe(true);
	});
});

describe("what the CLI prints about a job file, the library says to its logger", () => {
	it("a duplicate target's warning (file:line:col) goes to `logger`", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(
			dir,
			"shop",
			["name: shop", "targets:", `  - ${service.site.url}/product/1`, `  - ${service.site.url}/product/1`, ""].join(
				"\n",
			),
		);
		const lines: Array<{ level: number; msg: string }> = [];
		const sink = new Writable({
			write(chunk, _encoding, done) {
				lines.push(JSON.parse(String(chunk)) as { level: number; msg: string });
				done();
			},
		});
		const summary = await runJobFile(job, { env: service.env, out: join(dir, "out"), logger: pino(sink) });
		expect(summary.targets.duplicates).toBe(1);
		const warning = lines.find((line) => line.msg.includes("duplicate"));
		expect(warning?.level).toBe(40);
		expect(warning?.msg).toMatch(/shop\.yaml:4:5 warning: /);
	});
});

describe("extractJobFile without `run`", () => {
	it("throws UsageError naming the option (a JavaScript caller may leave it out), before anything is made", async () => {
		const dir = tempDir();
		const job = writeJob(dir, "shop", shopJobYaml("http://127.0.0.1:9", 1, ["extract:", "  name: h1"]));
		const options = { out: join(dir, "out") } as unknown as Parameters<typeof extractJobFile>[1];
		const error = await outcomeOf(extractJobFile(job, options));
		expect(error).toBeInstanceOf(UsageError);
		expect((error as Error).message).toMatch(/^run: /);
		expect(existsSync(join(dir, "out"))).toBe(false);
	});
});

describe("extractJobFile with a signal aborted before the call", () => {
	it("throws SourceScanStoppedError, as runJobFile does: no new run folder, no lock left; a later call runs", async () => {
		const service = await useTestService();
		const { out, job } = keptPagesShopJob(service.site.url);
		const first = await runJobFile(job, { env: service.env, out });
		expect(first.complete).toBe(true);
		const folders = () => readdirSync(join(out, "shop")).filter(isRunFolderName).sort();
		const before = folders();
		const error = await outcomeOf(
			extractJobFile(job, { run: "latest", out, env: service.env, signal: AbortSignal.abort() }),
		);
		expect(error).toBeInstanceOf(SourceScanStoppedError);
		expect((error as Error).message).toBe("stopped before it started: nothing was sent");
		expect(folders()).toEqual(before);
		expect(existsSync(join(out, "shop", ".lock"))).toBe(false);
		const later = await extractJobFile(job, { run: "latest", out, env: service.env });
		expect(later.complete).toBe(true);
		expect(later.targets.by_status.ok).toBe(2);
	});
});

describe("a throw from onProgress", () => {
	it("does not end the run as an internal error: every target recorded, complete; the call throws that error at the end", async () => {
		const service = await useTestService({ concurrency: 1 });
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 5, ["concurrency: 1"]));
		const bug = new Error("a bug in the caller's progress callback");
		let calls = 0;
		const error = await outcomeOf(
			runJobFile(job, {
				env: service.env,
				out,
				onProgress: (progress) => {
					calls += 1;
					if (progress.done >= 2) throw bug;
				},
			}),
		);
		expect(error).toBe(bug);
		// Not called again after its throw.
		expect(calls).toBe(2);
		const runDir = onlyRunDir(out, "shop");
		const summary = readSummary(runDir);
		expect(summary.complete).toBe(true);
		expect(summary.stopped_reason).toBeNull();
		expect(readRecords(runDir).map((record) => record.status)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
		expect(service.emulator.ledger.byEndpoint("realtime")).toHaveLength(5);
	});
});
