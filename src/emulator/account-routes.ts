/**
 * The account endpoints under `/public` (docs/service.md, "Account endpoints" and "Addresses and keys"), browser profiles
 * included. The key comes from the `x-apikey` header or the `apikey` query parameter; scraper and
 * browser keys are refused.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { listProfiles, orderProfile } from "./browser-profiles.js";
import { type Catalogue, type CatalogueLayout, groupedCatalogue } from "./catalogue.js";
import type { EmulatorContext } from "./context.js";
import { dropConnection, pause, sendBody, sendJson } from "./http-io.js";
import type { KeyPlace, LedgerEndpoint, LedgerEntry } from "./ledger.js";
import { generateProxies, rotateSession } from "./proxy-generation.js";
import { buildUsage, type KeyKind } from "./usage.js";

const ROUTES: Readonly<Record<string, LedgerEndpoint>> = {
	"/public": "account/proxy-data",
	"/public/scraper": "account/scraper",
	"/public/browser": "account/browser",
	"/public/settings": "account/settings",
	"/public/usage": "account/usage",
	"/public/generate": "account/generate",
	"/public/rotate_session": "account/rotate-session",
	"/public/profiles": "account/profiles",
	"/public/order-profile": "account/order-profile",
};

/** Every account endpoint reads with GET except ordering a browser profile (the service's own client POSTs it). */
function methodOf(endpoint: LedgerEndpoint): "GET" | "POST" {
	return endpoint === "account/order-profile" ? "POST" : "GET";
}

/** `path` starts with `/public`. */
export async function handleAccountRequest(
	ctx: EmulatorContext,
	req: IncomingMessage,
	res: ServerResponse,
	path: string,
	query: URLSearchParams,
): Promise<void> {
	const method = req.method ?? "GET";
	const endpoint = ROUTES[path];
	const entry = ctx.ledger.open(endpoint ?? "unknown", method, path);
	const reply = (status: number, body: unknown) => {
		ctx.ledger.finish(entry, status);
		sendJson(res, status, body);
	};
	if (endpoint === undefined) {
		reply(404, { error: `Not found: ${path}`, success: false });
		return;
	}
	const allowed = methodOf(endpoint);
	if (method !== allowed) {
		ctx.ledger.finish(entry, 405);
		sendJson(res, 405, { error: `Method ${method} not allowed; use ${allowed}`, success: false }, { allow: allowed });
		return;
	}
	const keyKind = authenticate(ctx, req, query, entry);
	if (keyKind === null) {
		reply(401, { success: false, error: "Invalid API key" });
		return;
	}
	const fault = ctx.faults.pick("account", "answer", path);
	if (fault) {
		entry.fault = fault.kind;
		switch (fault.kind) {
			case "unavailable":
				reply(503, { error: "Service unavailable", success: false });
				return;
			case "bad_gateway":
				reply(502, { error: "Bad gateway", success: false });
				return;
			case "server_error":
				reply(500, { error: fault.message ?? "Internal server error", success: false });
				return;
			case "rate_limit":
				reply(429, { error: "Too many requests", success: false });
				return;
			case "drop_connection":
				ctx.ledger.finish(entry, 0);
				dropConnection(req, res);
				return;
			case "slow":
				await pause(fault.delayMs, ctx.signal);
				break;
			case "scraping_error":
			case "dns_failure":
				// Rejected by the scenario schema for `on: account`; nothing to do.
				break;
			default: {
				const unreachable: never = fault.kind;
				throw new Error(`unknown fault ${String(unreachable)}`);
			}
		}
	}
	switch (endpoint) {
		case "account/proxy-data":
			reply(200, proxyData(ctx));
			return;
		case "account/scraper":
			reply(200, scraperAccess(ctx));
			return;
		case "account/browser":
			reply(200, browserAccess(ctx));
			return;
		case "account/settings":
			ctx.ledger.finish(entry, 200);
			sendBody(res, 200, settingsJson(ctx.catalogue, ctx.config.catalogueLayout), "application/json; charset=utf-8");
			return;
		case "account/usage": {
			// Email verification concerns personal keys only (docs/service.md, "Account endpoints").
			if (keyKind === "personal" && !ctx.config.emailVerified) {
				reply(403, { error: "Email verification required: verify your account's e-mail address", success: false });
				return;
			}
			const usage = buildUsage(query, {
				seed: ctx.config.seed,
				account: ctx.account,
				keyKind,
				nowMs: ctx.clock(),
			});
			reply(usage.status, usage.body);
			return;
		}
		case "account/generate": {
			const generated = generateProxies(query, ctx.account, ctx.catalogue, ctx.generationRandom);
			if (!generated.ok) {
				reply(generated.status, { error: generated.error, success: false });
				return;
			}
			ctx.ledger.finish(entry, 200);
			sendBody(res, 200, generated.text, "text/plain; charset=utf-8");
			return;
		}
		case "account/rotate-session": {
			const rotated = rotateSession(query);
			reply(rotated.status, rotated.body);
			return;
		}
		case "account/profiles": {
			const listed = listProfiles(ctx.saved);
			reply(listed.status, listed.body);
			return;
		}
		case "account/order-profile": {
			const ordered = orderProfile(query, ctx.saved, ctx.account, ctx.clock());
			reply(ordered.status, ordered.body);
			return;
		}
		default:
			reply(404, { error: `Not found: ${path}`, success: false });
	}
}

