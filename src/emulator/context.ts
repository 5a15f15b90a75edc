/** Everything a request handler needs, built once per emulator by `startEmulator`. */
import type { Clock } from "../common/index.js";
import type { AccountData } from "./account-data.js";
import type { BackgroundJobStore } from "./background-jobs.js";
import type { BrowserEndpoint } from "./browser-endpoint.js";
import type { Catalogue } from "./catalogue.js";
import type { SlotTracker } from "./concurrency.js";
import type { CreditAccount } from "./credits.js";
import type { FaultInjector } from "./faults.js";
import type { Ledger } from "./ledger.js";
import type { Random } from "./random.js";
import type { Params, SavedItems } from "./saved-items.js";
import type { EmulatorConfig } from "./scenario.js";
import type { ScheduleTimers } from "./schedule-runner.js";
import type { TargetFetcher } from "./target-fetch.js";
import type { TaskStore } from "./tasks.js";

export interface EmulatorContext {
	readonly config: EmulatorConfig;
	readonly ledger: Ledger;
	readonly credits: CreditAccount;
	readonly slots: SlotTracker;
	readonly tasks: TaskStore;
	readonly faults: FaultInjector;
	readonly fetcher: TargetFetcher;
	readonly account: AccountData;
	readonly catalogue: Catalogue;
	/** Seeded stream for generated proxies (countries picked at random, session ids). */
	readonly generationRandom: Random;
	readonly clock: Clock;
	/** Aborts when the emulator closes: background fetches and pauses end. */
	readonly signal: AbortSignal;
	readonly scraperKeys: ReadonlySet<string>;
	/** Base addresses, known once the server listens. */
	readonly urls: { apiUrl: string; scraperUrl: string; browserUrl: string };
	/** Base address whose pages `/scraper/search` returns (the demo site in tests). */
	readonly searchSite: string;
	/** The remote browser service (its credits show in GET /public/browser). */
	readonly browser: BrowserEndpoint;
	/** Configs, schemes, storage configs, schedules and browser profiles the account keeps. */
	readonly saved: SavedItems;
	/** Async crawls (`/scraper/crawl/tasks/<id>`): their answers once discovered. */
	readonly crawls: BackgroundJobStore<Params>;
	/** Config generations (`/account/configs/generate/tasks/<id>`). */
	readonly generations: BackgroundJobStore<Params>;
	/** The next run of every active schedule. */
	readonly scheduleTimers: ScheduleTimers;
}
