import { describe, expect, test } from "vitest";
import {
	type AccountClient,
	classifyFailure,
	type GenerateProxiesParams,
	ServiceError,
	type UsagePeriod,
} from "../../src/api/index.js";
import { accountClientFor, rejectionOf, useEmulator, useRecordingProxy } from "./helpers.js";

const STATIC_HOST = "isp-2.evomi.com";

describe("account client against the emulator: records", () => {
	test("proxyData: credentials, balances and ports of rp/rpc/mp/dcp, static residential packages", async () => {
		const emulator = await useEmulator({ balances_mb: { rp: 12.5, dcp: 0 }, static_residential_ips: 3 });
		const data = await accountClientFor(emulator).proxyData();
		expect(data.success).toBe(true);
		expect(Object.keys(data.products).sort()).toEqual(["dcp", "mp", "rp", "rpc", "static_residential"]);
		const rp = data.products.rp as Record<string, unknown>;
		expect(rp).toMatchObject({ balance_mb: 12.5, endpoint: "premium-residential.evomi.com" });
		expect(rp.ports).toEqual({ http: 1000, socks5: 1002 });
		expect(rp.username).toMatch(/^\w+$/);
		expect(rp.password).toMatch(/^\w+$/);
		expect(data.products.rpc).toMatchObject({ endpoint: "core-residential.evomi.com", balance_mb: 133700.848432 });
		expect(data.products.mp).toMatchObject({ endpoint: "mp.evomi.com", ports: { http: 3000, socks5: 3002 } });
		expect(data.products.dcp).toMatchObject({ endpoint: "dcp.evomi.com", balance_mb: 0 });

		const staticResidential = data.products.static_residential;
		expect(staticResidential?.ports).toEqual({ http: 12345, socks5: 12346 });
		const packages = staticResidential?.packages as Array<{
			expiryDate: string;
			ips: Array<{ ipInfo: { ip: string } }>;
		}>;
		expect(packages.flatMap((pkg) => pkg.ips.map((ip) => ip.ipInfo.ip))).toEqual([
			"203.0.113.10",
			"203.0.113.11",
			"203.0.113.12",
		]);
		for (const pkg of packages) expect(Date.parse(pkg.expiryDate)).not.toBeNaN();
	});

	test("scraperAccess with access: the scraper key, credits, concurrency and endpoint", async () => {
		const emulator = await useEmulator({ credits: 847.5, concurrency: 7 });
		const access = await accountClientFor(emulator).scraperAccess();
		expect(access).toEqual({
			success: true,
			has_access: true,
			credits: 847.5,
			concurrency: 7,
			api_key: emulator.scraperKey,
			endpoint_url: emulator.scraperUrl,
		});
		expect(access.api_key).not.toBe(emulator.accountKey);
	});

	test("scraperAccess without access: zeros and a null key, endpoint still given", async () => {
		const emulator = await useEmulator({ has_scraper_access: false });
		const access = await accountClientFor(emulator).scraperAccess();
		expect(access).toEqual({
			success: true,
			has_access: false,
			credits: 0,
			concurrency: 0,
			api_key: null,
			endpoint_url: emulator.scraperUrl,
		});
	});

	test("browserAccess with and without access", async () => {
		const withAccess = await useEmulator({ browser_credits: 250, browser_concurrency: 2 });
		expect(await accountClientFor(withAccess).browserAccess()).toMatchObject({
			success: true,
			has_access: true,
			credits: 250,
			concurrency: 2,
			api_key: "emulator-browser-key",
			max_session_length_seconds: 60,
			endpoint_url: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+\/browser$/),
		});
		const without = await useEmulator({ has_browser_access: false });
		expect(await accountClientFor(without).browserAccess()).toMatchObject({
			has_access: false,
			credits: 0,
			concurrency: 0,
			api_key: null,
			max_session_length_seconds: 0,
		});
	});

	test("settings: the catalogue per product, with city and region ids that generate accepts", async () => {
		const emulator = await useEmulator();
		const client = accountClientFor(emulator);
		const settings = await client.settings();
		expect(settings.success).toBe(true);
		expect(Object.keys(settings.data).sort()).toEqual(["dcp", "mp", "rp", "rpc"]);
		const rp = settings.data.rp;
		expect(rp?.countries.US).toBe("United States");
		expect(rp?.continents?.europe).toMatchObject({ name: "Europe", countries: { Germany: "DE" } });
		expect(rp?.isp?.["Comcast Cable"]).toEqual({ value: "comcast.cable", countryCode: "US" });
		const newYork = rp?.cities?.data.find((city) => city.name === "New York");
		expect(newYork).toEqual({ id: "new.york", name: "New York", country_code: "US", region_id: "new.york" });
		const bavaria = rp?.regions?.data.find((region) => region.id === "bavaria");
		expect(bavaria).toEqual({ id: "bavaria", name: "Bavaria", country_code: "DE" });
		// rpc offers no ISP targeting; dcp no cities or regions.
		expect(settings.data.rpc?.isp).toEqual({});
		expect(settings.data.dcp?.cities?.data).toEqual([]);

		// The ids are exactly what generate takes and writes into the password.
		const munich = rp?.cities?.data.find((city) => city.name === "Munich");
		const generated = await client.generate({
			product: "rp",
			countries: ["DE"],
			city: munich?.id ?? "",
			region: munich?.region_id ?? "",
			amount: 1,
		});
		expect(generated.proxies[0]?.targeting).toEqual({ country: "DE", city: "munich", region: "bavaria" });
	});

	test.each([
		["24h", 24, "hour", "24 hours"],
		["3d", 3, "day", "3 days"],
		["7d", 7, "day", "7 days"],
	] as const)("usage %s: %i buckets, meta totals in MB/GB/TB", async (period, buckets, granularity, duration) => {
		const emulator = await useEmulator();
		const usage = await accountClientFor(emulator).usage({ product: "rpc", period });
		expect(usage.success).toBe(true);
		const [product, ...others] = usage.data.bandwidth.products;
		expect(others).toEqual([]);
		expect(product).toMatchObject({ name: "Core Residential", code: "rpc" });
		const labels = Object.keys(product?.stats ?? {});
		expect(labels).toHaveLength(buckets);
		for (const label of labels) expect(label).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/);
		const sum = Object.values(product?.stats ?? {}).reduce((total, bucket) => total + bucket.total, 0);
		expect(product?.totalBandwidth).toBeCloseTo(sum, 2);
		for (const bucket of Object.values(product?.stats ?? {})) {
			expect(bucket.total).toBeCloseTo((bucket.default ?? 0) + (bucket.extra ?? 0), 3);
		}
		expect(usage.meta).toMatchObject({
			period,
			product: "rpc",
			granularity,
			duration,
			bandwidth_unit: "MB",
			ownership_scope: "personal",
			total_bandwidth_mb: product?.totalBandwidth,
		});
		const mb = usage.meta.total_bandwidth_mb ?? Number.NaN;
		expect(usage.meta.total_bandwidth_gb).toBeCloseTo(mb / 1000, 9);
		expect(usage.meta.total_bandwidth_tb).toBeCloseTo(mb / 1_000_000, 12);
		expect(usage.data.requests).toBeDefined();
	});

	test("usage without a period is the 3d default; a team key reports the team identity", async () => {
		const emulator = await useEmulator({ keys: { team: "team-key-123" } });
		const personal = await accountClientFor(emulator).usage({ product: "sdc" });
		expect(personal.meta).toMatchObject({ period: "3d", product: "sdc", ownership_scope: "personal" });
		expect(Object.keys(personal.data.bandwidth.products[0]?.stats ?? {})).toHaveLength(3);
		const team = await accountClientFor(emulator, { accountKey: "team-key-123" }).usage({ product: "rp" });
		expect(team.meta).toMatchObject({ ownership_scope: "team", auth_type: "team_key" });
		expect(team.meta.proxy_username).not.toBe(personal.meta.proxy_username);
	});

	test("rotateSession: success message", async () => {
		const emulator = await useEmulator();
		expect(await accountClientFor(emulator).rotateSession({ sessionid: "abc123", product: "rp" })).toEqual({
			success: true,
			message: "Session reset successfully",
		});
	});
});

