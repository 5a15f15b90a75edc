/**
 * Starting one scrape on the account: reserve the mode's worst-case credits (402 when they are not
 * there), take a concurrency slot of the key (429 when it holds its limit), then run it. Realtime
 * fetches, scheme tests, crawl pages and schedule runs all start here, so they share one credit
 * balance and one slot count, as on the service ("crawl scraping respects your concurrency limits").
 */
import type { Mode } from "../common/index.js";
import type { EmulatorContext } from "./context.js";
import { pause, timestamp } from "./http-io.js";
import type { LedgerEntry } from "./ledger.js";
import { runScrape, type ScrapeOutcome, worstCaseCost } from "./scrape-run.js";

export interface ScrapeStart {
	readonly key: string;
	readonly url: string;
	readonly mode: Mode;
	readonly datacenter: boolean;
	readonly extraHeaders: Record<string, string> | null;
	/** The request (or schedule run) the scrape's credits are charged to. */
	readonly entry: LedgerEntry;
}

export type StartAttempt =
	| { readonly kind: "started"; readonly job: Promise<ScrapeOutcome> }
	| { readonly kind: "refused"; readonly status: 402 | 429; readonly body: Record<string, unknown> };

/** How often a background scrape (crawl page, schedule run) looks for a free slot, ms. */
const SLOT_WAIT_MS = 20;

export function insufficientCreditsBody(ctx: EmulatorContext, required: number): Record<string, unknown> {
	return {
		success: false,
		error: "Insufficient credits",
		message: `Insufficient credits: required ${required}, available ${ctx.credits.available}`,
		credits_remaining: ctx.credits.balance,
		timestamp: timestamp(),
	};
}

/** The 429 record (docs/service.md, "Errors"), noted in the ledger as a window a client must respect. */
export function rateLimitedBody(
	ctx: EmulatorContext,
	key: string,
	cause: "concurrency" | "fault",
): Record<string, unknown> {
	const limit = ctx.slots.limit;
	const used = cause === "fault" ? limit : ctx.slots.inFlight(key);
	const resetSeconds = ctx.config.resetSeconds;
	const at = Date.now();
	ctx.ledger.noteRateLimit({ at, key, resetSeconds, untilMs: at + resetSeconds * 1000, cause });
	return {
		success: false,
		error: `Concurrency limit exceeded (${used}/${limit})`,
		message: `This key may run ${limit} concurrent requests; wait ${resetSeconds} seconds before sending more`,
		limit,
		reset: resetSeconds,
		timestamp: timestamp(),
	};
}

/** Start now or say why not: no await between the credit check, the slot and the start. */
export function tryStartScrape(ctx: EmulatorContext, start: ScrapeStart): StartAttempt {
	const reserved = worstCaseCost(ctx.config.costs, start.mode, start.datacenter);
	if (!ctx.credits.tryReserve(reserved)) {
		return { kind: "refused", status: 402, body: insufficientCreditsBody(ctx, reserved) };
	}
	const slot = ctx.slots.tryAcquire(start.key);
	if (!slot) {
		ctx.credits.settle(reserved, 0);
		return { kind: "refused", status: 429, body: rateLimitedBody(ctx, start.key, "concurrency") };
	}
	return { kind: "started", job: runScrape(ctx, { ...start, slot, reserved }) };
}

/** What a background scrape ends with: the fetch's outcome, or the reason it never started. */
export type BackgroundOutcome = ScrapeOutcome | { readonly kind: "not-started"; readonly message: string };

/**
 * A scrape nobody waits on an answer for (a crawl page, a schedule run): it waits for a free slot
 * instead of answering 429; without the credits, or once the emulator closes, it does not start.
 */
export async function scrapeInBackground(ctx: EmulatorContext, start: ScrapeStart): Promise<BackgroundOutcome> {
	for (;;) {
		if (ctx.signal.aborted) return { kind: "not-started", message: "The service stopped" };
		const reserved = worstCaseCost(ctx.config.costs, start.mode, start.datacenter);
		if (!ctx.credits.tryReserve(reserved)) {
			return {
				kind: "not-started",
				message: `Insufficient credits: required ${reserved}, available ${ctx.credits.available}`,
			};
		}
		const slot = ctx.slots.tryAcquire(start.key);
		if (slot) return runScrape(ctx, { ...start, slot, reserved });
		ctx.credits.settle(reserved, 0);
		await pause(SLOT_WAIT_MS, ctx.signal);
	}
}
