/**
 * `startEmulator`: one node:http server answering both the account endpoints (`/public…`) and the
 * scraper endpoints (`/api/v1…`) on one port, as the spec describes them.
 */
import { setMaxListeners } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Clock, checkOptions, errorMessage, type OptionKinds, systemClock } from "../common/index.js";
import { createAccountData } from "./account-data.js";
import { handleAccountRequest } from "./account-routes.js";
import { BackgroundJobStore } from "./background-jobs.js";
import { type BrowserSessionStats, createBrowserEndpoint } from "./browser-endpoint.js";
import { createCatalogue } from "./catalogue.js";
import { SlotTracker } from "./concurrency.js";
import type { EmulatorContext } from "./context.js";
import { CreditAccount } from "./credits.js";
import { DEFAULT_HOST, SCRAPER_BASE_PATH } from "./defaults.js";
import { FaultInjector } from "./faults.js";
import { sendJson, timestamp } from "./http-io.js";
import { Ledger, type LedgerOptions } from "./ledger.js";
import { createRandom, deriveSeed } from "./random.js";
import { createSavedItems } from "./saved-items.js";
import { resolveScenario, type ScenarioInput } from "./scenario.js";
import { ScheduleTimers } from "./schedule-runner.js";
import { handleScraperRequest } from "./scraper-routes.js";
import { TargetFetcher } from "./target-fetch.js";
import { TaskStore } from "./tasks.js";

/** Options of `startEmulator`. */
export interface StartEmulatorOptions {
	/** The scenario, in the scenario file's snake_case shape (or as returned by `loadScenarioFile`). @default {} */
	readonly scenario?: ScenarioInput;
	/** Port to listen on; 0 picks a free one. @default 0 */
	readonly port?: number;
	/** Address to bind. @default "127.0.0.1" */
	readonly host?: string;
	/** Ledger storage: `false` keeps totals only; `{ maxEntries }` caps stored entries. @default { maxEntries: 100000 } */
	readonly ledger?: false | LedgerOptions;
	/** Clock for the usage endpoint's bucket labels, ms since the epoch. @default Date.now */
	readonly clock?: Clock;
	/** The Chromium each browser session runs in. @default $SCRAPEJOB_CHROMIUM or /usr/bin/chromium */
	readonly chromiumPath?: string;
	/** Base address of the site `/scraper/search` finds pages on (e.g. the demo site). @default "https://search.invalid" */
	readonly searchSite?: string;
}

/** Each option of `startEmulator` and the kind of value it takes (the scenario is checked by its schema). */
const START_EMULATOR_OPTIONS = {
	scenario: "object",
	port: "number",
	host: "string",
	ledger: "any",
	clock: "function",
	chromiumPath: "string",
	searchSite: "string",
} as const satisfies OptionKinds<StartEmulatorOptions>;

/** A running emulator of the service: its addresses and keys, a ledger of every request and charge, knobs for tests. */
export interface Emulator {
	/** Base address of the account endpoints, e.g. `http://127.0.0.1:41234` (paths start with `/public`). */
	readonly apiUrl: string;
	/** Base address of the scraper endpoints, ending in `/api/v1`. */
	readonly scraperUrl: string;
	/** The account key (header `x-apikey`). */
	readonly accountKey: string;
	/** The (first) scraper key (header `x-api-key`). */
	readonly scraperKey: string;
	/** Every scraper key of the scenario. */
	readonly scraperKeys: readonly string[];
	/** WebSocket address of the browser service (what GET /public/browser reports as `endpoint_url`). */
	readonly browserUrl: string;
	/** The browser key (`?key=` on the browser address). */
	readonly browserKey: string;
	/** Browser sessions so far: started, refused, open now and at most, cut, credits. */
	browserSessions(): BrowserSessionStats;
	readonly host: string;
	readonly port: number;
	readonly ledger: Ledger;
	/** Scraper credits on the account now. */
	credits(): number;
	/** Set the account's scraper credits (a test running them out). */
	setCredits(credits: number): void;
	/** Concurrency limit per scraper key now. */
	concurrency(): number;
	/** Set the concurrency limit per scraper key (a test lowering it mid-run). */
	setConcurrency(limit: number): void;
	/** TCP connections accepted so far (every endpoint): how many sockets clients opened. */
	connectionsAccepted(): number;
	/** Stop listening, drop every connection (keep-alive ones too) and end background fetches. */
	close(): Promise<void>;
}

