import { describe, expect, test } from "vitest";
import { account, call, useEmulator } from "./helpers.js";

interface CatalogueShape {
	countries: Record<string, string>;
	cities: { data: Array<{ id: string; name: string; country_code: string; region_id: string }> };
	regions: { data: Array<{ id: string; name: string; country_code: string }> };
	isp: Record<string, { value: string; countryCode: string }>;
	continents: Record<string, { name: string; countries: Record<string, string> }>;
}

describe("authentication (docs/service.md, Addresses and keys)", () => {
	test("x-apikey header or apikey query; anything else 401 {success:false, error}", async () => {
		const emulator = await useEmulator();
		const viaHeader = await account(emulator, "/public");
		const viaQuery = await call(`${emulator.apiUrl}/public?apikey=${emulator.accountKey}`);
		const missing = await call(`${emulator.apiUrl}/public`);
		const scraperKey = await account(emulator, "/public", {}, emulator.scraperKey);
		const wrongHeader = await call(`${emulator.apiUrl}/public/scraper`, {
			headers: { "x-api-key": emulator.accountKey },
		});
		expect([viaHeader.status, viaQuery.status]).toEqual([200, 200]);
		for (const refused of [missing, scraperKey, wrongHeader]) {
			expect(refused.status).toBe(401);
			expect(refused.json).toEqual({ success: false, error: "Invalid API key" });
		}
		expect(emulator.ledger.entries.map((entry) => entry.keyPlace)).toEqual(["header", "query", null, "header", null]);
	});

	test("every account path needs the key", async () => {
		const emulator = await useEmulator();
		for (const path of ["/public", "/public/scraper", "/public/browser", "/public/settings", "/public/usage"]) {
			expect((await call(`${emulator.apiUrl}${path}`)).status).toBe(401);
		}
		expect((await call(`${emulator.apiUrl}/public/generate?product=rp`)).status).toBe(401);
		expect((await call(`${emulator.apiUrl}/public/rotate_session?sessionid=a&product=rp`)).status).toBe(401);
	});

	test("unknown /public paths are 404 and non-GET is 405", async () => {
		const emulator = await useEmulator();
		expect((await account(emulator, "/public/nothing")).status).toBe(404);
		const post = await call(`${emulator.apiUrl}/public`, {
			method: "POST",
			headers: { "x-apikey": emulator.accountKey },
		});
		expect(post.status).toBe(405);
	});
});

describe("GET /public (proxy data)", () => {
	test("products rp, rpc, mp, dcp with credentials, balances and ports; static residential packages", async () => {
		const emulator = await useEmulator({ scenario: { balances_mb: { rp: 12.5 }, static_residential_ips: 3 } });
		const answer = await account(emulator, "/public");
		expect(answer.status).toBe(200);
		const products = answer.json.products as Record<string, Record<string, unknown>>;
		expect(Object.keys(products).sort()).toEqual(["dcp", "mp", "rp", "rpc", "static_residential"]);
		expect(products.rp).toMatchObject({
			balance_mb: 12.5,
			endpoint: "premium-residential.evomi.com",
			ports: { http: 1000, socks5: 1002 },
		});
		expect(products.rpc?.balance_mb).toBe(133700.848432);
		expect(products.mp?.ports).toEqual({ http: 3000, socks5: 3002 });
		expect(products.dcp?.ports).toEqual({ http: 2000, socks5: 2002 });
		for (const code of ["rp", "rpc", "mp", "dcp"]) {
			expect(products[code]?.username).toMatch(/^[a-z0-9]+$/);
			expect(products[code]?.password).toMatch(/^[a-z0-9]{12}$/);
		}
		expect(products.rpc?.username).not.toBe(products.rp?.username);
		const staticResidential = products.static_residential as {
			packages: Array<{ expiryDate: string; ips: Array<{ ipInfo: { ip: string }; password: string }> }>;
			ports: unknown;
		};
		expect(staticResidential.ports).toEqual({ http: 12345, socks5: 12346 });
		expect(staticResidential.packages.map((pkg) => pkg.ips.map((ip) => ip.ipInfo.ip))).toEqual([
			["203.0.113.10", "203.0.113.11"],
			["203.0.113.12"],
		]);
		expect(Date.parse(staticResidential.packages[0]?.expiryDate ?? "")).toBeGreaterThan(Date.now());
		expect(staticResidential.packages[0]?.ips[0]?.password).toMatch(/^[a-z0-9]{10}$/);
	});

	test("the same seed gives the same credentials", async () => {
		const a = await useEmulator({ scenario: { seed: 5 } });
		const b = await useEmulator({ scenario: { seed: 5 } });
		const c = await useEmulator({ scenario: { seed: 6 } });
		const [pa, pb, pc] = await Promise.all([a, b, c].map((emulator) => account(emulator, "/public")));
		expect(pa?.json).toEqual(pb?.json);
		expect(pa?.json).not.toEqual(pc?.json);
	});
});

