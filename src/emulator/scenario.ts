/**
 * The scenario: everything that makes one emulator run differ from another — keys, credits,
 * concurrency, timings and injected faults. Written in snake_case, the same shape in a YAML/JSON
 * file and in `startEmulator({ scenario })`. Validated once with zod; the request path only reads
 * the resolved, camelCase `EmulatorConfig`.
 */
import { z } from "zod";
import { CREDIT_COSTS, didYouMean, UsageError } from "../common/index.js";
import { CATALOGUE_LAYOUTS, type CatalogueLayout } from "./catalogue.js";
import { DEFAULT_ACCOUNT_KEY, DEFAULT_BROWSER_KEY, DEFAULT_SCRAPER_KEY } from "./defaults.js";
import { compilePattern, type UrlPattern } from "./url-pattern.js";

/** The scraping failure messages of the service, verbatim (docs/service.md, "Errors"). */
export const SCRAPING_ERROR_MESSAGES = [
	"DNS resolution failed",
	"Connection refused",
	"SSL certificate error",
	"Page crashed",
	"Navigation timeout",
	"Target closed",
] as const;
export type ScrapingErrorMessage = (typeof SCRAPING_ERROR_MESSAGES)[number];

export const FAULT_KINDS = [
	"unavailable",
	"bad_gateway",
	"server_error",
	"scraping_error",
	"dns_failure",
	"drop_connection",
	"slow",
	"rate_limit",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Fault kinds that only make sense on the scraper's realtime endpoint (they happen while fetching a target). */
const SCRAPER_ONLY_KINDS: ReadonlySet<FaultKind> = new Set(["scraping_error", "dns_failure"]);

const pattern = z
	.string()
	.min(1)
	.superRefine((value, ctx) => {
		try {
			compilePattern(value);
		} catch (error) {
			ctx.addIssue({ code: "custom", message: `invalid regular expression: ${(error as Error).message}` });
		}
	});

const count = z.number().int().min(0);
const positiveInt = z.number().int().min(1);

const faultBase = {
	/** Substring or `/regex/` of the target URL (scraper) or of the request path (account). Omitted: every request. */
	match: pattern.optional(),
	/** Which side of the service the fault hits. @default "scraper" */
	on: z.enum(["scraper", "account"]).default("scraper"),
	/** Apply to the first N matching requests only. @default unlimited */
	times: positiveInt.optional(),
	/** Chance, 0–1, that a matching request is hit (drawn from the scenario's seeded PRNG). @default 1 */
	probability: z.number().min(0).max(1).default(1),
};

const faultSchema = z.discriminatedUnion(
	"kind",
	[
		z.strictObject({ kind: z.literal("unavailable"), ...faultBase }),
		z.strictObject({ kind: z.literal("bad_gateway"), ...faultBase }),
		z.strictObject({ kind: z.literal("server_error"), ...faultBase, message: z.string().min(1).optional() }),
		z.strictObject({
			kind: z.literal("scraping_error"),
			...faultBase,
			/** @default "Page crashed" */
			message: z.enum(SCRAPING_ERROR_MESSAGES).default("Page crashed"),
			/**
			 * Credits this failed fetch is charged (its answer's `X-Credits-Used` and `credits_used`): the
			 * documented service charges none, a service that charges failures is played with more. @default 0
			 */
			credits: count.optional(),
		}),
		z.strictObject({ kind: z.literal("dns_failure"), ...faultBase }),
		z.strictObject({ kind: z.literal("drop_connection"), ...faultBase }),
		z.strictObject({
			kind: z.literal("slow"),
			...faultBase,
			/** Extra delay before the fetch (scraper) or the answer (account), ms. @default 1000 */
			delay_ms: count.default(1000),
		}),
		z.strictObject({
			kind: z.literal("rate_limit"),
			...faultBase,
			/** How many consecutive requests of the key answer 429, this one included. @default 1 */
			count: positiveInt.default(1),
		}),
	],
	{ error: () => `kind must be one of ${FAULT_KINDS.join(", ")}` },
);

const balancesSchema = z.strictObject({
	rp: z.number().min(0).default(1024.5),
	rpc: z.number().min(0).default(133700.848432),
	mp: z.number().min(0).default(512.25),
	dcp: z.number().min(0).default(2048),
});

const costsSchema = z.strictObject({
	request: z.number().min(0).default(CREDIT_COSTS.requestResidential),
	request_datacenter: z.number().min(0).default(CREDIT_COSTS.requestDatacenter),
	browser: z.number().min(0).default(CREDIT_COSTS.browser),
	auto: z.number().min(0).default(CREDIT_COSTS.autoPlain),
	auto_upgraded: z.number().min(0).default(CREDIT_COSTS.autoUpgraded),
});

const keysSchema = z.strictObject({
	account: z.string().min(1).default(DEFAULT_ACCOUNT_KEY),
	/** One key, or several (the first is the one `/public/scraper` returns); all share the account's credits. */
	scraper: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).default(DEFAULT_SCRAPER_KEY),
	browser: z.string().min(1).default(DEFAULT_BROWSER_KEY),
	/** A team key for the account endpoints (usage then reports the team's identity). @default none */
	team: z.string().min(1).optional(),
});

