import { resolve } from "node:path";
import { type AccountClient, createAccountClient, createScraperClient, type ScraperClient } from "../api/index.js";
import { resolveConfig } from "../config/index.js";
import { startDemoSite, startEmulator } from "../emulator/index.js";
import { jobUsesBrowser, loadJob } from "../job/index.js";
import type { RunSummary } from "../output/index.js";
import { newRunId } from "../output/index.js";
import {
	lockJobOutput,
	type ProgressSnapshot,
	type RunJobOptions,
	resolveConcurrency,
	runJob,
	surveyTargets,
} from "../run/index.js";
import { ScrapejobError, UsageError } from "../shared/index.js";

export interface RunJobFileOptions {
	/**
	 * Run against an in-process emulator and demo site instead of the service (the job may name the
	 * site as `${SCRAPEJOB_DEMO_SITE}`). @default false
	 */
	readonly sandbox?: boolean;
	/** Root folder of results: `<out>/<job>/<run-id>/`, relative to `cwd`. @default "output" */
	readonly out?: string;
	/**
	 * Abort to stop: no new fetches, in-flight ones finish; the summary says `complete: false`. Aborted
	 * while the sources are still being read (before the first fetch), it throws `SourceScanStoppedError`.
	 */
	readonly signal?: AbortSignal;
	/** Called as each target finishes. */
	readonly onProgress?: (snapshot: ProgressSnapshot) => void;
	/** Where keys and addresses come from (`SCRAPEJOB_ACCOUNT_KEY`, …). @default process.env */
	readonly env?: NodeJS.ProcessEnv;
	/** A `KEY=VALUE` file of those variables, as `--config`. */
	readonly config?: string;
	/** Base of relative paths (the job file, `out`, `config`). @default process.cwd() */
	readonly cwd?: string;
}

/** The run's summary (as `summary.json`), with where its files are. */
export interface RunJobFileResult extends RunSummary {
	readonly run_dir: string;
	/** `report.html`, or null when it could not be written. */
	readonly report: string | null;
}

/** The account has no scraper access (`has_access: false`), or no browser access for `browser_session:` targets. */
export class NoScraperAccessError extends ScrapejobError {
	constructor(message: string) {
		super("SCRAPEJOB_NO_ACCESS", message);
	}
}

interface Scraper {
	/** The scraper client a run fetches with, on at most its concurrency's sockets. */
	clientFor(connections: number): ScraperClient;
	/** The account client, when an account key is known (browser access is read with it). */
	readonly account: AccountClient | null;
	/** The account's concurrency, or null when only a scraper key is known (learned from the service). */
	readonly concurrency: number | null;
	readonly secrets: string[];
	close(): Promise<void>;
}

/** A scraper client from the configuration (or the sandbox), the way `scrapejob run` makes one. */
async function connect(options: RunJobFileOptions, cwd: string, env: NodeJS.ProcessEnv): Promise<Scraper> {
	const config = await resolveConfig({
		flags: options.config !== undefined ? { config: options.config } : {},
		env,
		cwd,
	});
	const scraperKey = config.scraperKey;
	if (scraperKey) {
		return {
			clientFor: (connections) =>
				createScraperClient({
					scraperKey,
					...(config.scraperUrl ? { baseUrl: config.scraperUrl } : {}),
					connections,
				}),
			concurrency: null,
			account: null,
			secrets: [scraperKey],
			close: async () => {},
		};
	}
	if (!config.accountKey) {
		throw new UsageError("no key: set SCRAPEJOB_ACCOUNT_KEY (or SCRAPEJOB_SCRAPER_KEY), or pass { sandbox: true }");
	}
	const account = createAccountClient({
		accountKey: config.accountKey,
		...(config.apiUrl ? { baseUrl: config.apiUrl } : {}),
	});
	const access = await account.scraperAccess(options.signal);
	if (!access.has_access || !access.api_key || access.concurrency < 1) {
		throw new NoScraperAccessError("the account has no scraper access (GET /public/scraper); nothing was sent");
	}
	const key = access.api_key;
	return {
		clientFor: (connections) =>
			createScraperClient({ scraperKey: key, baseUrl: config.scraperUrl ?? access.endpoint_url, connections }),
		concurrency: access.concurrency,
		account,
		secrets: [config.accountKey, access.api_key],
		close: async () => {},
	};
}

