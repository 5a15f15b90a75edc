/**
 * Decides which injected fault, if any, hits a request. Rules are tried in scenario order; the first
 * that matches, still has `times` left and wins its seeded `probability` draw applies. Also keeps the
 * per-key 429 bursts a `rate_limit` fault starts.
 */
import type { Random } from "./random.js";
import type { FaultKind, FaultRule } from "./scenario.js";

/**
 * `answer`: faults that decide the answer before any work (503, 502, 500, drop, 429 burst).
 * `fetch`: faults that happen while the target is fetched (slow, scraping errors) — picked only
 * once the request holds its slot and credits, so `times` counts fetches that really ran.
 */
export type FaultPhase = "answer" | "fetch";

const FETCH_PHASE: ReadonlySet<FaultKind> = new Set(["slow", "scraping_error", "dns_failure"]);

export class FaultInjector {
	readonly #rules: readonly FaultRule[];
	readonly #random: Random;
	readonly #applied: number[];
	readonly #bursts = new Map<string, number>();

	constructor(rules: readonly FaultRule[], random: Random) {
		this.#rules = rules;
		this.#random = random;
		this.#applied = rules.map(() => 0);
	}

	/**
	 * The fault for a request, counted as applied. `subject` is the target URL (scraper) or the request
	 * path (account). Account requests have one phase: every kind is picked with `answer`.
	 */
	pick(on: "scraper" | "account", phase: FaultPhase, subject: string): FaultRule | null {
		if (this.#rules.length === 0) return null;
		for (const rule of this.#rules) {
			if (rule.on !== on) continue;
			if (on === "scraper" && FETCH_PHASE.has(rule.kind) !== (phase === "fetch")) continue;
			if (rule.times !== null && (this.#applied[rule.index] ?? 0) >= rule.times) continue;
			if (rule.match !== null && !rule.match(subject)) continue;
			if (rule.probability < 1 && this.#random() >= rule.probability) continue;
			this.#applied[rule.index] = (this.#applied[rule.index] ?? 0) + 1;
			return rule;
		}
		return null;
	}

	/** A `rate_limit` fault hit: this request and the next `count - 1` of the key answer 429. */
	startBurst(key: string, count: number): void {
		this.#bursts.set(key, count - 1);
	}

	/** True (and one fewer left) when the key is inside a 429 burst. */
	takeBurst(key: string): boolean {
		const left = this.#bursts.get(key);
		if (left === undefined || left <= 0) return false;
		this.#bursts.set(key, left - 1);
		return true;
	}
}
