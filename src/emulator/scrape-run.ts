/**
 * One scrape, from holding a slot and a credit reservation to its outcome: latency, fetch-phase
 * faults, the real fetch, auto mode's upgrade decision, and settling credits (charged only for a
 * successful fetch, or a `scraping_error` fault given `credits`). Never rejects — every failure is an outcome — so callers can hand it to a task.
 */
import type { Mode } from "../common/index.js";
import type { Slot } from "./concurrency.js";
import type { EmulatorContext } from "./context.js";
import { pause } from "./http-io.js";
import type { LedgerEntry } from "./ledger.js";
import { looksScriptRendered } from "./page-analysis.js";
import type { CreditCosts, ScrapingErrorMessage } from "./scenario.js";

export type ScrapeOutcome =
	| {
			readonly kind: "ok";
			readonly statusCode: number;
			readonly body: Buffer;
			readonly contentType: string;
			readonly modeUsed: string;
			readonly creditsUsed: number;
			/** Where the target's redirects ended; `requestedUrl` when there were none. */
			readonly finalUrl: string;
			readonly requestedUrl: string;
	  }
	| {
			/** The target answered non-2xx: passed through, 0 credits (docs/service.md, "Where the documentation is silent"). */
			readonly kind: "target-status";
			readonly statusCode: number;
			readonly body: Buffer;
			readonly contentType: string;
			readonly modeUsed: string;
	  }
	| {
			readonly kind: "scraping-error";
			readonly message: ScrapingErrorMessage;
			readonly modeUsed: string;
			/** Charged for the failure: only a `scraping_error` fault with `credits` (the documented service charges none). */
			readonly creditsUsed?: number;
	  };

export interface ScrapeRequest {
	readonly url: string;
	readonly mode: Mode;
	readonly datacenter: boolean;
	readonly extraHeaders: Record<string, string> | null;
	readonly slot: Slot;
	/** Credits reserved for this scrape (its mode's worst case). */
	readonly reserved: number;
	readonly entry: LedgerEntry;
}

/** The most a successful fetch in this mode can cost: what must be available before it starts. */
export function worstCaseCost(costs: CreditCosts, mode: Mode, datacenter: boolean): number {
	switch (mode) {
		case "request":
			return datacenter ? costs.requestDatacenter : costs.request;
		case "browser":
			return costs.browser;
		case "auto":
			return Math.max(costs.auto, costs.autoUpgraded);
		default: {
			const unreachable: never = mode;
			throw new Error(`unknown mode ${String(unreachable)}`);
		}
	}
}

export async function runScrape(ctx: EmulatorContext, scrape: ScrapeRequest): Promise<ScrapeOutcome> {
	let outcome: ScrapeOutcome;
	try {
		outcome = await fetchAndDecide(ctx, scrape);
	} catch {
		outcome = { kind: "scraping-error", message: "Page crashed", modeUsed: scrape.mode };
	}
	const charged = outcome.kind === "target-status" ? 0 : (outcome.creditsUsed ?? 0);
	ctx.credits.settle(scrape.reserved, charged);
	if (charged > 0) ctx.ledger.charge(scrape.entry, charged);
	scrape.entry.modeUsed = outcome.modeUsed;
	if (outcome.kind !== "scraping-error") scrape.entry.targetStatus = outcome.statusCode;
	scrape.slot.release();
	return outcome;
}

async function fetchAndDecide(ctx: EmulatorContext, scrape: ScrapeRequest): Promise<ScrapeOutcome> {
	const { config } = ctx;
	await pause(config.latencyMs, ctx.signal);
	const fault = ctx.faults.pick("scraper", "fetch", scrape.url);
	if (fault) scrape.entry.fault = fault.kind;
	if (fault?.kind === "slow") await pause(fault.delayMs, ctx.signal);
	if (fault?.kind === "dns_failure") {
		return { kind: "scraping-error", message: "DNS resolution failed", modeUsed: scrape.mode };
	}
	if (fault?.kind === "scraping_error") {
		return {
			kind: "scraping-error",
			message: (fault.message ?? "Page crashed") as ScrapingErrorMessage,
			modeUsed: scrape.mode,
			creditsUsed: fault.credits,
		};
	}
	const site = siteAnswer(ctx, scrape);
	if (site) return site;
	const fetched = await ctx.fetcher.fetch(scrape.url, scrape.extraHeaders);
	if (fetched.kind === "failed") {
		return { kind: "scraping-error", message: fetched.message, modeUsed: scrape.mode };
	}
	if (fetched.statusCode < 200 || fetched.statusCode > 299) {
		return { kind: "target-status", ...pick(fetched), modeUsed: scrape.mode };
	}
	const { modeUsed, creditsUsed } = decideModeAndCost(ctx, scrape, fetched.body);
	return { kind: "ok", ...pick(fetched), modeUsed, creditsUsed, finalUrl: fetched.finalUrl, requestedUrl: scrape.url };
}