/** The browser service for `browser_session:` targets, read from GET /public/browser as `scrapejob run` does. */
async function browserFor(scraper: Scraper, signal: AbortSignal): Promise<NonNullable<RunJobOptions["browser"]>> {
	const account = scraper.account;
	if (!account) {
		throw new NoScraperAccessError(
			"browser_session targets need SCRAPEJOB_ACCOUNT_KEY (the browser key is read with it)",
		);
	}
	const access = await account.browserAccess(signal);
	if (!access.has_access || !access.api_key || access.concurrency < 1) {
		throw new NoScraperAccessError("the account has no browser access (GET /public/browser); nothing was sent");
	}
	scraper.secrets.push(access.api_key);
	return {
		endpointUrl: access.endpoint_url,
		key: access.api_key,
		concurrency: access.concurrency,
		maxSessionSeconds: access.max_session_length_seconds > 0 ? access.max_session_length_seconds : 60,
		creditsBefore: access.credits,
		readCredits: async () => (await account.browserAccess()).credits,
	};
}

/**
 * Run one job file to the end (or until `signal` aborts) and return its summary: validate, take the
 * job's lock, connect, fetch every target once, write the run folder. The same steps as
 * `scrapejob run FILE`; throws `JobValidationError` (bad job), `LockHeldError` (another run holds
 * the lock) or a service error (refused key) before anything is paid for.
 */
export async function runJobFile(path: string, options: RunJobFileOptions = {}): Promise<RunJobFileResult> {
	const cwd = options.cwd ?? process.cwd();
	let env = options.env ?? process.env;
	const signal = options.signal ?? new AbortController().signal;
	const closers: Array<() => Promise<void>> = [];
	try {
		if (options.sandbox) {
			const site = await startDemoSite({});
			closers.push(() => site.close());
			const emulator = await startEmulator({ port: 0, ledger: false });
			closers.push(() => emulator.close());
			env = {
				SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey,
				SCRAPEJOB_API_URL: emulator.apiUrl,
				SCRAPEJOB_DEMO_SITE: site.url,
			};
		}
		const { job, counts } = await loadJob(resolve(cwd, path), { env, cwd, signal });
		const outRoot = resolve(cwd, options.out ?? "output");
		const runId = newRunId();
		// The lock before the first request: a run that loses it has sent nothing.
		const lock = lockJobOutput(outRoot, job.name, runId);
		try {
			const scraper = await connect(options, cwd, env);
			closers.push(() => scraper.close());
			const wanted = job.concurrency === "auto" ? null : job.concurrency;
			// The one concurrency policy (the CLI's too): the account's limit, a lower job number, the local cap.
			const plan = resolveConcurrency({ accountLimit: scraper.concurrency, wanted });
			const browser = jobUsesBrowser(job) ? await browserFor(scraper, signal) : undefined;
			const survey = await surveyTargets(job, counts, signal);
			const result = await runJob({
				job,
				survey,
				client: scraper.clientFor(plan.ceiling),
				concurrency: plan.ceiling,
				adaptiveConcurrency: plan.adaptive,
				outRoot,
				maxCredits: job.maxCredits,
				signal,
				secrets: scraper.secrets,
				lock,
				runId,
				...(browser ? { browser } : {}),
				...(options.onProgress ? { onProgress: options.onProgress } : {}),
			});
			return { ...result.summary, run_dir: result.runDir, report: result.reportPath };
		} finally {
			lock.release();
		}
	} finally {
		for (const close of closers.reverse()) await close();
	}
}
