import { z } from "zod";
import { DURATION_HINT, parseDuration } from "../common/index.js";

/**
 * `browser_session:` — a target fetched in the service's remote browser (docs/service.md, "The remote browser") instead of
 * the scraper: a fresh CDP session, the page loaded, then `steps`. Validated here like every other
 * option, so a typo in a step costs nothing.
 */
export const BROWSER_OS = ["windows", "apple", "unix"] as const;
export type BrowserOs = (typeof BROWSER_OS)[number];

export const BROWSER_STEP_KINDS = ["click", "fill", "press", "wait_for", "wait", "scroll", "evaluate"] as const;
export type BrowserStepKind = (typeof BROWSER_STEP_KINDS)[number];

/** Longest single `wait` step, ms (a session is bounded by the account's session length anyway). */
const MAX_WAIT_MS = 600_000;

/** An expression's syntax, checked without running it: `evaluate` is sent to the page as written. */
function isExpression(source: string): boolean {
	try {
		// Compiles only; the function is never called.
		new Function(`return (${source}\n);`);
		return true;
	} catch {
		return false;
	}
}

const selector = (what: string) => z.string().min(1, { error: "must be a non-empty selector" }).describe(what);

export const browserStepSchema = z
	.strictObject({
		click: selector("Click the first element matching this selector"),
		fill: z
			.tuple([z.string().min(1), z.string()], { error: "must be [selector, text]" })
			.describe("[selector, text]: type text into a field"),
		press: z.string().min(1).describe("A key, as Playwright names keys: Enter, Tab, ArrowDown, Control+A, …"),
		wait_for: selector("Wait until an element matching this selector is visible"),
		wait: z.int().min(0).max(MAX_WAIT_MS).describe("Wait this many milliseconds"),
		scroll: z
			.union([z.enum(["top", "bottom"]), z.int()], { error: 'must be "top", "bottom" or a number of pixels' })
			.describe('"top", "bottom", or pixels to scroll down (negative: up)'),
		evaluate: z
			.string()
			.min(1)
			.refine(isExpression, { error: "is not a JavaScript expression (it runs in the page as written)" })
			.describe("A JavaScript expression run in the page; its JSON value lands in data.evaluate"),
	})
	.partial()
	.refine((step) => Object.keys(step).length === 1, {
		error: `a step is exactly one of ${BROWSER_STEP_KINDS.join(", ")}`,
	})
	.describe(
		"One step: {click: sel} | {fill: [sel, text]} | {press: key} | {wait_for: sel} | {wait: ms} | {scroll: bottom} | {evaluate: js}",
	);

export const browserSessionSchema = z
	.strictObject({
		os: z.enum(BROWSER_OS).describe("Browser fingerprint: windows, apple or unix"),
		proxy_country: z
			.string()
			.regex(/^[A-Za-z]{2}$/, { error: "must be a two-letter country code" })
			.describe("Two-letter ISO country code of the session's exit IP"),
		adblock: z.boolean().describe("Block ads (default false)"),
		solve_cloudflare: z.boolean().describe("Solve Cloudflare Turnstile challenges (the service's default: true)"),
		steps: z
			.array(browserStepSchema)
			.max(200)
			.describe("After the page's load, in order; each bounded by step_timeout and the session's remaining time"),
		step_timeout: z
			.string()
			.refine((value) => (parseDuration(value) ?? 0) > 0, {
				error: (issue) =>
					`must be ${DURATION_HINT.replace(" (0 for none)", "")}, above 0 (got ${JSON.stringify(issue.input)})`,
			})
			.describe("Bound of each step and each call to the browser (context, page, content, close); default 15s"),
	})
	.partial()
	.describe("Fetch in the service's remote browser (CDP) with these settings and steps, instead of the scraper");

export type BrowserSession = z.output<typeof browserSessionSchema>;
export type BrowserStep = z.output<typeof browserStepSchema>;

/** Field by field, later layers win (a target's `steps` replace the job's). Null when no layer has one. */
export function mergeBrowserSessions(...layers: Array<BrowserSession | null | undefined>): BrowserSession | null {
	let merged: BrowserSession | null = null;
	for (const layer of layers) if (layer) merged = Object.assign({}, merged, layer) as BrowserSession;
	return merged;
}

/** Whether any target of the job runs in the remote browser (sources' rows take the job's session). */
export function jobUsesBrowser(job: {
	browserSession: BrowserSession | null;
	targets: ReadonlyArray<{ browserSession?: BrowserSession }>;
}): boolean {
	return job.browserSession !== null || job.targets.some((target) => target.browserSession !== undefined);
}