export const scenarioSchema = z
	.strictObject({
		seed: z.number().int().min(0).default(1),
		keys: keysSchema.prefault({}),
		credits: z.number().min(0).default(10_000),
		concurrency: count.default(5),
		costs: costsSchema.prefault({}),
		latency_ms: count.default(0),
		timeout_ms: positiveInt.default(30_000),
		timeout_status: z.union([z.literal(202), z.literal(408)]).default(202),
		task_ttl_ms: positiveInt.default(600_000),
		/** How long one minute of a saved schedule's `interval_minutes` lasts here, ms (tests shorten it). @default 60000 */
		schedule_minute_ms: positiveInt.default(60_000),
		slot_expiry_ms: positiveInt.default(60_000),
		reset_seconds: positiveInt.default(60),
		auto_upgrade: z.array(pattern).default([]),
		/**
		 * Target URLs (substrings or `/regex/`) whose site blocks datacenter proxies: a `request` fetch on
		 * `proxy_type: datacenter` gets a 200 block page (charged as any answer); residential and browser pass.
		 */
		block_datacenter: z.array(pattern).default([]),
		/**
		 * Target URLs whose content is rendered by script: `request` and `auto` that stays `auto (request)` get
		 * the site's empty JavaScript shell (200, charged); `browser` (and `auto` upgraded by `auto_upgrade`) get the page.
		 */
		browser_only: z.array(pattern).default([]),
		/** Target URLs whose site answers 403 to every fetch, in every mode (passed through: 0 credits). */
		deny_all: z.array(pattern).default([]),
		has_scraper_access: z.boolean().default(true),
		has_browser_access: z.boolean().default(true),
		browser_credits: count.default(1000),
		browser_concurrency: count.default(3),
		max_session_length_seconds: count.default(60),
		browser_cut_sessions: count.default(0),
		/** The key GET /public/browser reports; another value than keys.browser makes every session 401 (a revoked key). */
		browser_reported_key: z.string().min(1).optional(),
		browser_cut_after_ms: positiveInt.default(1000),
		email_verified: z.boolean().default(true),
		balances_mb: balancesSchema.prefault({}),
		static_residential_ips: z.number().int().min(0).max(100).default(3),
		/** How `/public/settings` lays out cities and regions: flat items, or grouped per country. @default "flat" */
		catalogue_layout: z.enum(CATALOGUE_LAYOUTS).default("flat"),
		faults: z.array(faultSchema).default([]),
	})
	.superRefine((scenario, ctx) => {
		scenario.faults.forEach((fault, index) => {
			if (fault.on === "account" && SCRAPER_ONLY_KINDS.has(fault.kind)) {
				ctx.addIssue({
					code: "custom",
					path: ["faults", index, "on"],
					message: `kind ${fault.kind} happens while fetching a target, so it only applies on: scraper`,
				});
			}
		});
		const keys = [scenario.keys.account, ...[scenario.keys.scraper].flat(), scenario.keys.team].filter(Boolean);
		if (new Set(keys).size !== keys.length) {
			ctx.addIssue({ code: "custom", path: ["keys"], message: "account, scraper and team keys must all differ" });
		}
	});