describe("scraper and browser access", () => {
	test("with access", async () => {
		const emulator = await useEmulator({ scenario: { credits: 847.5, concurrency: 5 } });
		const scraper = await account(emulator, "/public/scraper");
		expect(scraper.json).toEqual({
			success: true,
			has_access: true,
			credits: 847.5,
			concurrency: 5,
			api_key: emulator.scraperKey,
			endpoint_url: emulator.scraperUrl,
		});
		const browser = await account(emulator, "/public/browser");
		expect(browser.json).toMatchObject({
			success: true,
			has_access: true,
			credits: 1000,
			concurrency: 3,
			api_key: "emulator-browser-key",
			max_session_length_seconds: 60,
		});
		expect(browser.json.endpoint_url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/browser$/);
	});

	test("without access: zeros and null keys, endpoint still returned", async () => {
		const emulator = await useEmulator({ scenario: { has_scraper_access: false, has_browser_access: false } });
		const scraper = await account(emulator, "/public/scraper");
		expect(scraper.json).toEqual({
			success: true,
			has_access: false,
			credits: 0,
			concurrency: 0,
			api_key: null,
			endpoint_url: emulator.scraperUrl,
		});
		const browser = await account(emulator, "/public/browser");
		expect(browser.json).toMatchObject({
			success: true,
			has_access: false,
			credits: 0,
			concurrency: 0,
			api_key: null,
			max_session_length_seconds: 0,
		});
	});

	test("credits shown follow the balance as fetches are charged", async () => {
		const emulator = await useEmulator({ scenario: { credits: 30 } });
		emulator.setCredits(12);
		expect((await account(emulator, "/public/scraper")).json.credits).toBe(12);
	});
});

describe("GET /public/settings", () => {
	test("catalogue for rp, rpc, mp, dcp with the documented item layouts", async () => {
		const emulator = await useEmulator();
		const answer = await account(emulator, "/public/settings");
		expect(answer.json.success).toBe(true);
		const data = answer.json.data as Record<string, CatalogueShape>;
		expect(Object.keys(data).sort()).toEqual(["dcp", "mp", "rp", "rpc"]);
		const rp = data.rp as CatalogueShape;
		expect(rp.countries).toMatchObject({
			US: "United States",
			DE: "Germany",
			GB: "United Kingdom",
			FR: "France",
			IN: "India",
		});
		expect(rp.cities.data).toContainEqual({
			id: "new.york",
			name: "New York",
			country_code: "US",
			region_id: "new.york",
		});
		expect(rp.cities.data).toContainEqual({
			id: "frankfurt.am.main",
			name: "Frankfurt am Main",
			country_code: "DE",
			region_id: "hesse",
		});
		expect(rp.regions.data).toContainEqual({ id: "california", name: "California", country_code: "US" });
		expect(rp.isp["Comcast Cable"]).toEqual({ value: "comcast.cable", countryCode: "US" });
		expect(rp.continents.europe?.countries).toMatchObject({ Germany: "DE", France: "FR" });
		expect(rp.continents["north.america"]).toEqual({ name: "North America", countries: { "United States": "US" } });
		// every city's region exists
		const regionIds = new Set(rp.regions.data.map((region) => region.id));
		expect(rp.cities.data.every((city) => regionIds.has(city.region_id))).toBe(true);
		// several cities and ISPs per country
		expect(rp.cities.data.filter((city) => city.country_code === "US").length).toBeGreaterThanOrEqual(5);
		expect(data.rpc?.isp).toEqual({});
		expect(data.dcp?.cities.data).toEqual([]);
		expect(Object.keys(data.dcp?.countries ?? {})).toEqual(["US", "DE", "GB", "FR", "NL"]);
	});
});

