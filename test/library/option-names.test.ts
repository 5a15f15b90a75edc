import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
	createAccountClient,
	createScraperClient,
	extractJobFile,
	formatSummary,
	loadJob,
	lockJobOutput,
	type RunJobFileOptions,
	runJob,
	runJobFile,
	startDemoSite,
	startEmulator,
	streamTargets,
	surveyTargets,
	UsageError,
} from "../../src/index.js";
import { isRunFolderName, keptPagesShopJob, shopJobYaml, tempDir, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";
import { thrownBy } from "../helpers/thrown-by.js";

/** A misspelt option, as a JavaScript caller (or a cast) passes it past the types. */
function withTypo<T>(options: T, typo: Record<string, unknown>): T {
	return { ...options, ...typo } as T;
}

describe("an option a library call does not have is refused (UsageError) before anything is sent", () => {
	it("runJobFile: `maxCredit` (meant: maxCredits) would have run the job on its own budget", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 3));
		const options = withTypo<RunJobFileOptions>({ env: service.env, out }, { maxCredit: 1 });
		const error = await thrownBy(runJobFile(job, options));
		expect(error).toBeInstanceOf(UsageError);
		expect((error as UsageError).code).toBe("SCRAPEJOB_USAGE");
		expect((error as Error).message).toBe('runJobFile: unknown option "maxCredit"; did you mean "maxCredits"?');
		expect(service.emulator.ledger.entries).toHaveLength(0);
		expect(existsSync(join(out, "shop"))).toBe(false);
	});

	it("runJobFile: a name near none of its options is refused with the list of them", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
		const options = withTypo<RunJobFileOptions>({ env: service.env, out: join(dir, "out") }, { bogus: 1 });
		const error = await thrownBy(runJobFile(job, options));
		expect(error).toBeInstanceOf(UsageError);
		expect((error as Error).message).toMatch(
			/^runJobFile: unknown option "bogus"; its options: sandbox, out, resume, /,
		);
		expect(service.emulator.ledger.entries).toHaveLength(0);
	});

	it("extractJobFile: `thread` (meant: threads) makes no run folder", async () => {
		const service = await useTestService();
		const { out, job } = keptPagesShopJob(service.site.url);
		expect((await runJobFile(job, { env: service.env, out })).complete).toBe(true);
		const before = readdirSync(join(out, "shop")).filter(isRunFolderName);
		const error = await thrownBy(
			extractJobFile(job, withTypo({ run: "latest", out, env: service.env }, { thread: 2 })),
		);
		expect(error).toBeInstanceOf(UsageError);
		expect((error as Error).message).toBe('extractJobFile: unknown option "thread"; did you mean "threads"?');
		expect(readdirSync(join(out, "shop")).filter(isRunFolderName)).toEqual(before);
	});

	it("runJob: `maxCredit` is refused before the lock, the health check or a fetch", async () => {
		const service = await useTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const { job, counts } = await loadJob(writeJob(dir, "shop", shopJobYaml(service.site.url, 3)), {
			env: {},
			cwd: dir,
		});
		const client = createScraperClient({
			scraperKey: service.emulator.scraperKey,
			baseUrl: service.emulator.scraperUrl,
		});
		const options = {
			job,
			survey: await surveyTargets(job, counts),
			client,
			concurrency: 2,
			outRoot: out,
			signal: new AbortController().signal,
			secrets: [],
		};
		const error = await thrownBy(runJob(withTypo(options, { maxCredit: 1 })));
		expect(error).toBeInstanceOf(UsageError);
		expect((error as Error).message).toBe('runJob: unknown option "maxCredit"; did you mean "maxCredits"?');
		expect(service.emulator.ledger.entries).toHaveLength(0);
		expect(existsSync(join(out, "shop"))).toBe(false);
	});

	it("loadJob: `checkSource` (meant: checkSources)", async () => {
		const dir = tempDir();
		const path = writeJob(dir, "shop", shopJobYaml("http://127.0.0.1:9", 1));
		const error = await thrownBy(loadJob(path, withTypo({ cwd: dir }, { checkSource: false })));
		expect(error).toBeInstanceOf(UsageError);
		expect((error as Error).message).toBe('loadJob: unknown option "checkSource"; did you mean "checkSources"?');
	});

	it("createScraperClient and createAccountClient: `baseURL` would send the key to the public service", async () => {
		const service = await useTestService();
		const scraper = () =>
			createScraperClient(
				withTypo({ scraperKey: service.emulator.scraperKey }, { baseURL: service.emulator.scraperUrl }),
			);
		expect(scraper).toThrow(UsageError);
		expect(scraper).toThrow('createScraperClient: unknown option "baseURL"; did you mean "baseUrl"?');
		const account = () =>
			createAccountClient(withTypo({ accountKey: service.emulator.accountKey }, { baseURL: service.emulator.apiUrl }));
		expect(account).toThrow(UsageError);
		expect(account).toThrow('createAccountClient: unknown option "baseURL"; did you mean "baseUrl"?');
	});
});

