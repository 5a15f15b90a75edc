import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
	createAccountClient,
	createScraperClient,
	extractJobFile,
	loadJob,
	type RunJobFileOptions,
	runJob,
	runJobFile,
	surveyTargets,
	UsageError,
} from "../../src/index.js";
import { isRunFolderName, shopJobYaml, tempDir, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";

/** What a call threw (the test fails when it returned). */
async function thrownBy(call: Promise<unknown>): Promise<unknown> {
	return call.then(
		() => {
			throw new Error("the call returned; it was expected to throw");
		},
		(error: unknown) => error,
	);
}

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
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"shop",
			shopJobYaml(service.site.url, 2, ["output: {content: files}", "extract:", "  name: {css: h1}"]),
		);
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
