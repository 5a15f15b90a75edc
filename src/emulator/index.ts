/**
 * The local emulator of the service: account endpoints (`/public…`) and scraper endpoints
 * (`/api/v1…`) on one loopback port, with fault injection from a scenario, a ledger of every
 * request and credit for tests, and a demo website to scrape.
 */

export {
	DEFAULT_ACCOUNT_KEY,
	DEFAULT_BROWSER_KEY,
	DEFAULT_HOST,
	DEFAULT_SCRAPER_KEY,
	SCRAPER_BASE_PATH,
} from "./defaults.js";
export { demoSearchResults } from "./demo-interactive-pages.js";
export {
	type DemoSite,
	type DemoSiteOptions,
	demoProductBrand,
	demoProductPrice,
	demoProductTags,
	startDemoSite,
} from "./demo-site.js";
export type { KeyPlace, Ledger, LedgerEndpoint, LedgerEntry, LedgerOptions, RateLimitWindow } from "./ledger.js";
export {
	FAULT_KINDS,
	type FaultInput,
	type FaultKind,
	SCRAPING_ERROR_MESSAGES,
	type Scenario,
	type ScenarioInput,
	type ScrapingErrorMessage,
} from "./scenario.js";
export { loadScenarioFile, parseScenarioText } from "./scenario-file.js";
export { type Emulator, type StartEmulatorOptions, startEmulator } from "./server.js";