describe("the library's other calls that take options refuse a misspelt one too", () => {
	it("startEmulator, startDemoSite, streamTargets, lockJobOutput's lease and formatSummary's hints", async () => {
		// `latency` (meant: latencyMs) would have served a fast site to a test of slow pages.
		const site = await thrownBy(startDemoSite(withTypo({}, { latency: 500 })));
		expect(site).toBeInstanceOf(UsageError);
		expect((site as Error).message).toBe('startDemoSite: unknown option "latency"; did you mean "latencyMs"?');
		const emulator = await thrownBy(startEmulator(withTypo({}, { scenarios: { credits: 5 } })));
		expect(emulator).toBeInstanceOf(UsageError);
		expect((emulator as Error).message).toBe('startEmulator: unknown option "scenarios"; did you mean "scenario"?');

		const dir = tempDir();
		const { job } = await loadJob(writeJob(dir, "shop", shopJobYaml("http://127.0.0.1:9", 2)), { cwd: dir });
		const stream = streamTargets(job, withTypo({}, { onproblem: () => undefined }));
		const streamed = await thrownBy(stream.next());
		expect(streamed).toBeInstanceOf(UsageError);
		expect((streamed as Error).message).toBe('streamTargets: unknown option "onproblem"; did you mean "onProblem"?');

		// A lease misspelt would have judged another host's lock by the default lease: no lock is taken.
		const out = join(dir, "out");
		expect(() => lockJobOutput(out, "shop", "run-1", ".lock", withTypo({}, { leaseMS: 5000 }))).toThrow(
			`lockJobOutput's lease: unknown option "leaseMS"; did you mean "leaseMs"?`,
		);
		expect(existsSync(join(out, "shop"))).toBe(false);

		const summary = JSON.parse(
			JSON.stringify({ job: "shop", run_id: "x", complete: true, targets: {}, credits: {} }),
		) as Parameters<typeof formatSummary>[0];
		expect(() => formatSummary(summary, dir, withTypo({}, { jobfile: "x" }))).toThrow(
			`formatSummary's hints: unknown option "jobfile"; did you mean "jobFile"?`,
		);
	});
});

describe("an option of the wrong kind is refused (UsageError) before anything is sent", () => {
	const refused: Array<[string, Record<string, unknown>, string]> = [
		["an onProgress that is not a function", { onProgress: "x" }, 'onProgress must be a function, got a string ("x")'],
		["a signal that is not an AbortSignal", { signal: {} }, "signal must be an AbortSignal"],
		[
			"a logger without a logger's methods",
			{ logger: {} },
			"logger must be a logger with info, warn and error methods",
		],
		["a sandbox that is not a boolean", { sandbox: "yes" }, 'sandbox must be true or false, got a string ("yes")'],
		["a continue that is not a boolean", { continue: 1 }, "continue must be true or false, got a number (1)"],
		["a resume that is neither", { resume: 1 }, "resume must be true, false or a string, got a number (1)"],
		["an out that is not a string", { out: 5 }, "out must be a string, got a number (5)"],
		["an env that is not an object", { env: "SCRAPEJOB_ACCOUNT_KEY=x" }, "env must be an object"],
	];
	for (const [what, typo, message] of refused) {
		it(`runJobFile: ${what}: no request, no run folder`, async () => {
			const service = await useTestService();
			const dir = tempDir();
			const job = writeJob(dir, "shop", shopJobYaml(service.site.url, 2));
			const options = withTypo<RunJobFileOptions>({ env: service.env, cwd: dir, out: "out" }, typo);
			const error = await thrownBy(runJobFile(job, options));
			expect(error).toBeInstanceOf(UsageError);
			expect((error as UsageError).code).toBe("SCRAPEJOB_USAGE");
			expect((error as Error).message).toContain(`runJobFile: ${message}`);
			expect(service.emulator.ledger.entries).toHaveLength(0);
			expect(existsSync(join(dir, "out", "shop"))).toBe(false);
		});
	}

	it("runJobFile and extractJobFile: a path that is not a string", async () => {
		const error = await thrownBy(runJobFile(5 as unknown as string, { sandbox: true }));
		expect(error).toBeInstanceOf(UsageError);
		expect((error as Error).message).toBe(
			"runJobFile: the job file's path must be a non-empty string, got a number (5)",
		);
		const extract = await thrownBy(extractJobFile(undefined as unknown as string, { run: "latest" }));
		expect(extract).toBeInstanceOf(UsageError);
		expect((extract as Error).message).toBe(
			"extractJobFile: the job file's path must be a non-empty string, got undefined",
		);
	});

	it("extractJobFile: a signal, a logger or threads of the wrong kind make no run folder", async () => {
		const service = await useTestService();
		const { out, job } = keptPagesShopJob(service.site.url);
		expect((await runJobFile(job, { env: service.env, out })).complete).toBe(true);
		const folders = () => readdirSync(join(out, "shop")).filter(isRunFolderName);
		const before = folders();
		const cases: Array<[Record<string, unknown>, string]> = [
			[{ signal: {} }, "extractJobFile: signal must be an AbortSignal"],
			[
				{ logger: "debug" },
				'extractJobFile: logger must be a logger with info, warn and error methods (pino\'s), got a string ("debug")',
			],
			[{ threads: "2" }, 'extractJobFile: threads must be a number, got a string ("2")'],
			[{ threads: 0 }, "threads must be a positive integer, got 0"],
		];
		for (const [typo, message] of cases) {
			const error = await thrownBy(extractJobFile(job, withTypo({ run: "latest", out, env: service.env }, typo)));
			expect(error, JSON.stringify(typo)).toBeInstanceOf(UsageError);
			expect((error as Error).message).toContain(message);
		}
		expect(folders()).toEqual(before);
	});
});