/** A scenario as written (every key optional), for `startEmulator({ scenario })`. */
export type ScenarioInput = z.input<typeof scenarioSchema>;
/** A scenario with every default filled in. */
export type Scenario = z.output<typeof scenarioSchema>;
export type FaultInput = z.input<typeof faultSchema>;

export interface FaultRule {
	readonly index: number;
	readonly kind: FaultKind;
	readonly on: "scraper" | "account";
	readonly match: UrlPattern | null;
	readonly times: number | null;
	readonly probability: number;
	readonly message: string | null;
	readonly delayMs: number;
	readonly count: number;
	/** What a `scraping_error` fault charges its failed fetch. */
	readonly credits: number;
}

export interface CreditCosts {
	readonly request: number;
	readonly requestDatacenter: number;
	readonly browser: number;
	readonly auto: number;
	readonly autoUpgraded: number;
}

/** The resolved run-time configuration the request handlers read. */
export interface EmulatorConfig {
	readonly seed: number;
	readonly accountKey: string;
	readonly teamKey: string | null;
	readonly scraperKeys: readonly string[];
	readonly browserKey: string;
	readonly credits: number;
	readonly concurrency: number;
	readonly costs: CreditCosts;
	readonly latencyMs: number;
	readonly timeoutMs: number;
	readonly timeoutStatus: 202 | 408;
	readonly taskTtlMs: number;
	/** Real milliseconds per minute of a schedule's interval. */
	readonly scheduleMinuteMs: number;
	readonly slotExpiryMs: number;
	readonly resetSeconds: number;
	readonly autoUpgrade: readonly UrlPattern[];
	/** Datacenter `request` fetches of these URLs get a block page. */
	readonly blockDatacenter: readonly UrlPattern[];
	/** Fetches of these URLs that are not a browser's get the site's JavaScript shell. */
	readonly browserOnly: readonly UrlPattern[];
	/** These URLs answer 403 to every fetch. */
	readonly denyAll: readonly UrlPattern[];
	readonly hasScraperAccess: boolean;
	readonly hasBrowserAccess: boolean;
	readonly browserCredits: number;
	readonly browserConcurrency: number;
	readonly maxSessionLengthSeconds: number;
	/** The first this-many browser sessions end after `browserCutAfterMs` (a session the service cut short). */
	readonly browserCutSessions: number;
	/** What GET /public/browser reports as `api_key` (the real browser key unless a scenario says otherwise). */
	readonly browserReportedKey: string;
	readonly browserCutAfterMs: number;
	readonly emailVerified: boolean;
	readonly balancesMb: { readonly rp: number; readonly rpc: number; readonly mp: number; readonly dcp: number };
	readonly staticResidentialIps: number;
	readonly catalogueLayout: CatalogueLayout;
	readonly faults: readonly FaultRule[];
}

export interface ScenarioIssue {
	readonly path: ReadonlyArray<PropertyKey>;
	readonly message: string;
}

export function formatIssuePath(path: ReadonlyArray<PropertyKey>): string {
	let text = "";
	for (const part of path) {
		text += typeof part === "number" ? `[${part}]` : text === "" ? String(part) : `.${String(part)}`;
	}
	return text === "" ? "(scenario)" : text;
}

const FAULT_KEYS = ["kind", "match", "on", "times", "probability", "message", "delay_ms", "count", "credits"];

/** The settings allowed where an unknown key was found, for a "did you mean" hint. */
function knownKeysAt(path: ReadonlyArray<PropertyKey>): readonly string[] {
	const [first, second] = path;
	if (first === undefined) return Object.keys(scenarioSchema.shape);
	if (first === "keys") return Object.keys(keysSchema.shape);
	if (first === "costs") return Object.keys(costsSchema.shape);
	if (first === "balances_mb") return Object.keys(balancesSchema.shape);
	if (first === "faults" && typeof second === "number") return FAULT_KEYS;
	return [];
}

