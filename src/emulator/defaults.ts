/**
 * The emulator's fixed, documented defaults. Like other local cloud emulators it has well-known keys,
 * so a user can point an integration at it without any set-up; a scenario file may replace them.
 */

/** Account key accepted by the `/public` endpoints (header `x-apikey` or query `apikey`). */
export const DEFAULT_ACCOUNT_KEY = "emulator-account-key";
/** Scraper key accepted by the `/api/v1/scraper` endpoints; returned by `GET /public/scraper`. */
export const DEFAULT_SCRAPER_KEY = "emulator-scraper-key";
/** Browser key returned by `GET /public/browser` (the emulator serves no browser sessions). */
export const DEFAULT_BROWSER_KEY = "emulator-browser-key";

/** Default host the emulator and the demo site bind to: loopback only. */
export const DEFAULT_HOST = "127.0.0.1";

/** The version segment the scraper base address ends with (docs/service.md, "Versions"). */
export const SCRAPER_BASE_PATH = "/api/v1";
