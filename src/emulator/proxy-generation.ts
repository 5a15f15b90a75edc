/**
 * `GET /public/generate` (docs/service.md, "Proxy lists") and `GET /public/rotate_session`
 * (docs/service.md, "Account endpoints"). Targeting is encoded into the password as `_key-value` suffixes, in the
 * order country, city, region, isp, session, lifetime, adblock.
 */
import { type AccountData, GATEWAYS, type ProxyProduct, type ProxyProductCode } from "./account-data.js";
import type { Catalogue, ProductCatalogue } from "./catalogue.js";
import { pickOne, type Random, randomAlnum } from "./random.js";

export type AccountAnswer =
	| { readonly ok: true; readonly text: string }
	| { readonly ok: false; readonly status: number; readonly error: string };

export const GENERATE_PRODUCTS = ["rp", "rpc", "sdc", "mp", "static-residential"] as const;
type GenerateProduct = (typeof GENERATE_PRODUCTS)[number];

/** Proxies per call when `amount` is omitted. */
export const DEFAULT_AMOUNT = 10;
/** The spec's parameter range is 1–100; more is answered with 429 "Exceeded maximum proxy count". */
export const MAX_AMOUNT = 100;
/** Sticky session lifetime when `lifetime` is omitted, minutes (docs/service.md, "Proxy lists"). */
export const DEFAULT_LIFETIME_MINUTES = 30;
/** Length of generated session ids (the proxy password syntax allows 6–10 alphanumerics). */
const SESSION_ID_LENGTH = 8;

const INVALID_PRODUCT = "Invalid product for user";

/** Products of generate → the product whose credentials, balance and catalogue they use. */
const BACKING_PRODUCT: Readonly<Record<Exclude<GenerateProduct, "static-residential">, ProxyProductCode>> = {
	rp: "rp",
	rpc: "rpc",
	sdc: "dcp",
	mp: "mp",
};

interface Line {
	readonly username: string;
	readonly password: string;
	readonly host: string;
	readonly port: number;
}

function fail(status: number, error: string): AccountAnswer {
	return { ok: false, status, error };
}

function readBoolean(value: string | null, fallback: boolean): boolean | null {
	if (value === null || value === "") return fallback;
	if (value === "true" || value === "1") return true;
	if (value === "false" || value === "0") return false;
	return null;
}

export function generateProxies(
	query: URLSearchParams,
	account: AccountData,
	catalogue: Catalogue,
	random: Random,
): AccountAnswer {
	const rawProduct = query.get("product");
	if (!rawProduct) return fail(400, "Missing required parameter: product");
	// The docs spell it static-residential; the service's own client sends static_residential.
	const product = (rawProduct === "static_residential" ? "static-residential" : rawProduct) as GenerateProduct;
	if (!GENERATE_PRODUCTS.includes(product)) return fail(400, INVALID_PRODUCT);

	const format = query.get("format") ?? "1";
	if (format !== "1" && format !== "2" && format !== "3") return fail(400, "format must be 1, 2 or 3");
	const protocol = query.get("protocol") || "http";
	if (protocol !== "http" && protocol !== "socks5") return fail(400, "protocol must be http or socks5");
	const prepend = readBoolean(query.get("prepend_protocol"), true);
	if (prepend === null) return fail(400, "prepend_protocol must be true or false");
	const render = (line: Line) => renderLine(line, format, prepend ? `${protocol}://` : "");

	if (product === "static-residential") {
		// Static residential ignores every filter and returns all the account's proxies (docs/service.md, "Proxy lists").
		const { packages, endpoint, ports } = account.staticResidential;
		const ips = packages.flatMap((pkg) => pkg.ips);
		if (ips.length === 0) return fail(400, INVALID_PRODUCT);
		const port = protocol === "socks5" ? ports.socks5 : ports.http;
		const username = account.products.rp.username;
		const lines = ips.map((ip) =>
			render({ username, password: `${ip.ipInfo.ip}_${ip.password}`, host: endpoint, port }),
		);
		return { ok: true, text: `${lines.join("\n")}\n` };
	}

	const backing = BACKING_PRODUCT[product];
	const credentials = account.products[backing];
	if (credentials.balance_mb <= 0) return fail(400, INVALID_PRODUCT);

	const targeting = readTargeting(query, product, catalogue[backing]);
	if ("error" in targeting) return fail(targeting.status, targeting.error);

	const port = protocol === "socks5" ? GATEWAYS[backing].ports.socks5 : GATEWAYS[backing].ports.http;
	const lines: string[] = [];
	for (let i = 0; i < targeting.amount; i++) {
		const password = buildPassword(credentials, targeting, random);
		lines.push(render({ username: credentials.username, password, host: credentials.endpoint, port }));
	}
	return { ok: true, text: `${lines.join("\n")}\n` };
}

interface Targeting {
	readonly amount: number;
	readonly countries: readonly string[];
	readonly city: string | null;
	readonly region: string | null;
	readonly isp: string | null;
	readonly session: "sticky" | "hard" | null;
	readonly lifetime: number | null;
	readonly adblock: boolean;
}