describe("account client: generate, every format × protocol × prefix", () => {
	const formats = [1, 2, 3] as const;
	const protocols = ["http", "socks5"] as const;
	const cases = formats.flatMap((format) =>
		protocols.flatMap((protocol) => [true, false].map((prepend) => ({ format, protocol, prepend }))),
	);

	test.each(cases)("format $format, $protocol, prepend_protocol $prepend", async ({ format, protocol, prepend }) => {
		const emulator = await useEmulator();
		const client = accountClientFor(emulator);
		const { rp } = (await client.proxyData()).products as Record<string, { username: string; password: string }>;
		const params: GenerateProxiesParams = {
			product: "rp",
			countries: ["US"],
			session: "sticky",
			amount: 2,
			format,
			protocol,
			...(prepend ? {} : { prepend_protocol: false }),
		};
		const generated = await client.generate(params);
		expect(generated.lines).toHaveLength(2);
		expect(generated.proxies).toHaveLength(2);
		for (const [index, proxy] of generated.proxies.entries()) {
			expect(proxy.line).toBe(generated.lines[index]);
			expect(proxy.line.startsWith(`${protocol}://`)).toBe(prepend);
			expect(proxy).toMatchObject({
				protocol: prepend ? protocol : null,
				host: "premium-residential.evomi.com",
				port: protocol === "socks5" ? 1002 : 1000,
				username: rp?.username,
			});
			expect(proxy.password.startsWith(`${rp?.password}_country-US_session-`)).toBe(true);
			expect(proxy.targeting).toEqual({
				country: "US",
				session: expect.stringMatching(/^[A-Za-z0-9]{8}$/),
				lifetime: "30",
			});
		}
	});

	test("hard sessions, several countries, isp and adblock are read back from the password", async () => {
		const emulator = await useEmulator();
		const generated = await accountClientFor(emulator).generate({
			product: "mp",
			countries: ["US", "DE"],
			session: "hard",
			adblock: true,
			amount: 5,
		});
		for (const proxy of generated.proxies) {
			expect(["US", "DE"]).toContain(proxy.targeting.country);
			expect(proxy.targeting.hardsession).toMatch(/^[A-Za-z0-9]{8}$/);
			expect(proxy.targeting.adblock).toBe("1");
			expect(proxy).toMatchObject({ host: "mp.evomi.com", port: 3000, protocol: "http" });
		}
		const isp = await accountClientFor(emulator).generate({ product: "rp", countries: ["US"], isp: "Comcast Cable" });
		expect(isp.proxies).toHaveLength(10);
		expect(isp.proxies[0]?.targeting).toEqual({ country: "US", isp: "comcast.cable" });
	});

	test("static-residential returns every IP of the account on the static gateway", async () => {
		const emulator = await useEmulator({ static_residential_ips: 3 });
		const generated = await accountClientFor(emulator).generate({
			product: "static-residential",
			protocol: "socks5",
			format: 2,
			countries: ["DE"],
		});
		expect(generated.proxies.map((proxy) => proxy.password.split("_")[0])).toEqual([
			"203.0.113.10",
			"203.0.113.11",
			"203.0.113.12",
		]);
		for (const proxy of generated.proxies) {
			expect(proxy).toMatchObject({ protocol: "socks5", host: STATIC_HOST, port: 12346, targeting: {} });
		}
	});
});

