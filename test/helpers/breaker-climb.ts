import type { ScenarioInput } from "../../src/emulator/index.js";

/**
 * An adaptive target's first rung is slow (1.5 s at the service) while two request-mode targets of its
 * domain fail charged and open its breaker (trip 2): the domain is served at 127.0.0.2, rendered by script
 * (every rung below browser useless). A local run's and a fleet's tests of the breaker holding a climb back.
 */
export const BREAKER_CLIMB_SCENARIO: ScenarioInput = {
	concurrency: 3,
	browser_only: ["//127.0.0.2:"],
	faults: [
		{ kind: "slow", match: "/product/1", delay_ms: 1500 },
		{ kind: "scraping_error", match: "/\\/product\\/[23]$/", message: "Page crashed", credits: 2 },
	],
};

/** The job: the adaptive target first, then the two that fail, all on the demo site at `siteUrl`. */
export function breakerClimbJob(siteUrl: string): string {
	return [
		"name: climb",
		"concurrency: 3",
		"breaker: {window: 2, trip: 2, cool_down: 1h}",
		"retry: {attempts: 1, backoff_ms: 5, max_backoff_ms: 10}",
		"defaults: {mode: request}",
		"extract:",
		"  price: {css: .price, required: true}",
		"targets:",
		`  - {url: "${siteUrl}/product/1", mode: adaptive}`,
		`  - ${siteUrl}/product/2`,
		`  - ${siteUrl}/product/3`,
		"",
	].join("\n");
}
