/**
 * The realtime scraper's parameters and the service's own validation rules (docs/service.md,
 * "Fetching a page", "Parameter rules" and "Modes and costs"). Shared by the job validator (so a bad job is caught before a credit is
 * spent, with the same words the service would use) and by the emulator (which answers 422 with them).
 */

export const MODES = ["request", "browser", "auto"] as const;
export type Mode = (typeof MODES)[number];
/**
 * What a job file's `mode` may say: a service mode, or `adaptive` (the runner picks a service mode per
 * domain, cheapest first: docs/behaviour.md, "Adaptive mode"). `adaptive` never reaches the service.
 */
export const JOB_MODES = [...MODES, "adaptive"] as const;
export type JobMode = (typeof JOB_MODES)[number];
/** What a target asks for, as validate, records and summaries name it: a job mode, or the remote browser. */
export const REQUESTED_MODES = [...JOB_MODES, "browser_session"] as const;
export type RequestedMode = (typeof REQUESTED_MODES)[number];

export const PROXY_TYPES = ["residential", "datacenter"] as const;
export type ProxyType = (typeof PROXY_TYPES)[number];

export const DELIVERIES = ["raw", "json"] as const;
export const CONTENT_FORMATS = ["html", "markdown", "pdf", "screenshot"] as const;
export const AI_SOURCES = ["markdown", "screenshot"] as const;
export const DEVICES = ["windows", "macos", "android"] as const;
export const WAIT_UNTIL = ["load", "domcontentloaded", "networkidle", "commit"] as const;

/** Every documented realtime parameter, named as the service names it (docs/service.md, "Fetching a page"). */
export interface ScrapeParams {
	url: string;
	/** `adaptive` is the runner's: it sends one of the service's modes in its place. */
	mode?: JobMode;
	delivery?: (typeof DELIVERIES)[number];
	async?: boolean;
	content?: (typeof CONTENT_FORMATS)[number];
	include_content?: boolean;
	no_html?: boolean;
	excluded_tags?: string[] | string;
	excluded_selectors?: string[] | string;
	extract_scheme?: unknown;
	scheme_id?: string;
	js_instructions?: unknown[];
	execute_js?: string;
	networkCapture?: unknown[];
	capture_headers?: boolean;
	block_resources?: string[];
	proxy_type?: ProxyType;
	proxy_country?: string;
	proxy_session_id?: string;
	proxy_overwrite?: string;
	device?: (typeof DEVICES)[number];
	wait_until?: (typeof WAIT_UNTIL)[number];
	wait_seconds?: number;
	screenshot?: boolean;
	pdf?: boolean;
	ai_enhance?: boolean;
	ai_prompt?: string;
	ai_source?: (typeof AI_SOURCES)[number];
	ai_force_json?: boolean;
	additional_headers?: Record<string, string>;
	config_id?: string;
	storage_id?: string;
	use_default_storage?: boolean;
	webhook?: unknown;
}

/** Names of every documented realtime parameter except the key. */
export const SCRAPE_PARAM_NAMES = [
	"url",
	"mode",
	"delivery",
	"async",
	"content",
	"include_content",
	"no_html",
	"excluded_tags",
	"excluded_selectors",
	"extract_scheme",
	"scheme_id",
	"js_instructions",
	"execute_js",
	"networkCapture",
	"capture_headers",
	"block_resources",
	"proxy_type",
	"proxy_country",
	"proxy_session_id",
	"proxy_overwrite",
	"device",
	"wait_until",
	"wait_seconds",
	"screenshot",
	"pdf",
	"ai_enhance",
	"ai_prompt",
	"ai_source",
	"ai_force_json",
	"additional_headers",
	"config_id",
	"storage_id",
	"use_default_storage",
	"webhook",
] as const satisfies ReadonlyArray<keyof ScrapeParams>;

/** The problem texts of the service's parameter rules, verbatim (docs/service.md, "Parameter rules"). */
export const PROBLEMS = {
	urlRequired: "url is required",
	urlFormat: "invalid URL format",
	mode: "invalid mode value",
	proxyCountry: "invalid proxy_country",
	proxySessionId: "invalid proxy_session_id",
	screenshotNeedsBrowser: "screenshot requires browser (set mode to browser)",
	aiSourceRequired: "ai_source required",
	datacenterNeedsRequest:
		"Value error, Datacenter proxies can only be used with mode='request'. Browser and auto modes require premium (residential) proxies.",
} as const;

export interface ParamProblem {
	/** The parameter the service would name in `details.validation_errors` (`<parameter>: <problem>`). */
	readonly param: keyof ScrapeParams;
	readonly problem: string;
}

function isTruthyFlag(value: unknown): boolean {
	return value === true || value === "true" || value === 1 || value === "1";
}

/**
 * The service's rule for `url` alone (docs/service.md, "Parameter rules"): its problem text, or undefined when the URL passes.
 * A source's every row is checked with it (twice a run: validation, then the feed), so it stands apart.
 */
