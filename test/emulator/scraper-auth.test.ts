import { describe, expect, test } from "vitest";
import { PROBLEMS } from "../../src/common/index.js";
import { DEFAULT_ACCOUNT_KEY, DEFAULT_SCRAPER_KEY } from "../../src/emulator/index.js";
import { call, savedCall, scrapeGet, scrapePost, useDemoSite, useEmulator } from "./helpers.js";

describe("scraper key places (docs/service.md, Addresses and keys)", () => {
	test("the default keys are the documented constants", async () => {
		const emulator = await useEmulator();
		expect(emulator.scraperKey).toBe(DEFAULT_SCRAPER_KEY);
		expect(emulator.accountKey).toBe(DEFAULT_ACCOUNT_KEY);
		expect(emulator.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
		expect(emulator.scraperUrl).toBe(`${emulator.apiUrl}/api/v1`);
	});

	test("the key is accepted in the query, the x-api-key header and the POST body", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const url = `${site.url}/product/1`;
		const viaQuery = await call(
			`${emulator.scraperUrl}/scraper/realtime?${new URLSearchParams({ url, api_key: emulator.scraperKey })}`,
		);
		const viaHeader = await scrapeGet(emulator, { url });
		const viaBody = await scrapePost(emulator, { url, api_key: emulator.scraperKey }, null);
		expect([viaQuery.status, viaHeader.status, viaBody.status]).toEqual([200, 200, 200]);
		expect(emulator.ledger.byEndpoint("realtime").map((entry) => entry.keyPlace)).toEqual(["query", "header", "body"]);
	});

	test("query beats header beats body: the first place holding a key decides", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const url = `${site.url}/product/1`;
		const base = `${emulator.scraperUrl}/scraper/realtime`;
		// A wrong key in the query is not rescued by a right one in the header.
		const queryWins = await call(`${base}?${new URLSearchParams({ url, api_key: "wrong" })}`, {
			headers: { "x-api-key": emulator.scraperKey },
		});
		expect(queryWins.status).toBe(401);
		// A wrong header is not rescued by a right body key.
		const headerWins = await scrapePost(emulator, { url, api_key: emulator.scraperKey }, "wrong");
		expect(headerWins.status).toBe(401);
		// A right query key wins over a wrong header.
		const rightQuery = await call(`${base}?${new URLSearchParams({ url, api_key: emulator.scraperKey })}`, {
			headers: { "x-api-key": "wrong" },
		});
		expect(rightQuery.status).toBe(200);
		expect(emulator.ledger.byEndpoint("realtime").map((entry) => [entry.keyPlace, entry.status])).toEqual([
			["query", 401],
			["header", 401],
			["query", 200],
		]);
	});

	test("x-apikey (the account header) is not accepted by the scraper: 401 error record", async () => {
		const emulator = await useEmulator();
		const answer = await call(`${emulator.scraperUrl}/scraper/health`, {
			headers: { "x-apikey": emulator.scraperKey },
		});
		expect(answer.status).toBe(401);
		expect(answer.json).toMatchObject({ success: false, error: "Invalid API key" });
		expect(typeof answer.json.message).toBe("string");
		expect(Date.parse(answer.json.timestamp as string)).not.toBeNaN();
		expect(emulator.ledger.entries[0]).toMatchObject({ endpoint: "health", keyPlace: null, status: 401 });
	});

	test("the account key is not a scraper key, and a missing key is 401", async () => {
		const emulator = await useEmulator();
		const withAccountKey = await call(`${emulator.scraperUrl}/scraper/health`, {
			headers: { "x-api-key": emulator.accountKey },
		});
		const withoutKey = await call(`${emulator.scraperUrl}/scraper/health`);
		expect(withAccountKey.status).toBe(401);
		expect(withoutKey.status).toBe(401);
		expect(withoutKey.json.error).toBe("Invalid API key");
	});

	test("without scraper access every scraper key is refused", async () => {
		const emulator = await useEmulator({ scenario: { has_scraper_access: false } });
		const answer = await call(`${emulator.scraperUrl}/scraper/health`, {
			headers: { "x-api-key": emulator.scraperKey },
		});
		expect(answer.status).toBe(401);
	});
});

describe("health (docs/service.md, Health check)", () => {
	test("answers {success:true} with rate-limit headers and charges nothing", async () => {
		const emulator = await useEmulator({ scenario: { concurrency: 7, credits: 50 } });
		const answer = await call(`${emulator.scraperUrl}/scraper/health`, {
			headers: { "x-api-key": emulator.scraperKey },
		});
		expect(answer.status).toBe(200);
		expect(answer.json).toEqual({ success: true });
		expect(answer.headers.get("x-ratelimit-limit")).toBe("7");
		expect(answer.headers.get("x-ratelimit-remaining")).toBe("7");
		expect(answer.headers.get("x-credits-used")).toBe("0");
		expect(answer.headers.get("x-credits-remaining")).toBe("50");
		expect(emulator.credits()).toBe(50);
		expect(emulator.ledger.totalCharged()).toBe(0);
	});
});

