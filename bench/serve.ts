/**
 * The bench's server process: the emulator of the service and the demo site it fetches from, both on
 * 127.0.0.1, so that their CPU and memory never count against a measured client. Started by
 * `bench.ts` with `fork`; says `ready` with its addresses, answers `stats`, stops on `close` or when
 * the orchestrator goes away.
 */
import { startDemoSite, startEmulator } from "../src/emulator/index.js";
import { exitWithParent, readConfig, type ServeCommand, type ServeConfig, type ServeMessage } from "./protocol.js";

/** Enough credits that no scenario ever runs out (request mode costs 2 a page). */
const CREDITS = 1e9;

const config = readConfig<ServeConfig>();
exitWithParent();

const site = await startDemoSite({ pages: 100 });
const emulator = await startEmulator({
	scenario: { concurrency: config.concurrency, latency_ms: config.latencyMs, credits: CREDITS },
	// Totals only: a ledger of 200,000 entries would make the server, not the client, the bottleneck.
	ledger: false,
});

const send = (message: ServeMessage) => process.send?.(message);

process.on("message", (command: ServeCommand) => {
	switch (command.type) {
		case "stats": {
			const cpu = process.cpuUsage();
			send({
				type: "stats",
				cpuMs: (cpu.user + cpu.system) / 1000,
				rssBytes: process.memoryUsage.rss(),
				siteRequests: site.requestCount(),
				connections: emulator.connectionsAccepted(),
			});
			return;
		}
		case "close":
			void Promise.all([emulator.close(), site.close()]).finally(() => process.exit(0));
			return;
		default: {
			const unreachable: never = command;
			throw new Error(`unknown command ${JSON.stringify(unreachable)}`);
		}
	}
});

send({
	type: "ready",
	apiUrl: emulator.apiUrl,
	scraperUrl: emulator.scraperUrl,
	accountKey: emulator.accountKey,
	scraperKey: emulator.scraperKey,
	siteUrl: site.url,
});
