/** A finished scrape as its task answers it (docs/service.md, "Where the documentation is silent"): completed with the content, or failed. */
import type { EmulatorContext } from "./context.js";
import { serviceExtraction } from "./scheme-extract.js";
import { type RenderOptions, renderContent } from "./scrape-render.js";
import type { ScrapeOutcome } from "./scrape-run.js";
import type { TaskResult } from "./tasks.js";

export function toTaskResult(ctx: EmulatorContext, outcome: ScrapeOutcome, render: RenderOptions): TaskResult {
	switch (outcome.kind) {
		case "ok": {
			const rendered = renderContent(outcome.body, outcome.contentType, render);
			return {
				status: "completed",
				statusCode: outcome.statusCode,
				modeUsed: outcome.modeUsed,
				creditsUsed: outcome.creditsUsed,
				creditsRemaining: ctx.credits.balance,
				content: rendered.text,
				...(outcome.finalUrl !== outcome.requestedUrl ? { finalUrl: outcome.finalUrl } : {}),
				...(render.delivery === "json" ? { title: rendered.title } : {}),
				...(render.delivery === "json" && render.extraction
					? { extraction: serviceExtraction(rendered.text, rendered.title, render.extraction) }
					: {}),
			};
		}
		case "target-status":
			return {
				status: "failed",
				error: "Target error",
				message: `The target answered HTTP ${outcome.statusCode}`,
				modeUsed: outcome.modeUsed,
				statusCode: outcome.statusCode,
			};
		case "scraping-error":
			return {
				status: "failed",
				error: "Scraping error",
				message: outcome.message,
				modeUsed: outcome.modeUsed,
				creditsUsed: outcome.creditsUsed ?? 0,
			};
		default: {
			const unreachable: never = outcome;
			throw new Error(`unknown outcome ${String(unreachable)}`);
		}
	}
}