describe("account client: error statuses become ServiceError with the service's text", () => {
	test("usage 400 for an invalid product and an invalid period", async () => {
		const emulator = await useEmulator();
		const client = accountClientFor(emulator);
		const product = await rejectionOf(client.usage({ product: "static_residential" }), ServiceError);
		expect(product).toMatchObject({
			status: 400,
			errorType: "Invalid or missing product: use one of rp, rpc, dcp, mp, sdc",
			endpoint: "GET /public/usage",
		});
		expect(product.message).toBe(
			"GET /public/usage answered 400 Invalid or missing product: use one of rp, rpc, dcp, mp, sdc",
		);
		const period = await rejectionOf(client.usage({ product: "rp", period: "30d" as UsagePeriod }), ServiceError);
		expect(period).toMatchObject({ status: 400, errorType: "Invalid period: use one of 24h, 3d, 7d" });
		expect(classifyFailure(period)).toEqual({ action: "fail", kind: "http_400" });
	});

	test("usage 403 when the e-mail address is not verified (personal key)", async () => {
		const emulator = await useEmulator({ email_verified: false });
		const error = await rejectionOf(accountClientFor(emulator).usage({ product: "rp" }), ServiceError);
		expect(error.status).toBe(403);
		expect(error.errorType).toContain("Email verification required");
		expect(classifyFailure(error)).toEqual({ action: "abort", kind: "forbidden" });
	});

	test("generate 400 Invalid product for user: unknown product, and a product without balance", async () => {
		const emulator = await useEmulator({ balances_mb: { rpc: 0 } });
		const client = accountClientFor(emulator);
		for (const product of ["dcp", "rpc"]) {
			const error = await rejectionOf(client.generate({ product }), ServiceError);
			expect(error).toMatchObject({
				status: 400,
				errorType: "Invalid product for user",
				endpoint: "GET /public/generate",
			});
		}
	});

	test("generate 429 Exceeded maximum proxy count", async () => {
		const emulator = await useEmulator();
		const error = await rejectionOf(accountClientFor(emulator).generate({ product: "rp", amount: 101 }), ServiceError);
		expect(error).toMatchObject({ status: 429, errorType: "Exceeded maximum proxy count" });
		expect(error.resetSeconds).toBeUndefined();
	});

	test("rotateSession 400: Invalid product, Session ID not provided", async () => {
		const emulator = await useEmulator();
		const client = accountClientFor(emulator);
		const product = await rejectionOf(
			client.rotateSession({ sessionid: "abc123", product: "static-residential" }),
			ServiceError,
		);
		expect(product).toMatchObject({ status: 400, errorType: "Invalid product" });
		const session = await rejectionOf(client.rotateSession({ sessionid: "", product: "rp" }), ServiceError);
		expect(session).toMatchObject({ status: 400, errorType: "Session ID not provided" });
	});

	const everyCall: Array<[string, (client: AccountClient) => Promise<unknown>]> = [
		["GET /public", (client) => client.proxyData()],
		["GET /public/scraper", (client) => client.scraperAccess()],
		["GET /public/browser", (client) => client.browserAccess()],
		["GET /public/settings", (client) => client.settings()],
		["GET /public/usage", (client) => client.usage({ product: "rp" })],
		["GET /public/generate", (client) => client.generate({ product: "rp" })],
		["GET /public/rotate_session", (client) => client.rotateSession({ sessionid: "abc123", product: "rp" })],
	];

	test.each(everyCall)("%s with a wrong key: 401, abort", async (endpoint, call) => {
		const emulator = await useEmulator();
		const error = await rejectionOf(call(accountClientFor(emulator, { accountKey: "wrong-key-000" })), ServiceError);
		expect(error).toMatchObject({ status: 401, errorType: "Invalid API key", endpoint });
		expect(classifyFailure(error)).toEqual({ action: "abort", kind: "unauthorized" });
		const [entry] = emulator.ledger.entries;
		expect(entry).toMatchObject({ status: 401, keyPlace: "header", key: null });
	});

	test("the scraper key is not an account key: 401", async () => {
		const emulator = await useEmulator();
		const client = accountClientFor(emulator, { accountKey: emulator.scraperKey });
		expect((await rejectionOf(client.proxyData(), ServiceError)).status).toBe(401);
	});

	test.each(everyCall)("%s with an account fault: 500 ServiceError, retried", async (endpoint, call) => {
		const emulator = await useEmulator({
			faults: [{ kind: "server_error", on: "account", message: "Failed to load account data" }],
		});
		const error = await rejectionOf(call(accountClientFor(emulator)), ServiceError);
		expect(error).toMatchObject({ status: 500, errorType: "Failed to load account data", endpoint });
		expect(classifyFailure(error)).toEqual({ action: "retry", kind: "http_500", serviceDown: true });
	});

	test("502 and 503 account faults are ServiceErrors too, matched by path", async () => {
		const emulator = await useEmulator({
			faults: [
				{ kind: "bad_gateway", on: "account", match: "/public/settings" },
				{ kind: "unavailable", on: "account", match: "/^\\/public\\/browser$/" },
			],
		});
		const client = accountClientFor(emulator);
		expect(await rejectionOf(client.settings(), ServiceError)).toMatchObject({ status: 502, errorType: "Bad gateway" });
		expect(await rejectionOf(client.browserAccess(), ServiceError)).toMatchObject({
			status: 503,
			errorType: "Service unavailable",
		});
		expect((await client.scraperAccess()).success).toBe(true);
	});
});

