/**
 * Testing a scheme before it is saved (docs/service.md, "Extraction on the service"): `test: true` scrapes `config.url` at the
 * normal scraper rate and passes when the scheme extracts some data there; `fix: true` also lets "AI"
 * repair the scheme, for `AI_FIX_CREDITS` more, refunded when no working scheme comes out. No model
 * runs here: the fix keeps the rules that found data and adds title, heading and description rules
 * that find data on the page.
 */
import type { Mode } from "../common/index.js";
import type { EmulatorContext } from "./context.js";
import type { LedgerEntry } from "./ledger.js";
import type { Params } from "./saved-items.js";
import { serviceExtraction } from "./scheme-extract.js";
import { renderContent } from "./scrape-render.js";
import type { ScrapeOutcome } from "./scrape-run.js";
import { insufficientCreditsBody, tryStartScrape } from "./scrape-start.js";

/** Credits of one AI fix (the docs: "+ 30 credits for each AI fix"). */
export const AI_FIX_CREDITS = 30;

/** Rules the emulated fix may add, each kept only when it finds something on the tested page. */
const FIX_CANDIDATES: readonly Params[] = [
	{ label: "title", type: "content", selector: "title" },
	{ label: "heading", type: "content", selector: "h1" },
	{ label: "description", type: "attribute", selector: "meta[name=description]", attribute: "content" },
];

export type SchemeTestResult =
	| {
			readonly passed: true;
			readonly extractedData: Params;
			/** The repaired scheme, with `fix`. */
			readonly generatedScheme: Params[] | null;
			readonly statusCode: number;
			readonly creditsUsed: number;
			readonly modeUsed: string;
	  }
	| { readonly passed: false; readonly message: string; readonly creditsUsed: number; readonly modeUsed: string };

export type SchemeTestStart =
	| { readonly kind: "started"; readonly result: Promise<SchemeTestResult> }
	| { readonly kind: "refused"; readonly status: 402 | 429; readonly body: Params };

function hasData(value: unknown): boolean {
	if (value === null || value === undefined || value === false || value === 0 || value === "") return false;
	if (Array.isArray(value)) return value.some(hasData);
	if (typeof value === "object") return Object.values(value).some(hasData);
	return true;
}

function extract(html: string, title: string, scheme: unknown): Params {
	return serviceExtraction(html, title, { scheme, ai: null }).extracted_data ?? {};
}

function finish(
	ctx: EmulatorContext,
	outcome: ScrapeOutcome,
	config: Params,
	fix: boolean,
	entry: LedgerEntry,
): SchemeTestResult {
	const aiReserved = fix ? AI_FIX_CREDITS : 0;
	if (outcome.kind !== "ok") {
		ctx.credits.settle(aiReserved, 0);
		const message = outcome.kind === "target-status" ? `The page answered HTTP ${outcome.statusCode}` : outcome.message;
		return {
			passed: false,
			message: `Scheme test could not scrape ${String(config.url)}: ${message}`,
			creditsUsed: 0,
			modeUsed: outcome.modeUsed,
		};
	}
	const page = renderContent(outcome.body, outcome.contentType, {
		delivery: "json",
		content: "html",
		includeContent: false,
		extraction: null,
	});
	const given = config.extract_scheme === undefined ? [] : [config.extract_scheme].flat();
	const extracted = given.length > 0 ? extract(page.text, page.title, given) : {};
	if (!fix) {
		if (hasData(extracted)) {
			return {
				passed: true,
				extractedData: extracted,
				generatedScheme: null,
				statusCode: outcome.statusCode,
				creditsUsed: outcome.creditsUsed,
				modeUsed: outcome.modeUsed,
			};
		}
		return {
			passed: false,
			message: `The scheme extracted no data from ${String(config.url)}`,
			creditsUsed: outcome.creditsUsed,
			modeUsed: outcome.modeUsed,
		};
	}
	const working = given.filter((rule) => {
		const label = (rule as Params | null)?.label;
		return typeof label === "string" && hasData(extracted[label]);
	}) as Params[];
	const labels = new Set(working.map((rule) => rule.label));
	for (const candidate of FIX_CANDIDATES) {
		if (labels.has(candidate.label)) continue;
		if (hasData(extract(page.text, page.title, [candidate])[candidate.label as string])) working.push(candidate);
	}
	if (working.length === 0) {
		ctx.credits.settle(aiReserved, 0);
		return {
			passed: false,
			message: `The AI fix found nothing to extract on ${String(config.url)}; its credits were refunded`,
			creditsUsed: outcome.creditsUsed,
			modeUsed: outcome.modeUsed,
		};
	}
	ctx.credits.settle(aiReserved, AI_FIX_CREDITS);
	ctx.ledger.charge(entry, AI_FIX_CREDITS);
	return {
		passed: true,
		extractedData: extract(page.text, page.title, working),
		generatedScheme: working,
		statusCode: outcome.statusCode,
		creditsUsed: outcome.creditsUsed + AI_FIX_CREDITS,
		modeUsed: outcome.modeUsed,
	};
}

/** Reserve (fee and fix), take a slot and start the test scrape, or say why it cannot start (402/429). */
export function startSchemeTest(
	ctx: EmulatorContext,
	key: string,
	entry: LedgerEntry,
	config: Params,
	fix: boolean,
): SchemeTestStart {
	if (fix && !ctx.credits.tryReserve(AI_FIX_CREDITS)) {
		return { kind: "refused", status: 402, body: insufficientCreditsBody(ctx, AI_FIX_CREDITS) };
	}
	const started = tryStartScrape(ctx, {
		key,
		url: config.url as string,
		mode: (config.mode ?? "auto") as Mode,
		datacenter: config.proxy_type === "datacenter",
		extraHeaders: null,
		entry,
	});
	if (started.kind === "refused") {
		if (fix) ctx.credits.settle(AI_FIX_CREDITS, 0);
		return started;
	}
	return { kind: "started", result: started.job.then((outcome) => finish(ctx, outcome, config, fix, entry)) };
}
