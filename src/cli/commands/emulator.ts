import { resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { errorMessage, isLoopbackHost, UsageError } from "../../common/index.js";
import type { DemoSite, Emulator, Scenario } from "../../emulator/index.js";
import { type CliContext, writeLine } from "../context.js";

/** The emulator's default bind address (kept here so `--help` needs no emulator code loaded). */
const DEFAULT_HOST = "127.0.0.1";

/** Port the emulator listens on unless `--port` says otherwise; fixed, so integrations can be configured once. */
export const DEFAULT_EMULATOR_PORT = 8700;

/** The demo site (`--demo-site`) listens on the next port: 8701 by default, the same as the sandbox's. */
export function demoSitePort(emulatorPort: number): number {
	return emulatorPort === 0 ? 0 : emulatorPort + 1;
}

interface EmulatorCommandOptions {
	readonly port: number;
	readonly host: string;
	readonly scenario?: string;
	readonly demoSite?: boolean;
}

function parsePort(value: string): number {
	const port = Number(value);
	if (!Number.isInteger(port) || port < 0 || port > 65_535) {
		throw new InvalidArgumentError("must be a whole number from 0 to 65535 (0 picks a free port)");
	}
	return port;
}

/**
 * `scrapejob emulator`: serve the local emulator until SIGINT/SIGTERM. Prints one JSON line with
 * `apiUrl`, `scraperUrl`, `accountKey`, `scraperKey` (and `demoSiteUrl` with `--demo-site`) so a
 * script can read the addresses even with `--port 0`.
 */
export function registerEmulatorCommand(program: Command, ctx: CliContext): void {
	program
		.command("emulator")
		.description("run the local emulator of the service (account + scraper endpoints, fault injection)")
		.option("--port <n>", `port to listen on; 0 picks a free one (default ${DEFAULT_EMULATOR_PORT})`, parsePort)
		.option("--host <address>", "address to bind", DEFAULT_HOST)
		.option(
			"--scenario <file>",
			"scenario file (YAML or JSON): keys, credits, concurrency, timings, faults; every key with its default and a comment: jobs/examples/emulator-scenario.yaml (docs/guides/emulator.md)",
		)
		.option(
			"--demo-site",
			`also serve the local demo website to scrape, on the next port (default ${demoSitePort(DEFAULT_EMULATOR_PORT)}; a free one with --port 0)`,
		)
		.action(async (options: EmulatorCommandOptions) => {
			await runEmulatorCommand(ctx, options);
		});
}

async function runEmulatorCommand(ctx: CliContext, options: EmulatorCommandOptions): Promise<void> {
	// The emulator is loaded only when asked for, so other commands start without it.
	const { loadScenarioFile, startDemoSite, startEmulator } = await import("../../emulator/index.js");
	const scenario: Scenario | undefined =
		options.scenario === undefined ? undefined : await loadScenarioFile(resolve(ctx.cwd, options.scenario));
	const port = options.port ?? DEFAULT_EMULATOR_PORT;
	const host = options.host;
	if (!isLoopbackHost(host)) {
		ctx.stderr.write(
			`scrapejob emulator: listening on ${host}, reachable from other machines; its keys are fixed and documented\n`,
		);
	}
	let demoSite: DemoSite | undefined;
	let emulator: Emulator;
	try {
		if (options.demoSite) demoSite = await startDemoSite({ host, port: demoSitePort(port) });
		// Nobody reads the ledger of a long-running CLI emulator; keep totals only.
		emulator = await startEmulator({ ...(scenario ? { scenario } : {}), port, host, ledger: false });
	} catch (error) {
		await demoSite?.close();
		const code = (error as { code?: unknown }).code;
		if (code === "EADDRINUSE") {
			const ports =
				options.demoSite && port !== 0 ? `port ${port} or ${demoSitePort(port)} (demo site)` : `port ${port}`;
			throw new UsageError(`${ports} on ${host} is in use; pass --port 0 to pick free ports`, { cause: error });
		}
		if (code === "EADDRNOTAVAIL" || code === "EACCES") {
			throw new UsageError(`cannot listen on ${host}:${port}: ${errorMessage(error)}`, { cause: error });
		}
		throw error;
	}
	writeLine(
		ctx.stdout,
		JSON.stringify({
			apiUrl: emulator.apiUrl,
			scraperUrl: emulator.scraperUrl,
			accountKey: emulator.accountKey,
			scraperKey: emulator.scraperKey,
			...(demoSite ? { demoSiteUrl: demoSite.url } : {}),
		}),
	);
	await untilAborted(ctx.signal);
	await Promise.all([emulator.close(), demoSite?.close()]);
}

function untilAborted(signal: AbortSignal): Promise<void> {
	if (signal.aborted) return Promise.resolve();
	return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}