/** Start the emulator of the service on loopback, playing the given scenario (docs/guides/emulator.md). */
export async function startEmulator(options: StartEmulatorOptions = {}): Promise<Emulator> {
	checkOptions("startEmulator", options, START_EMULATOR_OPTIONS);
	const config = resolveScenario(options.scenario);
	const ledger = new Ledger(options.ledger === false ? { maxEntries: 0 } : options.ledger);
	const abort = new AbortController();
	// Every pending latency/slow pause listens on this signal; thousands at once are expected, not a leak.
	setMaxListeners(0, abort.signal);
	const urls = { apiUrl: "", scraperUrl: "", browserUrl: "" };
	const ctx: EmulatorContext = {
		searchSite: (options.searchSite ?? "https://search.invalid").replace(/\/+$/, ""),
		config,
		ledger,
		credits: new CreditAccount(config.credits),
		slots: new SlotTracker({ limit: config.concurrency, expiryMs: config.slotExpiryMs, ledger }),
		tasks: new TaskStore(config.taskTtlMs),
		faults: new FaultInjector(config.faults, createRandom(deriveSeed(config.seed, "faults"))),
		fetcher: new TargetFetcher(),
		account: createAccountData(config),
		catalogue: createCatalogue(),
		generationRandom: createRandom(deriveSeed(config.seed, "generate")),
		clock: options.clock ?? systemClock,
		signal: abort.signal,
		scraperKeys: new Set(config.scraperKeys),
		urls,
		browser: createBrowserEndpoint({
			key: config.browserKey,
			hasAccess: config.hasBrowserAccess,
			concurrency: config.browserConcurrency,
			maxSessionSeconds: config.maxSessionLengthSeconds,
			cutSessions: config.browserCutSessions,
			cutAfterMs: config.browserCutAfterMs,
			chromiumPath: options.chromiumPath ?? process.env.SCRAPEJOB_CHROMIUM ?? "/usr/bin/chromium",
		}),
		saved: createSavedItems(),
		crawls: new BackgroundJobStore(config.taskTtlMs),
		generations: new BackgroundJobStore(config.taskTtlMs),
		scheduleTimers: new ScheduleTimers(),
	};

	const server = createServer({ keepAlive: true, noDelay: true }, (req, res) => {
		route(ctx, req, res).catch((error: unknown) => {
			if (!res.headersSent && !res.destroyed) {
				sendJson(res, 500, {
					success: false,
					error: "Internal server error",
					message: errorMessage(error),
					timestamp: timestamp(),
				});
			}
		});
	});
	let connectionsAccepted = 0;
	server.on("connection", () => {
		connectionsAccepted += 1;
	});
	server.on("upgrade", (req, socket, head) => {
		if ((req.url ?? "").split("?")[0] === "/browser") ctx.browser.handleUpgrade(req, socket, head);
		else socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
	});
	const host = options.host ?? DEFAULT_HOST;
	const port = await listen(server, options.port ?? 0, host);
	const origin = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
	urls.apiUrl = origin;
	urls.scraperUrl = `${origin}${SCRAPER_BASE_PATH}`;
	urls.browserUrl = `${origin.replace(/^http/, "ws")}/browser`;

	let closing: Promise<void> | undefined;
	return {
		apiUrl: urls.apiUrl,
		scraperUrl: urls.scraperUrl,
		accountKey: config.accountKey,
		scraperKey: config.scraperKeys[0] as string,
		scraperKeys: config.scraperKeys,
		browserUrl: urls.browserUrl,
		browserKey: config.browserKey,
		browserSessions: () => ctx.browser.stats(),
		host,
		port,
		ledger,
		credits: () => ctx.credits.balance,
		setCredits: (credits) => ctx.credits.set(credits),
		concurrency: () => ctx.slots.limit,
		connectionsAccepted: () => connectionsAccepted,
		setConcurrency: (limit) => {
			ctx.slots.limit = limit;
		},
		close: () => {
			closing ??= (async () => {
				// Connections first, as a killed service drops them: a fetch cut short by the abort below
				// must not be answered (with an error a client would take for the service's word) on its way out.
				const closed = new Promise<void>((resolve) => server.close(() => resolve()));
				server.closeAllConnections();
				abort.abort();
				ctx.tasks.close();
				ctx.scheduleTimers.close();
				await ctx.browser.close();
				await ctx.fetcher.close();
				await closed;
			})();
			return closing;
		},
	};
}

function listen(server: Server, port: number, host: string): Promise<number> {
	return new Promise((resolve, reject) => {
		const onError = (error: Error) => reject(error);
		server.once("error", onError);
		server.listen(port, host, () => {
			server.off("error", onError);
			resolve((server.address() as AddressInfo).port);
		});
	});
}

async function route(ctx: EmulatorContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
	const target = req.url ?? "/";
	const queryStart = target.indexOf("?");
	let path = queryStart < 0 ? target : target.slice(0, queryStart);
	if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
	const query = new URLSearchParams(queryStart < 0 ? "" : target.slice(queryStart + 1));
	if (path.startsWith(`${SCRAPER_BASE_PATH}/`)) {
		await handleScraperRequest(ctx, req, res, path.slice(SCRAPER_BASE_PATH.length), query);
		return;
	}
	if (path === "/public" || path.startsWith("/public/")) {
		await handleAccountRequest(ctx, req, res, path, query);
		return;
	}
	const entry = ctx.ledger.open("unknown", req.method ?? "GET", path);
	ctx.ledger.finish(entry, 404);
	sendJson(res, 404, {
		success: false,
		error: "Not found",
		message: `No endpoint ${req.method ?? "GET"} ${path}; account endpoints start with /public, scraper endpoints with ${SCRAPER_BASE_PATH}`,
		timestamp: timestamp(),
	});
}
