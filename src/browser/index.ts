/**
 * The service's remote browser (docs/service.md, "The remote browser"): one target per fresh CDP session, with steps,
 * bounded by the session's length. playwright-core's `connectOverCDP` is the CDP client.
 */
export {
	type BrowserServiceAccess,
	type RunSessionOptions,
	runBrowserSession,
	type SessionPage,
	type SessionSpec,
	sessionAddress,
	sessionMarginMs,
} from "./browser-session.js";
export { BROWSER_FAILURE_KINDS, type BrowserFailureKind, BrowserSessionError } from "./session-errors.js";