describe("GET /public/usage", () => {
	const NOW = Date.UTC(2026, 4, 26, 13, 45, 10);

	test("24h: 24 hourly buckets ending at the current hour, meta math", async () => {
		const emulator = await useEmulator({ clock: () => NOW });
		const answer = await account(emulator, "/public/usage", { period: "24h", product: "rp" });
		expect(answer.status).toBe(200);
		const data = answer.json.data as {
			bandwidth: {
				products: Array<{ name: string; code: string; totalBandwidth: number; stats: Record<string, unknown> }>;
			};
			requests: { stats: Record<string, { total: number; successful: number; failed: number }> };
		};
		expect(data.bandwidth.products).toHaveLength(1);
		const [product] = data.bandwidth.products;
		expect(product?.code).toBe("rp");
		expect(product?.name).toBe("Premium Residential");
		const labels = Object.keys(product?.stats ?? {});
		expect(labels).toHaveLength(24);
		expect(labels[0]).toBe("2026-05-25 14:00");
		expect(labels[23]).toBe("2026-05-26 13:00");
		const buckets = Object.values(product?.stats ?? {}) as Array<{ default: number; extra: number; total: number }>;
		expect(buckets.every((bucket) => bucket.extra === 0 && bucket.total === bucket.default)).toBe(true);
		const sum = Math.round(buckets.reduce((total, bucket) => total + bucket.total, 0) * 1000) / 1000;
		expect(product?.totalBandwidth).toBe(sum);
		const meta = answer.json.meta as Record<string, unknown>;
		expect(meta).toEqual({
			period: "24h",
			product: "rp",
			duration: "24 hours",
			granularity: "hour",
			ownership_scope: "personal",
			auth_type: "personal_key",
			proxy_username: expect.stringMatching(/^emu/),
			bandwidth_unit: "MB",
			total_bandwidth_mb: sum,
			total_bandwidth_gb: sum / 1000,
			total_bandwidth_tb: sum / 1_000_000,
		});
		expect(Object.keys(data.requests.stats)).toHaveLength(12);
		for (const hour of Object.values(data.requests.stats)) expect(hour.successful + hour.failed).toBe(hour.total);
	});

	test("3d is the default with daily buckets; 7d has 7; rpc buckets split default and extra", async () => {
		const emulator = await useEmulator({ clock: () => NOW });
		const threeDays = await account(emulator, "/public/usage", { product: "rpc" });
		const meta = threeDays.json.meta as Record<string, unknown>;
		expect(meta).toMatchObject({ period: "3d", duration: "3 days", granularity: "day", product: "rpc" });
		const stats = (
			threeDays.json.data as { bandwidth: { products: Array<{ stats: Record<string, Record<string, number>> }> } }
		).bandwidth.products[0]?.stats as Record<string, { default: number; extra: number; total: number }>;
		expect(Object.keys(stats)).toEqual(["2026-05-24 00:00", "2026-05-25 00:00", "2026-05-26 00:00"]);
		for (const bucket of Object.values(stats)) {
			expect(bucket.total).toBeCloseTo(bucket.default + bucket.extra, 6);
		}
		expect(Object.values(stats).some((bucket) => bucket.extra > 0)).toBe(true);
		const week = await account(emulator, "/public/usage", { product: "sdc", period: "7d" });
		const weekProduct = (week.json.data as { bandwidth: { products: Array<{ stats: object; name: string }> } })
			.bandwidth.products[0];
		expect(Object.keys(weekProduct?.stats ?? {})).toHaveLength(7);
		expect((week.json.meta as { granularity: string }).granularity).toBe("day");
	});

	test("numbers are deterministic from the seed", async () => {
		const a = await useEmulator({ scenario: { seed: 3 }, clock: () => NOW });
		const b = await useEmulator({ scenario: { seed: 3 }, clock: () => NOW });
		const c = await useEmulator({ scenario: { seed: 4 }, clock: () => NOW });
		const query = { product: "mp", period: "7d" };
		const [ua, ub, uc] = await Promise.all([a, b, c].map((emulator) => account(emulator, "/public/usage", query)));
		expect(ua?.json.data).toEqual(ub?.json.data);
		expect(ua?.json.data).not.toEqual(uc?.json.data);
	});

	test("product is required and must be one of rp, rpc, dcp, mp, sdc; period must be 24h, 3d or 7d", async () => {
		const emulator = await useEmulator();
		for (const query of [{}, { product: "static_residential" }, { product: "rp", period: "1d" }] as Array<
			Record<string, string>
		>) {
			const answer = await account(emulator, "/public/usage", query);
			expect(answer.status).toBe(400);
			expect(answer.json.success).toBe(false);
			expect(typeof answer.json.error).toBe("string");
		}
		expect((await account(emulator, "/public/usage", { product: "dcp" })).status).toBe(200);
	});

	test("403 email verification for a personal key; a team key reports the team", async () => {
		const emulator = await useEmulator({ scenario: { email_verified: false, keys: { team: "team-key-1" } } });
		const personal = await account(emulator, "/public/usage", { product: "rp" });
		expect(personal.status).toBe(403);
		expect(personal.json.success).toBe(false);
		expect(personal.json.error).toContain("Email verification required");
		const team = await account(emulator, "/public/usage", { product: "rp" }, "team-key-1");
		expect(team.status).toBe(200);
		expect(team.json.meta).toMatchObject({ ownership_scope: "team", auth_type: "team_key" });
		expect((team.json.meta as { proxy_username: string }).proxy_username).toMatch(/^emuteam/);
	});
});

describe("GET /public/rotate_session", () => {
	test("success and its 400s", async () => {
		const emulator = await useEmulator();
		const ok = await account(emulator, "/public/rotate_session", { sessionid: "abc123", product: "rpc" });
		expect(ok.status).toBe(200);
		expect(ok.json).toEqual({ success: true, message: "Session reset successfully" });
		const noSession = await account(emulator, "/public/rotate_session", { product: "rp" });
		expect(noSession.status).toBe(400);
		expect(noSession.json).toEqual({ error: "Session ID not provided", success: false });
		const badProduct = await account(emulator, "/public/rotate_session", {
			sessionid: "abc123",
			product: "static_residential",
		});
		expect(badProduct.status).toBe(400);
		expect(badProduct.json).toEqual({ error: "Invalid product", success: false });
	});
});