function authenticate(
	ctx: EmulatorContext,
	req: IncomingMessage,
	query: URLSearchParams,
	entry: LedgerEntry,
): KeyKind | null {
	const fromHeader = req.headers["x-apikey"];
	const fromQuery = query.get("apikey");
	let place: KeyPlace | null = null;
	let key: string | undefined;
	if (typeof fromHeader === "string" && fromHeader !== "") {
		place = "header";
		key = fromHeader;
	} else if (fromQuery) {
		place = "query";
		key = fromQuery;
	}
	entry.keyPlace = place;
	const kind: KeyKind | null =
		key === ctx.config.accountKey ? "personal" : key !== undefined && key === ctx.config.teamKey ? "team" : null;
	if (kind !== null) entry.key = key ?? null;
	return kind;
}

function proxyData(ctx: EmulatorContext) {
	const { products, staticResidential } = ctx.account;
	return {
		success: true,
		products: {
			...products,
			static_residential: { packages: staticResidential.packages, ports: staticResidential.ports },
		},
	};
}

function scraperAccess(ctx: EmulatorContext) {
	const endpointUrl = ctx.urls.scraperUrl;
	if (!ctx.config.hasScraperAccess) {
		return { success: true, has_access: false, credits: 0, concurrency: 0, api_key: null, endpoint_url: endpointUrl };
	}
	return {
		success: true,
		has_access: true,
		credits: ctx.credits.balance,
		concurrency: ctx.slots.limit,
		api_key: ctx.config.scraperKeys[0] ?? null,
		endpoint_url: endpointUrl,
	};
}

function browserAccess(ctx: EmulatorContext) {
	const endpointUrl = ctx.urls.browserUrl;
	if (!ctx.config.hasBrowserAccess) {
		return {
			success: true,
			has_access: false,
			credits: 0,
			concurrency: 0,
			api_key: null,
			max_session_length_seconds: 0,
			endpoint_url: endpointUrl,
		};
	}
	return {
		success: true,
		has_access: true,
		credits: Math.max(0, ctx.config.browserCredits - ctx.browser.stats().creditsUsed),
		concurrency: ctx.config.browserConcurrency,
		api_key: ctx.config.browserReportedKey,
		max_session_length_seconds: ctx.config.maxSessionLengthSeconds,
		endpoint_url: endpointUrl,
	};
}

const settingsCache = new WeakMap<Catalogue, Map<CatalogueLayout, string>>();

/** The catalogue never changes during a run, so it is serialized once per layout. */
function settingsJson(catalogue: Catalogue, layout: CatalogueLayout): string {
	const cached = settingsCache.get(catalogue) ?? new Map<CatalogueLayout, string>();
	settingsCache.set(catalogue, cached);
	let json = cached.get(layout);
	if (json === undefined) {
		const data = layout === "grouped" ? groupedCatalogue(catalogue) : catalogue;
		json = JSON.stringify({ success: true, data });
		cached.set(layout, json);
	}
	return json;
}
