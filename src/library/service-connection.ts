import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
	type AccountClient,
	createAccountClient,
	createScraperClient,
	type ScraperClient,
	type ScraperClientOptions,
} from "../api/index.js";
import { CLI_WORDS, type OptionWords, UsageError, writeFileAtomic } from "../common/index.js";
import { demoSiteIsSet, type ResolvedConfig, resolveConfig, resolveFleetConfig } from "../config/index.js";
import { OutputError } from "../output/index.js";

/** Where a connection reads its keys from: the CLI's context, or the library's options. */
export interface ConnectContext {
	readonly env: NodeJS.ProcessEnv;
	readonly cwd: string;
	readonly signal: AbortSignal;
	/** How the entry point spells the options its messages name (`--sandbox`, `sandbox: true`). @default CLI_WORDS */
	readonly words?: OptionWords;
}

/**
 * The sandbox behaves like a real account on a fair day: some latency, an occasional 503 (so retries
 * show), and a 1 s realtime timeout so slow pages turn into tasks quickly.
 */
export const SANDBOX_SCENARIO = {
	concurrency: 5,
	latency_ms: 120,
	timeout_ms: 1000,
	faults: [{ kind: "unavailable" as const, probability: 0.05 }],
};

const SANDBOX_DEMO_SITE_PORT = 8701;

/**
 * `<results root>/.sandbox-demo-site-port`: the port the last sandbox run of this `--out` gave its demo
 * site. A job names the site as `${SCRAPEJOB_DEMO_SITE}`, so its address is in every target's URL and id.
 */
export const SANDBOX_PORT_FILE = ".sandbox-demo-site-port";

/**
 * The ports the sandbox's demo site tries, in order: the one remembered for the results root, 8701, then
 * four derived from the results root, then any. Without the remembered one, a run that found 8701 taken
 * (a user's own `scrapejob emulator --demo-site` listens there) and its `--sandbox --resume` once 8701
 * was free again had two addresses, and the resume found every target changed.
 */
function sandboxDemoSitePorts(outRoot: string): number[] {
	const digest = createHash("sha256").update(outRoot).digest();
	const derived = [0, 2, 4, 6].map((at) => 20_000 + (digest.readUInt16BE(at) % 20_000));
	const remembered = rememberedDemoSitePort(outRoot);
	return [...new Set([...(remembered === null ? [] : [remembered]), SANDBOX_DEMO_SITE_PORT, ...derived])];
}

/** The port in the results root's `.sandbox-demo-site-port`; null when there is none (or it is not a port). */
function rememberedDemoSitePort(outRoot: string): number | null {
	let text: string;
	try {
		text = readFileSync(join(outRoot, SANDBOX_PORT_FILE), "utf8");
	} catch {
		return null;
	}
	const port = Number(text.trim());
	return Number.isInteger(port) && port > 0 && port < 65_536 ? port : null;
}

/**
 * The environment an offline command (`export`, `extract`) reads a job file with. A job tried in the
 * sandbox names its demo site as `${SCRAPEJOB_DEMO_SITE}`, which only `--sandbox` sets: left unset, it is
 * the address the results root's sandbox runs used, so the job's targets (and ids) are the ones they ran.
 */
export function withSandboxDemoSite(env: NodeJS.ProcessEnv, outRoot: string): NodeJS.ProcessEnv {
	if (demoSiteIsSet(env)) return env;
	const port = rememberedDemoSitePort(outRoot);
	return port === null ? env : { ...env, SCRAPEJOB_DEMO_SITE: `http://127.0.0.1:${port}` };
}

/** Flags every command that talks to the service accepts. */
export interface ServiceFlags {
	config?: string;
	apiUrl?: string;
	scraperUrl?: string;
	sandbox?: boolean;
	/** `run --fleet URL` (else SCRAPEJOB_FLEET_URL, else the config file's). */
	fleet?: string;
	/** The results root (`run --out`, relative to the cwd; default `output`): where the sandbox demo site's port is remembered, and what picks one when 8701 is taken. */
	out?: string;
}

/**
 * No key to run with: a usage mistake like any other (`instanceof UsageError`), nothing was sent. Thrown
 * by `runJobFile` when `env` (and the `config` file) hold no key and `sandbox` is not set.
 */
export class MissingKeyError extends UsageError {}

export interface ServiceConnection {
	readonly config: ResolvedConfig;
	/** Present when an account key is known. */
	readonly account: AccountClient | undefined;
	/** The demo site's base address when running in the sandbox (jobs refer to it as ${SCRAPEJOB_DEMO_SITE}). */
	readonly demoSiteUrl: string | undefined;
	/** The `--config` file read (absolute), if one was: the commands printed for a run carry it. */
	readonly configFile?: string;
	/**
	 * Build a scraper client for a key and address learned from the account (or configured); with
	 * `connections`, on at most that many sockets (a run's concurrency); `keyName` says in a refusal (401)
	 * which key it was.
	 */
	scraper(key: string, baseUrl: string | undefined, options?: ScraperClientChoice): ScraperClient;
	/**
	 * A run goes ahead in the results root (its folder made): the sandbox's demo site port is written
	 * there (`.sandbox-demo-site-port`), so that root's next sandbox run (`--resume`) takes it again.
	 * Nothing without the sandbox. Throws `OutputError`.
	 */
	rememberDemoSite(): void;
	close(): Promise<void>;
}