/** The block page a site serves to datacenter addresses: an access-denied page, answered with 200. */
export const DATACENTER_BLOCK_PAGE = `<!DOCTYPE html>
<html><head><title>Access Denied</title></head>
<body><h1>Access Denied</h1>
<p>You don't have permission to access this page on this server.</p>
<p>Reference #18.4f2a1602.1732700000.1b2c3d4</p></body></html>
`;

/** The shell a script-rendered site sends before its script runs: no content, nothing a crawler can read. */
export const JAVASCRIPT_SHELL = `<!DOCTYPE html>
<html><head><title>Shop</title><script defer src="/static/app.js"></script></head>
<body><div id="root"></div>
<p>This site needs its script to show the catalogue: loading the page in a browser shows it.</p></body></html>
`;

const DENIED_PAGE =
	"<!DOCTYPE html><html><head><title>403 Forbidden</title></head><body><h1>Forbidden</h1></body></html>\n";

const HTML = "text/html; charset=utf-8";

/**
 * What a site of the scenario's `deny_all`, `block_datacenter` or `browser_only` answers instead of its
 * page (nothing is fetched then); null when the real page is fetched. Charged like any answer: a 200
 * block page or shell at the mode's cost, the 403 passed through at 0.
 */
function siteAnswer(ctx: EmulatorContext, scrape: ScrapeRequest): ScrapeOutcome | null {
	const { config } = ctx;
	const matches = (patterns: readonly ((url: string) => boolean)[]) => patterns.some((test) => test(scrape.url));
	const page = (body: string) => ({
		statusCode: 200,
		body: Buffer.from(body),
		contentType: HTML,
		finalUrl: scrape.url,
		requestedUrl: scrape.url,
	});
	if (matches(config.denyAll)) {
		return {
			kind: "target-status",
			statusCode: 403,
			body: Buffer.from(DENIED_PAGE),
			contentType: HTML,
			modeUsed: scrape.mode,
		};
	}
	if (scrape.mode === "request" && scrape.datacenter && matches(config.blockDatacenter)) {
		return {
			kind: "ok",
			...page(DATACENTER_BLOCK_PAGE),
			modeUsed: "request",
			creditsUsed: config.costs.requestDatacenter,
		};
	}
	if (matches(config.browserOnly)) {
		if (scrape.mode === "request") {
			const creditsUsed = scrape.datacenter ? config.costs.requestDatacenter : config.costs.request;
			return { kind: "ok", ...page(JAVASCRIPT_SHELL), modeUsed: "request", creditsUsed };
		}
		// `auto` reads the shell as a page (it has text) and stays a request unless the scenario upgrades it.
		if (scrape.mode === "auto" && !matches(config.autoUpgrade)) {
			return { kind: "ok", ...page(JAVASCRIPT_SHELL), modeUsed: "auto (request)", creditsUsed: config.costs.auto };
		}
	}
	return null;
}

function pick(fetched: { statusCode: number; body: Buffer; contentType: string }) {
	return { statusCode: fetched.statusCode, body: fetched.body, contentType: fetched.contentType };
}

function decideModeAndCost(
	ctx: EmulatorContext,
	scrape: ScrapeRequest,
	body: Buffer,
): { modeUsed: string; creditsUsed: number } {
	const { costs } = ctx.config;
	switch (scrape.mode) {
		case "request":
			return { modeUsed: "request", creditsUsed: scrape.datacenter ? costs.requestDatacenter : costs.request };
		case "browser":
			return { modeUsed: "browser", creditsUsed: costs.browser };
		case "auto": {
			const upgraded = ctx.config.autoUpgrade.some((matches) => matches(scrape.url)) || looksScriptRendered(body);
			return upgraded
				? { modeUsed: "auto (browser)", creditsUsed: costs.autoUpgraded }
				: { modeUsed: "auto (request)", creditsUsed: costs.auto };
		}
		default: {
			const unreachable: never = scrape.mode;
			throw new Error(`unknown mode ${String(unreachable)}`);
		}
	}
}