function unknownKeyMessage(key: string, known: readonly string[]): string {
	const closest = didYouMean(key, known);
	const hint = closest ? `; did you mean ${closest}?` : "";
	return `unknown setting ${JSON.stringify(key)}${hint}`;
}

/**
 * Validate a scenario value; returns every problem of its shape. Cross-field rules (e.g. a fault
 * kind that cannot apply `on: account`) are checked once the shape is valid.
 */
export function checkScenario(value: unknown): { scenario: Scenario } | { issues: ScenarioIssue[] } {
	const result = scenarioSchema.safeParse(value ?? {});
	if (result.success) return { scenario: result.data };
	return {
		issues: result.error.issues.flatMap((issue): ScenarioIssue[] =>
			issue.code === "unrecognized_keys"
				? issue.keys.map((key) => ({
						path: [...issue.path, key],
						message: unknownKeyMessage(key, knownKeysAt(issue.path)),
					}))
				: [{ path: issue.path, message: issue.message }],
		),
	};
}

/** Validate and resolve a scenario given in code. Throws `UsageError` listing every problem. */
export function resolveScenario(value: ScenarioInput | undefined): EmulatorConfig {
	const checked = checkScenario(value);
	if ("issues" in checked) {
		const lines = checked.issues.map((issue) => `  ${formatIssuePath(issue.path)}: ${issue.message}`);
		throw new UsageError(`invalid emulator scenario:\n${lines.join("\n")}`);
	}
	return toConfig(checked.scenario);
}

export function toConfig(scenario: Scenario): EmulatorConfig {
	return {
		seed: scenario.seed,
		accountKey: scenario.keys.account,
		teamKey: scenario.keys.team ?? null,
		scraperKeys: [scenario.keys.scraper].flat(),
		browserKey: scenario.keys.browser,
		credits: scenario.credits,
		concurrency: scenario.concurrency,
		costs: {
			request: scenario.costs.request,
			requestDatacenter: scenario.costs.request_datacenter,
			browser: scenario.costs.browser,
			auto: scenario.costs.auto,
			autoUpgraded: scenario.costs.auto_upgraded,
		},
		latencyMs: scenario.latency_ms,
		timeoutMs: scenario.timeout_ms,
		timeoutStatus: scenario.timeout_status,
		taskTtlMs: scenario.task_ttl_ms,
		scheduleMinuteMs: scenario.schedule_minute_ms,
		slotExpiryMs: scenario.slot_expiry_ms,
		resetSeconds: scenario.reset_seconds,
		autoUpgrade: scenario.auto_upgrade.map(compilePattern),
		blockDatacenter: scenario.block_datacenter.map(compilePattern),
		browserOnly: scenario.browser_only.map(compilePattern),
		denyAll: scenario.deny_all.map(compilePattern),
		hasScraperAccess: scenario.has_scraper_access,
		hasBrowserAccess: scenario.has_browser_access,
		browserCredits: scenario.browser_credits,
		browserConcurrency: scenario.browser_concurrency,
		maxSessionLengthSeconds: scenario.max_session_length_seconds,
		browserCutSessions: scenario.browser_cut_sessions,
		browserReportedKey: scenario.browser_reported_key ?? scenario.keys.browser,
		browserCutAfterMs: scenario.browser_cut_after_ms,
		emailVerified: scenario.email_verified,
		balancesMb: { ...scenario.balances_mb },
		staticResidentialIps: scenario.static_residential_ips,
		catalogueLayout: scenario.catalogue_layout,
		faults: scenario.faults.map((fault, index) => ({
			index,
			kind: fault.kind,
			on: fault.on,
			match: fault.match === undefined ? null : compilePattern(fault.match),
			times: fault.times ?? null,
			probability: fault.probability,
			message: "message" in fault ? (fault.message ?? null) : null,
			delayMs: "delay_ms" in fault ? fault.delay_ms : 0,
			count: "count" in fault ? fault.count : 1,
			credits: "credits" in fault ? (fault.credits ?? 0) : 0,
		})),
	};
}