/** How `ServiceConnection.scraper` builds its client. */
export type ScraperClientChoice = Pick<ScraperClientOptions, "connections" | "keyName">;

/** How to give a key, in the entry point's words. */
function noKeyHint(words: OptionWords): string {
	return `set SCRAPEJOB_ACCOUNT_KEY (or SCRAPEJOB_SCRAPER_KEY for scraping only), or try it offline with ${words.sandboxOn}`;
}

/**
 * Resolve keys and addresses, or start the sandbox. Each command closes the connection when done, so
 * the emulator and keep-alive sockets never hold the process open.
 */
export async function connectService(ctx: ConnectContext, flags: ServiceFlags): Promise<ServiceConnection> {
	// An empty `--fleet` (an unset variable in a pasted line) is a mistake, never "no fleet": a local run
	// in its place would pay for the fleet's targets again.
	if (flags.fleet !== undefined && flags.fleet.trim() === "")
		throw new UsageError(
			`${(ctx.words ?? CLI_WORDS).fleet} is empty: give the fleet's postgres:// URL (is SCRAPEJOB_FLEET_URL set?)`,
		);
	if (flags.sandbox) {
		// Loaded only here: a real run should not pay the emulator's start-up time and memory.
		const { startDemoSite, startEmulator } = await import("../emulator/index.js");
		// The results root's remembered port, else a fixed one when free, so the demo's URLs (and so its
		// target ids) stay the same from one sandbox run to the next and `--resume` works there too.
		let demoSite: Awaited<ReturnType<typeof startDemoSite>> | undefined;
		const outRoot = resolve(ctx.cwd, flags.out ?? "output");
		for (const port of sandboxDemoSitePorts(outRoot)) {
			// Shared: the shards of one sandbox job, run side by side, get the same port and so the same targets.
			demoSite = await startDemoSite({ port, sharedPort: true }).catch(() => undefined);
			if (demoSite) break;
		}
		demoSite ??= await startDemoSite({});
		const emulator = await startEmulator({ port: 0, scenario: SANDBOX_SCENARIO, ledger: false });
		const config: ResolvedConfig = {
			accountKey: emulator.accountKey,
			scraperKey: undefined,
			apiUrl: emulator.apiUrl,
			scraperUrl: emulator.scraperUrl,
			// The sandbox's own service, but a fleet database is the user's as ever.
			...resolveFleetConfig(flags.fleet, ctx.env),
			sources: {},
		};
		return {
			config,
			account: createAccountClient({ accountKey: emulator.accountKey, baseUrl: emulator.apiUrl }),
			demoSiteUrl: demoSite.url,
			scraper: (key, baseUrl, options) =>
				createScraperClient({ ...options, scraperKey: key, baseUrl: baseUrl ?? emulator.scraperUrl }),
			rememberDemoSite() {
				const port = new URL(demoSite.url).port;
				if (Number(port) === rememberedDemoSitePort(outRoot)) return;
				const path = join(outRoot, SANDBOX_PORT_FILE);
				try {
					writeFileAtomic(path, `${port}\n`);
				} catch (error) {
					throw new OutputError(path, error, "nothing was sent");
				}
			},
			close: async () => {
				await emulator.close();
				await demoSite.close();
			},
		};
	}
	const config = await resolveConfig({
		flags: {
			...(flags.config !== undefined ? { config: flags.config } : {}),
			...(flags.apiUrl !== undefined ? { apiUrl: flags.apiUrl } : {}),
			...(flags.scraperUrl !== undefined ? { scraperUrl: flags.scraperUrl } : {}),
			...(flags.fleet !== undefined ? { fleet: flags.fleet } : {}),
		},
		env: ctx.env,
		cwd: ctx.cwd,
	});
	const account = config.accountKey
		? createAccountClient({
				accountKey: config.accountKey,
				...(config.apiUrl !== undefined ? { baseUrl: config.apiUrl } : {}),
			})
		: undefined;
	return {
		config,
		account,
		demoSiteUrl: undefined,
		...(flags.config !== undefined ? { configFile: resolve(ctx.cwd, flags.config) } : {}),
		scraper: (key, baseUrl, options) =>
			createScraperClient({
				...options,
				scraperKey: key,
				...((config.scraperUrl ?? baseUrl) ? { baseUrl: config.scraperUrl ?? baseUrl } : {}),
			}),
		rememberDemoSite() {},
		close: async () => {},
	};
}

/** The account client, or a clear error saying how to provide a key. */
export function requireAccount(connection: ServiceConnection): AccountClient {
	if (!connection.account) throw new MissingKeyError(`no account key: ${noKeyHint(CLI_WORDS)}`);
	return connection.account;
}

/** No key at all, said with how to give one (`words`: the entry point's spelling of the sandbox). */
export function noKeyError(words: OptionWords = CLI_WORDS): UsageError {
	return new MissingKeyError(`no key: ${noKeyHint(words)}`);
}