describe("account client: the key travels in the x-apikey header only", () => {
	test("every endpoint: header x-apikey, no key in any URL (recorded on the wire and in the ledger)", async () => {
		const emulator = await useEmulator();
		const proxy = await useRecordingProxy(emulator.apiUrl);
		const client = accountClientFor({ apiUrl: proxy.url, accountKey: emulator.accountKey });
		await client.proxyData();
		await client.scraperAccess();
		await client.browserAccess();
		await client.settings();
		await client.usage({ product: "rp", period: "24h" });
		await client.generate({ product: "rp", amount: 1, countries: ["US"] });
		await client.rotateSession({ sessionid: "abc123", product: "rp" });

		expect(proxy.requests.map((request) => request.url.split("?")[0])).toEqual([
			"/public",
			"/public/scraper",
			"/public/browser",
			"/public/settings",
			"/public/usage",
			"/public/generate",
			"/public/rotate_session",
		]);
		for (const request of proxy.requests) {
			expect(request.method).toBe("GET");
			expect(request.headers["x-apikey"]).toBe(emulator.accountKey);
			expect(request.url).not.toContain(emulator.accountKey);
			expect(new URL(request.url, proxy.url).searchParams.has("apikey")).toBe(false);
		}
		expect(proxy.requests[4]?.url).toBe("/public/usage?product=rp&period=24h");

		expect(emulator.ledger.entries).toHaveLength(7);
		for (const entry of emulator.ledger.entries) {
			expect(entry).toMatchObject({ status: 200, keyPlace: "header", key: emulator.accountKey });
			expect(entry.path).not.toContain(emulator.accountKey);
		}
	});
});
