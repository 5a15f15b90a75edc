/**
 * Service-side extraction as the emulator performs it (docs/service.md, "Extraction on the service"): `extract_scheme` rules
 * with `label`, `type` content | attribute | exists | count | nest, one locator of `selector` (CSS)
 * or `regex` (over the raw HTML; `xpath` is not emulated and yields null), `attribute` for
 * attribute rules and `fields` for nest (one object per container match; inside it, a rule with no
 * locator reads the container itself). And `ai_enhance`: a
 * deterministic placeholder object, so the wiring can be tested offline without a model.
 */
import type { AnyNode, Element } from "domhandler";
import { compileUserRegex, lazyModule, type UserRegexMatch } from "../common/index.js";

// Loaded on the first `extract_scheme` answered: a `--sandbox` run of plain pages never needs them.
const cssSelect = lazyModule<typeof import("css-select")>("css-select");
const domutils = lazyModule<typeof import("domutils")>("domutils");
const htmlparser2 = lazyModule<typeof import("htmlparser2")>("htmlparser2");

/** What a JSON delivery body gains for service-side extraction and AI. */
export interface ServiceExtraction {
	extracted_data?: Record<string, unknown>;
	ai_data?: Record<string, unknown>;
}

export interface ServiceExtractionOptions {
	/** `extract_scheme` as sent (a list of rules, or one rule object). */
	readonly scheme: unknown;
	/** `ai_enhance` with its prompt and source. */
	readonly ai: { readonly prompt: string | null; readonly source: string | null } | null;
}

type Rule = Record<string, unknown>;

function text(node: AnyNode): string {
	return domutils().textContent(node).replace(/\s+/g, " ").trim();
}

function select(selector: string, scope: AnyNode | AnyNode[], all: true): Element[];
function select(selector: string, scope: AnyNode | AnyNode[], all: false): Element | null;
function select(selector: string, scope: AnyNode | AnyNode[], all: boolean): Element[] | Element | null {
	try {
		return all
			? cssSelect().selectAll<AnyNode, Element>(selector, scope)
			: cssSelect().selectOne<AnyNode, Element>(selector, scope);
	} catch {
		// A selector the engine cannot compile finds nothing, as a lenient service would answer.
		return all ? [] : null;
	}
}

// On RE2, as the job file's own regexes: with V8's engine a nested quantifier over a page held the
// loop for good, and in `--sandbox` that loop is the run's own.
function regexMatches(pattern: string, html: string): UserRegexMatch[] {
	try {
		return [...compileUserRegex(pattern).matchAll(html)];
	} catch {
		return [];
	}
}

function applyRule(rule: Rule, scope: AnyNode, html: string): unknown {
	const type = typeof rule.type === "string" ? rule.type : "content";
	const selector = typeof rule.selector === "string" ? rule.selector : null;
	const regex = typeof rule.regex === "string" ? rule.regex : null;
	// Inside a nest, a rule without a locator reads the container element itself.
	if (selector === null && regex === null) {
		if (scope.type !== "tag") return null;
		const container = scope as Element;
		if (type === "content") return text(container);
		if (type === "attribute")
			return typeof rule.attribute === "string" ? (container.attribs[rule.attribute] ?? null) : null;
		return type === "exists" ? true : type === "count" ? 1 : null;
	}
	switch (type) {
		case "content": {
			if (selector !== null) {
				const element = select(selector, scope, false);
				return element ? text(element) : null;
			}
			const match = regexMatches(regex!, html)[0];
			return match ? (match[1] ?? match[0]) : null;
		}
		case "attribute": {
			if (selector === null || typeof rule.attribute !== "string") return null;
			return select(selector, scope, false)?.attribs[rule.attribute] ?? null;
		}
		case "exists":
			return selector !== null ? select(selector, scope, false) !== null : regexMatches(regex!, html).length > 0;
		case "count":
			return selector !== null ? select(selector, scope, true).length : regexMatches(regex!, html).length;
		case "nest": {
			if (selector === null || !Array.isArray(rule.fields)) return null;
			return select(selector, scope, true).map((container) => applyRules(rule.fields as unknown[], container, html));
		}
		default:
			return null;
	}
}

function applyRules(rules: readonly unknown[], scope: AnyNode, html: string): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const rule of rules) {
		if (!rule || typeof rule !== "object" || Array.isArray(rule)) continue;
		const label = (rule as Rule).label;
		if (typeof label !== "string" || label === "") continue;
		out[label] = applyRule(rule as Rule, scope, html);
	}
	return out;
}

export function serviceExtraction(html: string, title: string, options: ServiceExtractionOptions): ServiceExtraction {
	const result: ServiceExtraction = {};
	const { scheme } = options;
	if (scheme !== undefined && scheme !== null) {
		const rules = Array.isArray(scheme) ? scheme : [scheme];
		result.extracted_data = applyRules(rules, htmlparser2().parseDocument(html), html);
	}
	if (options.ai) {
		result.ai_data = {
			placeholder: true,
			note: "emulator: no AI model runs here; this object stands in for the model's answer",
			prompt: options.ai.prompt,
			source: options.ai.source,
			title,
		};
	}
	return result;
}