function readTargeting(
	query: URLSearchParams,
	product: Exclude<GenerateProduct, "static-residential">,
	options: ProductCatalogue,
): Targeting | { status: number; error: string } {
	const rawAmount = query.get("amount");
	const amount = rawAmount === null || rawAmount === "" ? DEFAULT_AMOUNT : Number(rawAmount);
	if (!Number.isInteger(amount) || amount < 1)
		return { status: 400, error: "amount must be a whole number from 1 to 100" };
	if (amount > MAX_AMOUNT) return { status: 429, error: "Exceeded maximum proxy count" };

	const countries = (query.get("countries") ?? "")
		.split(",")
		.map((code) => code.trim().toUpperCase())
		.filter((code) => code !== "");
	for (const code of countries) {
		if (options.countries[code] === undefined)
			return { status: 400, error: `Unknown country ${code} for product ${product}` };
	}

	const cityId = query.get("city") || null;
	const regionId = query.get("region") || null;
	if ((cityId !== null || regionId !== null) && countries.length > 1) {
		return { status: 400, error: "city and region cannot be combined with more than one country" };
	}
	const country = countries[0] ?? null;
	let cityRegion: string | null = null;
	if (cityId !== null) {
		const city = options.cities.data.find((item) => item.id === cityId);
		if (!city)
			return { status: 400, error: `Unknown city ${cityId} for product ${product}: use an id from /public/settings` };
		if (country !== null && city.country_code !== country) {
			return { status: 400, error: `City ${cityId} is not in country ${country}` };
		}
		cityRegion = city.region_id;
	}
	if (regionId !== null) {
		const region = options.regions.data.find((item) => item.id === regionId);
		if (!region) {
			return {
				status: 400,
				error: `Unknown region ${regionId} for product ${product}: use an id from /public/settings`,
			};
		}
		if (country !== null && region.country_code !== country) {
			return { status: 400, error: `Region ${regionId} is not in country ${country}` };
		}
		if (cityRegion !== null && cityRegion !== regionId) {
			return { status: 400, error: `City ${cityId} is not in region ${regionId}` };
		}
	}

	const ispName = query.get("isp") || null;
	let isp: string | null = null;
	if (ispName !== null) {
		if (product === "rpc") return { status: 400, error: "isp targeting is not available for rpc" };
		const entry = Object.entries(options.isp).find(([name, item]) => name === ispName || item.value === ispName);
		if (!entry) return { status: 400, error: `Unknown isp ${ispName} for product ${product}` };
		if (country !== null && entry[1].countryCode !== country) {
			return { status: 400, error: `ISP ${ispName} is not in country ${country}` };
		}
		isp = entry[1].value;
	}

	const rawSession = query.get("session") || null;
	if (rawSession !== null && rawSession !== "sticky" && rawSession !== "hard") {
		return { status: 400, error: "session must be sticky or hard" };
	}
	const session = rawSession as Targeting["session"];
	const rawLifetime = query.get("lifetime");
	let lifetime: number | null = null;
	if (rawLifetime !== null && rawLifetime !== "") {
		lifetime = Number(rawLifetime);
		if (!Number.isInteger(lifetime) || lifetime < 1 || lifetime > 1440) {
			return { status: 400, error: "lifetime must be a whole number of minutes from 1 to 1440" };
		}
		if (session === "hard") return { status: 400, error: "lifetime is not available for hard sessions" };
		if (session === null) return { status: 400, error: "lifetime needs session=sticky" };
	}
	if (session === "sticky") lifetime ??= DEFAULT_LIFETIME_MINUTES;

	const adblock = readBoolean(query.get("adblock"), false);
	if (adblock === null) return { status: 400, error: "adblock must be true or false" };
	if (adblock && product === "rpc") return { status: 400, error: "adblock is not available for rpc" };

	return { amount, countries, city: cityId, region: regionId, isp, session, lifetime, adblock };
}

function buildPassword(credentials: ProxyProduct, targeting: Targeting, random: Random): string {
	let password = credentials.password;
	// Several countries: one is chosen at random for each line (docs/service.md, "Proxy lists").
	if (targeting.countries.length > 0) password += `_country-${pickOne(random, targeting.countries)}`;
	if (targeting.city !== null) password += `_city-${targeting.city}`;
	if (targeting.region !== null) password += `_region-${targeting.region}`;
	if (targeting.isp !== null) password += `_isp-${targeting.isp}`;
	if (targeting.session === "sticky") password += `_session-${randomAlnum(random, SESSION_ID_LENGTH)}`;
	if (targeting.session === "hard") password += `_hardsession-${randomAlnum(random, SESSION_ID_LENGTH)}`;
	if (targeting.lifetime !== null) password += `_lifetime-${targeting.lifetime}`;
	if (targeting.adblock) password += "_adblock-1";
	return password;
}

function renderLine(line: Line, format: "1" | "2" | "3", prefix: string): string {
	switch (format) {
		case "1":
			return `${prefix}${line.username}:${line.password}@${line.host}:${line.port}`;
		case "2":
			return `${prefix}${line.host}:${line.port}:${line.username}:${line.password}`;
		case "3":
			return `${prefix}${line.username}:${line.password}:${line.host}:${line.port}`;
		default: {
			const unreachable: never = format;
			throw new Error(`unknown format ${String(unreachable)}`);
		}
	}
}

export const ROTATE_PRODUCTS = ["rp", "rpc", "sdc", "mp"] as const;

/** `GET /public/rotate_session`: validates; the emulator has no real IPs to release. */
export function rotateSession(query: URLSearchParams): { status: number; body: Record<string, unknown> } {
	if (!query.get("sessionid")) return { status: 400, body: { error: "Session ID not provided", success: false } };
	const product = query.get("product") ?? "";
	if (!(ROTATE_PRODUCTS as readonly string[]).includes(product)) {
		return { status: 400, body: { error: "Invalid product", success: false } };
	}
	return { status: 200, body: { success: true, message: "Session reset successfully" } };
}