export function checkScrapeUrl(url: unknown): string | undefined {
	if (url === undefined || url === null || url === "") return PROBLEMS.urlRequired;
	if (typeof url !== "string" || !/^https?:\/\/[^\s/?#]+/i.test(url) || !URL.canParse(url)) return PROBLEMS.urlFormat;
	return undefined;
}

/**
 * Apply the service's validation rules (docs/service.md, "Parameter rules") to one set of realtime parameters, as the
 * service would see them (values may be strings when sent by GET). Returns every problem, in a fixed order.
 */
export function checkScrapeParams(params: Readonly<Record<string, unknown>>): ParamProblem[] {
	const problems: ParamProblem[] = [];
	const urlProblem = checkScrapeUrl(params.url);
	if (urlProblem) problems.push({ param: "url", problem: urlProblem });
	const mode = params.mode ?? "auto";
	if (!MODES.includes(mode as Mode)) problems.push({ param: "mode", problem: PROBLEMS.mode });
	const country = params.proxy_country;
	if (country !== undefined && (typeof country !== "string" || !/^[A-Za-z]{2}$/.test(country))) {
		problems.push({ param: "proxy_country", problem: PROBLEMS.proxyCountry });
	}
	const session = params.proxy_session_id;
	if (session !== undefined && (typeof session !== "string" || !/^[A-Za-z0-9]{6,8}$/.test(session))) {
		problems.push({ param: "proxy_session_id", problem: PROBLEMS.proxySessionId });
	}
	if (isTruthyFlag(params.screenshot) && mode !== "browser") {
		problems.push({ param: "screenshot", problem: PROBLEMS.screenshotNeedsBrowser });
	}
	if (isTruthyFlag(params.ai_enhance) && (params.ai_source === undefined || params.ai_source === "")) {
		problems.push({ param: "ai_source", problem: PROBLEMS.aiSourceRequired });
	}
	if (params.proxy_type === "datacenter" && mode !== "request" && MODES.includes(mode as Mode)) {
		problems.push({ param: "proxy_type", problem: PROBLEMS.datacenterNeedsRequest });
	}
	return problems;
}

/** Documented credits per successful fetch (docs/service.md, "Modes and costs"). Extras carry no documented surcharge. */
export const CREDIT_COSTS = {
	requestResidential: 2,
	requestDatacenter: 1,
	browser: 5,
	autoPlain: 2,
	autoUpgraded: 6,
} as const;

/** A credit range: what a fetch costs at least and at most. */
export interface CreditRange {
	readonly min: number;
	readonly max: number;
}

/**
 * What a target's fetches are priced as: its mode, and the proxy for `request`. The forecast keeps costs
 * apart per price class, so a job switched from `request` to `browser` is not forecast at the old price.
 */
export type PriceClass = "request_residential" | "request_datacenter" | "browser" | "auto" | "adaptive";

/** A credit range with the price class it is the range of. */
export interface PricedRange extends CreditRange {
	readonly price: PriceClass;
}

const priced = (price: PriceClass, min: number, max: number): PricedRange => Object.freeze({ price, min, max });

/** One frozen range per case, shared: the runner asks for one per target, and a new object each time is garbage. */
const COST_RANGES = {
	requestResidential: priced("request_residential", CREDIT_COSTS.requestResidential, CREDIT_COSTS.requestResidential),
	requestDatacenter: priced("request_datacenter", CREDIT_COSTS.requestDatacenter, CREDIT_COSTS.requestDatacenter),
	browser: priced("browser", CREDIT_COSTS.browser, CREDIT_COSTS.browser),
	auto: priced("auto", CREDIT_COSTS.autoPlain, CREDIT_COSTS.autoUpgraded),
	// The cheapest rung at least; at most every rung of the ladder, each paid once (adaptive-mode.ts).
	adaptive: priced(
		"adaptive",
		CREDIT_COSTS.requestDatacenter,
		CREDIT_COSTS.requestDatacenter +
			CREDIT_COSTS.requestResidential +
			Math.max(CREDIT_COSTS.autoPlain, CREDIT_COSTS.autoUpgraded) +
			CREDIT_COSTS.browser,
	),
} as const;

/** The least and most a successful fetch with these parameters can cost. */
export function creditCostRange(params: Pick<ScrapeParams, "mode" | "proxy_type">): PricedRange {
	const mode = params.mode ?? "auto";
	switch (mode) {
		case "request":
			return params.proxy_type === "datacenter" ? COST_RANGES.requestDatacenter : COST_RANGES.requestResidential;
		case "browser":
			return COST_RANGES.browser;
		case "auto":
			return COST_RANGES.auto;
		case "adaptive":
			return COST_RANGES.adaptive;
		default: {
			const unreachable: never = mode;
			throw new Error(`unknown mode ${String(unreachable)}`);
		}
	}
}
