/**
 * One scrape, from holding a slot and a credit reservation to its outcome: latency, fetch-phase
 * faults, the real fetch, auto mode's upgrade decision, and settling credits (charged only for a
 * successful fetch). Never rejects — every failure is an outcome — so callers can hand it to a task.
 */
import type { Mode } from "../shared/index.js";
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
	| { readonly kind: "scraping-error"; readonly message: ScrapingErrorMessage; readonly modeUsed: string };

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
	const charged = outcome.kind === "ok" ? outcome.creditsUsed : 0;
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
		};
	}
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
