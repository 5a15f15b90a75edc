import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { type AccountClient, createAccountClient, createScraperClient, type ScraperClient } from "../api/index.js";
import { ScrapejobError, UsageError } from "../common/index.js";
import { type ResolvedConfig, resolveConfig, resolveFleetConfig } from "../config/index.js";

/** Where a connection reads its keys from: the CLI's context, or the library's options. */
export interface ConnectContext {
	readonly env: NodeJS.ProcessEnv;
	readonly cwd: string;
	readonly signal: AbortSignal;
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
 * The ports the sandbox's demo site tries, in order: 8701, then four derived from the results root, then
 * any. A job names the site as `${SCRAPEJOB_DEMO_SITE}`, so its address is in every target's URL and id:
 * when 8701 is taken (a user's own `scrapejob emulator --demo-site` listens there), a port of its own
 * each time made `--sandbox --resume` (the printed hint, same `--out`) find every target changed.
 */
function sandboxDemoSitePorts(outRoot: string): number[] {
	const digest = createHash("sha256").update(outRoot).digest();
	return [SANDBOX_DEMO_SITE_PORT, ...[0, 2, 4, 6].map((at) => 20_000 + (digest.readUInt16BE(at) % 20_000))];
}

/** Flags every command that talks to the service accepts. */
export interface ServiceFlags {
	config?: string;
	apiUrl?: string;
	scraperUrl?: string;
	sandbox?: boolean;
	/** `run --fleet URL` (else SCRAPEJOB_FLEET_URL, else the config file's). */
	fleet?: string;
	/** The results root (`run --out`, relative to the cwd; default `output`): picks the sandbox demo site's port when 8701 is taken. */
	out?: string;
}

export class MissingKeyError extends ScrapejobError {
	constructor(message: string) {
		super("SCRAPEJOB_USAGE", message);
	}
}

export interface ServiceConnection {
	readonly config: ResolvedConfig;
	/** Present when an account key is known. */
	readonly account: AccountClient | undefined;
	/** The demo site's base address when running in the sandbox (jobs refer to it as ${SCRAPEJOB_DEMO_SITE}). */
	readonly demoSiteUrl: string | undefined;
	/**
	 * Build a scraper client for a key and address learned from the account (or configured); with
	 * `connections`, on at most that many sockets (a run's concurrency).
	 */
	scraper(key: string, baseUrl: string | undefined, connections?: number): ScraperClient;
	close(): Promise<void>;
}

const NO_KEY_HINT =
	"set SCRAPEJOB_ACCOUNT_KEY (or SCRAPEJOB_SCRAPER_KEY for scraping only), or try it offline with --sandbox";

/**
 * Resolve keys and addresses, or start the sandbox. Each command closes the connection when done, so
 * the emulator and keep-alive sockets never hold the process open.
 */
export async function connectService(ctx: ConnectContext, flags: ServiceFlags): Promise<ServiceConnection> {
	// An empty `--fleet` (an unset variable in a pasted line) is a mistake, never "no fleet": a local run
	// in its place would pay for the fleet's targets again.
	if (flags.fleet !== undefined && flags.fleet.trim() === "")
		throw new UsageError("--fleet is empty: give the fleet's postgres:// URL (is SCRAPEJOB_FLEET_URL set?)");
	if (flags.sandbox) {
		// Loaded only here: a real run should not pay the emulator's start-up time and memory.
		const { startDemoSite, startEmulator } = await import("../emulator/index.js");
		// A fixed port when free (else one fixed for the results root), so the demo's URLs (and so its
		// target ids) stay the same from one sandbox run to the next and `--resume` works there too.
		let demoSite: Awaited<ReturnType<typeof startDemoSite>> | undefined;
		for (const port of sandboxDemoSitePorts(resolve(ctx.cwd, flags.out ?? "output"))) {
			demoSite = await startDemoSite({ port }).catch(() => undefined);
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
			scraper: (key, baseUrl, connections) =>
				createScraperClient({
					scraperKey: key,
					baseUrl: baseUrl ?? emulator.scraperUrl,
					...(connections !== undefined ? { connections } : {}),
				}),
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
		scraper: (key, baseUrl, connections) =>
			createScraperClient({
				scraperKey: key,
				...((config.scraperUrl ?? baseUrl) ? { baseUrl: config.scraperUrl ?? baseUrl } : {}),
				...(connections !== undefined ? { connections } : {}),
			}),
		close: async () => {},
	};
}

/** The account client, or a clear error saying how to provide a key. */
export function requireAccount(connection: ServiceConnection): AccountClient {
	if (!connection.account) throw new MissingKeyError(`no account key: ${NO_KEY_HINT}`);
	return connection.account;
}

export function noKeyError(): UsageError {
	return new MissingKeyError(`no key: ${NO_KEY_HINT}`);
}