describe("validation (docs/service.md, Parameter rules): 422 with details.validation_errors", () => {
	const cases: Array<[string, Record<string, unknown>, string[]]> = [
		["url missing", {}, [`url: ${PROBLEMS.urlRequired}`]],
		["url without protocol", { url: "example.com/a" }, [`url: ${PROBLEMS.urlFormat}`]],
		["bad mode", { url: "http://127.0.0.1/", mode: "fast" }, [`mode: ${PROBLEMS.mode}`]],
		[
			"bad proxy_country",
			{ url: "http://127.0.0.1/", proxy_country: "USA" },
			[`proxy_country: ${PROBLEMS.proxyCountry}`],
		],
		[
			"bad proxy_session_id",
			{ url: "http://127.0.0.1/", proxy_session_id: "abc" },
			[`proxy_session_id: ${PROBLEMS.proxySessionId}`],
		],
		[
			"screenshot with request mode",
			{ url: "http://127.0.0.1/", mode: "request", screenshot: true },
			[`screenshot: ${PROBLEMS.screenshotNeedsBrowser}`],
		],
		[
			"AI without ai_source",
			{ url: "http://127.0.0.1/", ai_enhance: true },
			[`ai_source: ${PROBLEMS.aiSourceRequired}`],
		],
		[
			"datacenter with browser mode",
			{ url: "http://127.0.0.1/", mode: "browser", proxy_type: "datacenter" },
			[`proxy_type: ${PROBLEMS.datacenterNeedsRequest}`],
		],
		[
			"several problems at once",
			{ mode: "x", proxy_country: "1" },
			[`url: ${PROBLEMS.urlRequired}`, `mode: ${PROBLEMS.mode}`, `proxy_country: ${PROBLEMS.proxyCountry}`],
		],
	];
	test.each(cases)("%s", async (_name, params, expected) => {
		const emulator = await useEmulator();
		const answer = await scrapePost(emulator, params);
		expect(answer.status).toBe(422);
		expect(answer.json).toMatchObject({ success: false, error: "Invalid request parameters" });
		expect((answer.json.details as { validation_errors: string[] }).validation_errors).toEqual(expected);
		expect(emulator.ledger.totalCharged()).toBe(0);
	});

	test("GET parameters are validated as strings the same way", async () => {
		const emulator = await useEmulator();
		const answer = await scrapeGet(emulator, { url: "http://127.0.0.1/", screenshot: "true" });
		expect(answer.status).toBe(422);
		expect((answer.json.details as { validation_errors: string[] }).validation_errors).toEqual([
			`screenshot: ${PROBLEMS.screenshotNeedsBrowser}`,
		]);
	});

	test("every documented parameter is accepted and recorded; unknown ones are not rejected", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		// The saved items the request names must exist on the account: an unknown id is a 422 (below).
		const ids = await Promise.all([
			savedCall(emulator, "POST", "/configs", { name: "c", config: { wait_until: "load" } }),
			savedCall(emulator, "POST", "/schemes", {
				name: "s",
				config: { extract_scheme: [{ label: "h", selector: "h1" }] },
			}),
			savedCall(emulator, "POST", "/storage", {
				name: "st",
				storage_type: "gcs",
				config: { bucket: "b" },
			}),
		]).then((answers) => answers.map((answer) => answer.json.id as string));
		const params = {
			url: `${site.url}/product/2`,
			mode: "browser",
			delivery: "raw",
			async: false,
			content: "html",
			include_content: false,
			no_html: false,
			excluded_tags: ["script"],
			excluded_selectors: [".ad"],
			extract_scheme: [{ label: "title", type: "content", selector: "h1" }],
			scheme_id: ids[1],
			js_instructions: [{ wait: 10 }],
			execute_js: "1+1",
			networkCapture: [{ filterType: "resourceType", resourceType: "xhr" }],
			capture_headers: true,
			block_resources: ["image"],
			proxy_type: "residential",
			proxy_country: "DE",
			proxy_session_id: "abc123",
			proxy_overwrite: "http://user:pass@127.0.0.1:9",
			device: "macos",
			wait_until: "load",
			wait_seconds: 2,
			pdf: false,
			ai_enhance: true,
			ai_prompt: "summarize",
			ai_source: "markdown",
			ai_force_json: true,
			additional_headers: { "x-demo": "1" },
			config_id: ids[0],
			storage_id: ids[2],
			use_default_storage: false,
			webhook: { url: "http://127.0.0.1:9/hook", type: "custom", events: ["completed"] },
			some_future_parameter: 1,
		};
		const answer = await scrapePost(emulator, params);
		expect(answer.status).toBe(200);
		expect(emulator.ledger.byEndpoint("realtime")[0]?.params).toEqual(params);
	});
});

describe("plain errors", () => {
	test("malformed JSON body is 400", async () => {
		const emulator = await useEmulator();
		const answer = await call(`${emulator.scraperUrl}/scraper/realtime`, {
			method: "POST",
			headers: { "x-api-key": emulator.scraperKey, "content-type": "application/json" },
			body: "{not json",
		});
		expect(answer.status).toBe(400);
		expect(answer.json).toMatchObject({ success: false, error: "Invalid JSON body" });
	});

	test("a JSON body that is not an object is 400", async () => {
		const emulator = await useEmulator();
		const answer = await call(`${emulator.scraperUrl}/scraper/realtime`, {
			method: "POST",
			headers: { "x-api-key": emulator.scraperKey },
			body: "[1,2]",
		});
		expect(answer.status).toBe(400);
	});

	test("unknown paths are JSON 404s, wrong methods 405", async () => {
		const emulator = await useEmulator();
		const unknownScraper = await call(`${emulator.scraperUrl}/scraper/nothing`, {
			headers: { "x-api-key": emulator.scraperKey },
		});
		const unknownRoot = await call(`${emulator.apiUrl}/elsewhere`);
		const wrongMethod = await call(`${emulator.scraperUrl}/scraper/tasks/abc`, {
			method: "DELETE",
			headers: { "x-api-key": emulator.scraperKey },
		});
		expect(unknownScraper.status).toBe(404);
		expect(unknownScraper.json).toMatchObject({ success: false, error: "Not found" });
		expect(unknownRoot.status).toBe(404);
		expect(unknownRoot.json.success).toBe(false);
		expect(wrongMethod.status).toBe(405);
		expect(wrongMethod.headers.get("allow")).toBe("GET");
	});
});
