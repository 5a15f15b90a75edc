import { describe, expect, onTestFinished, test } from "vitest";
import {
	classifyFailure,
	createDispatcher,
	NetworkError,
	type RealtimeOutcome,
	RequestAbortedError,
	type ScraperClient,
	ServiceError,
	UnexpectedResponseError,
} from "../../src/api/index.js";
import { PROBLEMS, type ScrapeParams } from "../../src/common/index.js";
import { SCRAPING_ERROR_MESSAGES } from "../../src/emulator/index.js";
import {
	closedPort,
	delay,
	expectOutcome,
	expectState,
	rejectionOf,
	scraperClientFor,
	sendJson,
	settledTask,
	useDemoSite,
	useEmulator,
	useRawServer,
	useRecordingProxy,
} from "./helpers.js";

const METHODS = ["GET", "POST"] as const;

describe("realtime: content, headers, key placement", () => {
	test.each(METHODS)("%s: raw HTML content with the X- headers parsed", async (method) => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ credits: 100, concurrency: 4 });
		const outcome = await scraperClientFor(emulator).realtime(
			{ url: `${site.url}/product/1`, mode: "request" },
			{ method },
		);
		const content = expectOutcome(outcome, "content");
		expect(content.status).toBe(200);
		expect(content.contentType).toBe("text/html; charset=utf-8");
		expect(content.body.toString("utf8")).toContain("<h1>Product 1</h1>");
		expect(content.json).toBeUndefined();
		expect(content.headers).toEqual({
			creditsUsed: 2,
			creditsRemaining: 98,
			modeUsed: "request",
			rateLimitLimit: 4,
			rateLimitRemaining: 4,
		});
		const [entry] = emulator.ledger.byEndpoint("realtime");
		expect(entry).toMatchObject({
			method,
			path: "/api/v1/scraper/realtime",
			keyPlace: "header",
			key: emulator.scraperKey,
			status: 200,
			creditsCharged: 2,
			params: { url: `${site.url}/product/1`, mode: "request" },
		});
		expect(entry?.params).not.toHaveProperty("api_key");
	});

	test.each(METHODS)("%s: the key is sent in x-api-key, never in the URL or the body", async (method) => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const proxy = await useRecordingProxy(emulator.apiUrl);
		const client = scraperClientFor({ scraperUrl: `${proxy.url}/api/v1`, scraperKey: emulator.scraperKey });
		expectOutcome(await client.realtime({ url: `${site.url}/page/3`, mode: "request" }, { method }), "content");
		await client.health();
		const [realtime, health] = proxy.requests;
		expect(realtime?.method).toBe(method);
		expect(realtime?.headers["x-api-key"]).toBe(emulator.scraperKey);
		expect(realtime?.headers["x-apikey"]).toBeUndefined();
		const query = new URL(realtime?.url ?? "", proxy.url).searchParams;
		expect(query.has("api_key")).toBe(false);
		expect(realtime?.url).not.toContain(emulator.scraperKey);
		if (method === "GET") {
			expect(query.get("url")).toBe(`${site.url}/page/3`);
			expect(query.get("mode")).toBe("request");
		} else {
			expect(realtime?.url).toBe("/api/v1/scraper/realtime");
			expect(realtime?.headers["content-type"]).toBe("application/json");
		}
		expect(health).toMatchObject({ method: "GET", url: "/api/v1/scraper/health" });
		expect(health?.headers["x-api-key"]).toBe(emulator.scraperKey);
		for (const entry of emulator.ledger.entries) expect(entry.keyPlace).toBe("header");
	});

	test("POST sends the parameters as a JSON body without the key", async () => {
		const raw = await useRawServer((_req, res) => res.end("<p>ok</p>"));
		const params: ScrapeParams = {
			url: "https://a.example/page/1",
			mode: "browser",
			wait_seconds: 2,
			excluded_tags: ["form"],
		};
		await scraperClientFor({ scraperUrl: `${raw.url}/api/v1`, scraperKey: "k-raw-0" }).realtime(params);
		expect(JSON.parse(raw.requests[0]?.body ?? "")).toEqual(params);
	});

	test("delivery json with include_content: the whole object as the body, the target status", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const outcome = await scraperClientFor(emulator).realtime({
			url: `${site.url}/product/2`,
			mode: "browser",
			delivery: "json",
			include_content: true,
		});
		const content = expectOutcome(outcome, "content");
		expect(content.contentType).toBe("application/json");
		expect(content.targetStatus).toBe(200);
		expect(content.json).toMatchObject({ success: true, title: "Product 2", status_code: 200, mode_used: "browser" });
		// The body is the JSON object the service sent, whole: its content and every other field.
		expect(JSON.parse(content.body.toString("utf8"))).toEqual(content.json);
		expect(String(content.json?.content)).toContain("<h1>Product 2</h1>");
		expect(content.headers).toMatchObject({ creditsUsed: 5, modeUsed: "browser" });
	});

	test("delivery json without include_content is still the whole object; markdown content converts the page", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const client = scraperClientFor(emulator);
		const bare = expectOutcome(await client.realtime({ url: `${site.url}/product/3`, delivery: "json" }), "content");
		expect(JSON.parse(bare.body.toString("utf8"))).toMatchObject({ title: "Product 3", status_code: 200 });
		expect(bare.json).toMatchObject({ title: "Product 3", credits_used: 2, mode_used: "auto (request)" });

		const raw = expectOutcome(
			await client.realtime({ url: `${site.url}/product/3`, content: "markdown" }, { method: "GET" }),
			"content",
		);
		expect(raw.contentType).toBe("text/markdown; charset=utf-8");
		expect(raw.body.toString("utf8")).toContain("# Product 3");
		expect(raw.body.toString("utf8")).not.toContain("<h1>");

		const wrapped = expectOutcome(
			await client.realtime({
				url: `${site.url}/product/3`,
				content: "markdown",
				delivery: "json",
				include_content: true,
			}),
			"content",
		);
		expect(String(wrapped.json?.content)).toContain("# Product 3");
		expect(wrapped.body.toString("utf8")).toContain('"title":"Product 3"');
	});

	test("auto mode reports the upgrade in X-Mode-Used and charges 6", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ credits: 50 });
		const content = expectOutcome(await scraperClientFor(emulator).realtime({ url: `${site.url}/app` }), "content");
		expect(content.headers).toMatchObject({ modeUsed: "auto (browser)", creditsUsed: 6, creditsRemaining: 44 });
	});

	test("a target's own non-2xx answer is passed through as target_error, not a service error", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ credits: 10 });
		const client = scraperClientFor(emulator);
		const missing = expectOutcome(
			await client.realtime({ url: `${site.url}/no/such/page`, mode: "request" }),
			"target_error",
		);
		expect(missing.targetStatus).toBe(404);
		expect(missing.headers).toMatchObject({ targetStatus: 404, creditsUsed: 0, creditsRemaining: 10 });
		expect(missing.body.toString("utf8")).toContain("Not found");
		// A target 503 is the target's, not the service's: it must not look retryable.
		const unavailable = expectOutcome(
			await client.realtime({ url: `${site.url}/status/503`, mode: "request" }, { method: "GET" }),
			"target_error",
		);
		expect(unavailable.targetStatus).toBe(503);
		expect(emulator.credits()).toBe(10);
	});

	test("health: ok with the headers; no credits spent", async () => {
		const emulator = await useEmulator({ credits: 30, concurrency: 3 });
		const health = await scraperClientFor(emulator).health();
		expect(health).toEqual({
			ok: true,
			headers: { creditsUsed: 0, creditsRemaining: 30, rateLimitLimit: 3, rateLimitRemaining: 3 },
		});
		expect(emulator.credits()).toBe(30);
	});
});

describe("tasks: hand-offs and polling", () => {
	test.each([202, 408] as const)(
		"a fetch over the timeout answers %i with a task; pending → completed",
		async (status) => {
			const site = await useDemoSite();
			const emulator = await useEmulator({ timeout_ms: 20, timeout_status: status, credits: 100 });
			const client = scraperClientFor(emulator);
			const url = `${site.url}/slow?ms=250`;
			const task = expectOutcome(await client.realtime({ url, mode: "request" }), "task");
			expect(task.status).toBe(status);
			expect(task.task).toMatchObject({ success: true, status: "processing" });
			expect(task.task.check_url).toBe(`/api/v1/scraper/tasks/${task.task.task_id}`);
			expect(task.headers.creditsUsed).toBe(0);

			const { final, seen } = await settledTask(client, task.task.task_id);
			expect(seen[0]).toBe("pending");
			const done = expectState(final, "completed");
			expect(done.body.toString("utf8")).toContain("Answered after 250 ms");
			expect(done).toMatchObject({ creditsUsed: 2, creditsRemaining: 98, modeUsed: "request", targetStatus: 200 });
			expect(done.headers).toMatchObject({ creditsUsed: 2, modeUsed: "request" });
		},
	);

	test.each(METHODS)("%s async: true returns the task at once; markdown content on completion", async (method) => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const client = scraperClientFor(emulator);
		const task = expectOutcome(
			await client.realtime({ url: `${site.url}/slow?ms=40`, async: true, content: "markdown" }, { method }),
			"task",
		);
		expect(task.status).toBe(202);
		expect(task.task.message).toContain("submitted");
		const done = expectState((await settledTask(client, task.task.task_id)).final, "completed");
		expect(done.body.toString("utf8")).toContain("# Slow page");
		expect(done.modeUsed).toBe("auto (request)");
	});

	test("a failed fetch makes a failed task: error, message, 0 credits", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({
			faults: [{ kind: "scraping_error", message: "Target closed", match: "/page/" }],
		});
		const client = scraperClientFor(emulator);
		const task = expectOutcome(await client.realtime({ url: `${site.url}/page/1`, async: true }), "task");
		const failed = expectState((await settledTask(client, task.task.task_id)).final, "failed");
		expect(failed).toMatchObject({ errorType: "Scraping error", message: "Target closed", creditsUsed: 0 });

		const missing = expectOutcome(await client.realtime({ url: `${site.url}/gone`, async: true }), "task");
		const targetFailed = expectState((await settledTask(client, missing.task.task_id)).final, "failed");
		expect(targetFailed).toMatchObject({ errorType: "Target error", message: "The target answered HTTP 404" });
		expect(targetFailed.headers.targetStatus).toBe(404);
	});

	test("an unknown task, or another key's task, is not_found", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ keys: { scraper: ["scraper-key-one", "scraper-key-two"] } });
		const client = scraperClientFor(emulator);
		expect(await client.task("task_0000000000000000")).toEqual({ state: "not_found" });
		const task = expectOutcome(await client.realtime({ url: `${site.url}/page/1`, async: true }), "task");
		const other = scraperClientFor({ scraperUrl: emulator.scraperUrl, scraperKey: "scraper-key-two" });
		expect(await other.task(task.task.task_id)).toEqual({ state: "not_found" });
	});
});

describe("every scraper status of the service as a typed error", () => {
	const keyedCalls: Array<[string, (client: ScraperClient, siteUrl: string) => Promise<unknown>]> = [
		["realtime", (client, siteUrl) => client.realtime({ url: `${siteUrl}/page/1` })],
		["task", (client) => client.task("task_0000000000000000")],
		["health", (client) => client.health()],
	];
	test.each(keyedCalls)("401 on %s with a wrong key: abort", async (_name, call) => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const promise = call(scraperClientFor(emulator, { scraperKey: "wrong-scraper-key" }), site.url);
		const error = await rejectionOf(promise, ServiceError);
		expect(error).toMatchObject({ status: 401, errorType: "Invalid API key" });
		expect(error.detail).toBe("The API key given in the x-api-key header is not valid");
		expect(classifyFailure(error)).toEqual({ action: "abort", kind: "unauthorized" });
	});

	test("401 for the account key, which is not a scraper key; and for a GET realtime", async () => {
		const emulator = await useEmulator();
		const client = scraperClientFor({ scraperUrl: emulator.scraperUrl, scraperKey: emulator.accountKey });
		const error = await rejectionOf(client.realtime({ url: "https://example.com/" }, { method: "GET" }), ServiceError);
		expect(error.status).toBe(401);
		expect(error.endpoint).toBe("GET /scraper/realtime");
	});

	test("402 insufficient credits: creditsRemaining and the service's message; abort", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ credits: 1 });
		const error = await rejectionOf(
			scraperClientFor(emulator).realtime({ url: `${site.url}/page/1`, mode: "request" }),
			ServiceError,
		);
		expect(error).toMatchObject({
			status: 402,
			errorType: "Insufficient credits",
			detail: "Insufficient credits: required 2, available 1",
			creditsRemaining: 1,
		});
		expect(classifyFailure(error)).toEqual({ action: "abort", kind: "insufficient_credits" });
		// setCredits lifts it: the same call goes through.
		emulator.setCredits(2);
		expectOutcome(await scraperClientFor(emulator).realtime({ url: `${site.url}/page/1`, mode: "request" }), "content");
	});

	const RULES: Array<[string, Partial<Record<keyof ScrapeParams, unknown>>, string[]]> = [
		["url missing", { url: "" }, [`url: ${PROBLEMS.urlRequired}`]],
		["url without protocol", { url: "example.com/page" }, [`url: ${PROBLEMS.urlFormat}`]],
		["bad mode", { mode: "turbo" }, [`mode: ${PROBLEMS.mode}`]],
		["bad proxy_country", { proxy_country: "USA" }, [`proxy_country: ${PROBLEMS.proxyCountry}`]],
		["bad proxy_session_id", { proxy_session_id: "abc" }, [`proxy_session_id: ${PROBLEMS.proxySessionId}`]],
		[
			"screenshot without browser",
			{ mode: "request", screenshot: true },
			[`screenshot: ${PROBLEMS.screenshotNeedsBrowser}`],
		],
		["ai_enhance without ai_source", { ai_enhance: true }, [`ai_source: ${PROBLEMS.aiSourceRequired}`]],
		[
			"datacenter with browser",
			{ proxy_type: "datacenter", mode: "browser" },
			[`proxy_type: ${PROBLEMS.datacenterNeedsRequest}`],
		],
		[
			"several problems at once",
			{ url: "nope", proxy_country: "X1", proxy_session_id: "toolongid99" },
			[
				`url: ${PROBLEMS.urlFormat}`,
				`proxy_country: ${PROBLEMS.proxyCountry}`,
				`proxy_session_id: ${PROBLEMS.proxySessionId}`,
			],
		],
	];
	const ruleCases = RULES.flatMap(([name, params, expected]) =>
		METHODS.map((method) => ({ name, params, expected, method })),
	);

	test.each(ruleCases)("422 $name ($method): validationErrors verbatim; fail", async ({ params, expected, method }) => {
		const emulator = await useEmulator();
		const request = { url: "https://example.com/", ...params } as ScrapeParams;
		const error = await rejectionOf(scraperClientFor(emulator).realtime(request, { method }), ServiceError);
		expect(error).toMatchObject({ status: 422, errorType: "Invalid request parameters" });
		expect(error.validationErrors).toEqual(expected);
		for (const entry of expected) expect(error.message).toContain(entry);
		expect(classifyFailure(error)).toEqual({ action: "fail", kind: "invalid_parameters" });
		expect(emulator.credits()).toBe(10_000);
	});

	test("429 at the concurrency limit: limit and resetSeconds; wait reset × 1000 ms", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ concurrency: 1, reset_seconds: 7 });
		const client = scraperClientFor(emulator);
		// The async task holds the only slot while its slow target answers.
		expectOutcome(await client.realtime({ url: `${site.url}/slow?ms=2000`, async: true }), "task");
		const error = await rejectionOf(client.realtime({ url: `${site.url}/page/1` }), ServiceError);
		expect(error).toMatchObject({
			status: 429,
			errorType: "Concurrency limit exceeded (1/1)",
			limit: 1,
			resetSeconds: 7,
		});
		expect(classifyFailure(error)).toEqual({ action: "wait", kind: "rate_limited", resetMs: 7000 });
		expect(emulator.ledger.rateLimits).toHaveLength(1);
	});

	test("429 from an injected burst: the next requests of the key too", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ faults: [{ kind: "rate_limit", count: 2, times: 1 }], reset_seconds: 3 });
		const client = scraperClientFor(emulator);
		for (let i = 0; i < 2; i++) {
			const error = await rejectionOf(client.realtime({ url: `${site.url}/page/1` }), ServiceError);
			expect(error).toMatchObject({ status: 429, limit: 5, resetSeconds: 3 });
			expect(classifyFailure(error)).toMatchObject({ action: "wait", resetMs: 3000 });
		}
		expectOutcome(await client.realtime({ url: `${site.url}/page/1` }), "content");
	});

	const retried = new Set(["Connection refused", "SSL certificate error", "Page crashed", "Target closed"]);
	test.each(SCRAPING_ERROR_MESSAGES)("500 scraping error %s: url, creditsUsed, classification", async (message) => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ faults: [{ kind: "scraping_error", message }] });
		const url = `${site.url}/product/9`;
		const error = await rejectionOf(scraperClientFor(emulator).realtime({ url, mode: "request" }), ServiceError);
		expect(error).toMatchObject({ status: 500, errorType: "Scraping error", detail: message, url, creditsUsed: 0 });
		expect(classifyFailure(error)).toEqual(
			message === "Navigation timeout"
				? // The service's advice after a navigation timeout: retry with a longer wait_seconds.
					{ action: "retry", kind: "navigation_timeout", raiseWaitSeconds: true }
				: retried.has(message)
					? { action: "retry", kind: message.toLowerCase().replace(/ /g, "_") }
					: { action: "fail", kind: message.startsWith("DNS") ? "dns_failed" : "navigation_error" },
		);
		expect(emulator.credits()).toBe(10_000);
	});

	test("500 from real target failures: a closed port is Connection refused; dns_failure fault fails", async () => {
		const emulator = await useEmulator({ faults: [{ kind: "dns_failure", match: "unknown.invalid" }] });
		const client = scraperClientFor(emulator);
		const url = `http://127.0.0.1:${await closedPort()}/`;
		const refused = await rejectionOf(client.realtime({ url, mode: "request" }), ServiceError);
		expect(refused).toMatchObject({ status: 500, detail: "Connection refused", url });
		expect(classifyFailure(refused).action).toBe("retry");
		const dns = await rejectionOf(client.realtime({ url: "https://unknown.invalid/", mode: "request" }), ServiceError);
		expect(dns).toMatchObject({ status: 500, detail: "DNS resolution failed", url: "https://unknown.invalid/" });
		expect(classifyFailure(dns)).toEqual({ action: "fail", kind: "dns_failed" });
	});

	test.each([
		["server_error", 500, "Internal server error"],
		["bad_gateway", 502, "Bad gateway"],
		["unavailable", 503, "Service unavailable"],
	] as const)("%s: %i ServiceError, retried", async (kind, status, errorType) => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ faults: [{ kind, times: 1 }] });
		const client = scraperClientFor(emulator);
		const error = await rejectionOf(client.realtime({ url: `${site.url}/page/1` }), ServiceError);
		expect(error).toMatchObject({ status, errorType });
		expect(classifyFailure(error)).toEqual({ action: "retry", kind: `http_${status}`, serviceDown: true });
		expectOutcome(await client.realtime({ url: `${site.url}/page/1` }), "content");
	});

	test("400 invalid parameters (a raw service): ServiceError, fail", async () => {
		const raw = await useRawServer((_req, res) =>
			sendJson(res, 400, {
				success: false,
				error: "Invalid request body",
				message: "The request body must be a JSON object of parameters",
				timestamp: "2026-01-01T00:00:00Z",
			}),
		);
		const error = await rejectionOf(
			scraperClientFor({ scraperUrl: `${raw.url}/api/v1`, scraperKey: "k-raw-1" }).realtime({
				url: "https://a.example/",
			}),
			ServiceError,
		);
		expect(error).toMatchObject({
			status: 400,
			errorType: "Invalid request body",
			detail: "The request body must be a JSON object of parameters",
			endpoint: "POST /scraper/realtime",
		});
		expect(classifyFailure(error)).toEqual({ action: "fail", kind: "http_400" });
	});

	test("a dropped connection is NetworkError reset: retry", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ faults: [{ kind: "drop_connection", times: 1 }] });
		const client = scraperClientFor(emulator);
		const error = await rejectionOf(client.realtime({ url: `${site.url}/page/1` }), NetworkError);
		expect(error.failure).toBe("reset");
		expect(error.endpoint).toBe("POST /scraper/realtime");
		expect(classifyFailure(error)).toEqual({ action: "retry", kind: "network_reset", serviceDown: true });
		expect(emulator.ledger.statusCounts()).toEqual({ 0: 1 });
		expectOutcome(await client.realtime({ url: `${site.url}/page/1` }), "content");
	});

	test("a closed port is NetworkError refused: retry", async () => {
		const port = await closedPort();
		const client = scraperClientFor({ scraperUrl: `http://127.0.0.1:${port}/api/v1`, scraperKey: "k-closed-1" });
		const error = await rejectionOf(client.health(), NetworkError);
		expect(error.failure).toBe("refused");
		expect(error.message).toBe(
			`GET /scraper/health at http://127.0.0.1:${port} failed: connection refused (ECONNREFUSED)`,
		);
		expect(classifyFailure(error)).toEqual({ action: "retry", kind: "network_refused", serviceDown: true });
	});

	test("a 202 without a task_id is an UnexpectedResponseError, never retried", async () => {
		const raw = await useRawServer((_req, res) => sendJson(res, 202, { success: true, status: "processing" }));
		const client = scraperClientFor({ scraperUrl: `${raw.url}/api/v1`, scraperKey: "k-raw-2" });
		const error = await rejectionOf(client.realtime({ url: "https://a.example/" }), UnexpectedResponseError);
		expect(error.status).toBe(202);
		expect(classifyFailure(error)).toEqual({ action: "fail", kind: "unexpected_response" });
	});
});

describe("cancelling a realtime call", () => {
	test("an AbortSignal cancels a slow call: RequestAbortedError", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const controller = new AbortController();
		const started = Date.now();
		const call = scraperClientFor(emulator).realtime(
			{ url: `${site.url}/slow?ms=10000`, mode: "request" },
			{ signal: controller.signal },
		);
		await delay(30);
		controller.abort();
		const error = await rejectionOf(call, RequestAbortedError);
		expect(error.message).toBe("POST /scraper/realtime was aborted");
		expect(Date.now() - started).toBeLessThan(2000);
		expect(classifyFailure(error)).toEqual({ action: "fail", kind: "aborted" });
	});

	test("one signal shared by many calls: the finished ones keep their answers, every one in flight is cancelled", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ concurrency: 10 });
		const client = scraperClientFor(emulator);
		const controller = new AbortController();
		const call = (path: string) =>
			client.realtime({ url: `${site.url}${path}`, mode: "request" }, { signal: controller.signal });
		const fast = await Promise.all([call("/product/1"), call("/product/2")]);
		expect(fast.map((outcome) => outcome.kind)).toEqual(["content", "content"]);
		// Calls that end while others are still in flight leave the signal's listeners from the middle.
		const slow: Array<Promise<unknown>> = [];
		const between: Array<Promise<RealtimeOutcome>> = [];
		for (const ms of [60, 30, 90]) {
			slow.push(call("/slow?ms=10000"));
			between.push(call(`/slow?ms=${ms}`));
		}
		slow.push(call("/slow?ms=10000"));
		// Handled here too, so a failed expectation below does not leave rejections unhandled.
		for (const pending of slow) pending.catch(() => undefined);
		expect((await Promise.all(between)).map((outcome) => outcome.kind)).toEqual(["content", "content", "content"]);
		// All four slow ones are at the site (waiting on its answer) before the signal fires.
		while (site.requestCount() < 9) await delay(5);
		const started = Date.now();
		controller.abort();
		const errors = await Promise.all(slow.map((pending) => rejectionOf(pending, RequestAbortedError)));
		expect(errors).toHaveLength(4);
		expect(Date.now() - started).toBeLessThan(2000);
		// A call sent after the abort is refused at once, as with a fresh AbortSignal.
		await rejectionOf(call("/product/3"), RequestAbortedError);
		expect(site.requestCount()).toBe(9);
	});

	test("a call still waiting for a free connection ends when its signal fires, and is never sent", async () => {
		let release: (() => void) | undefined;
		const raw = await useRawServer((_req, res, body) => {
			if (body.includes("/held")) release = () => res.end("<p>held</p>");
			else res.end("<p>ok</p>");
		});
		const dispatcher = createDispatcher({ connections: 1 });
		onTestFinished(() => dispatcher.close());
		const client = scraperClientFor({ scraperUrl: `${raw.url}/api/v1`, scraperKey: "k-queue-1" }, { dispatcher });
		const held = client.realtime({ url: "https://a.example/held" });
		while (release === undefined) await delay(5);
		const controller = new AbortController();
		const queued = client.realtime({ url: "https://a.example/queued" }, { signal: controller.signal });
		controller.abort();
		// Before the held call ends: the only connection is still busy with it.
		await rejectionOf(queued, RequestAbortedError);
		release();
		expectOutcome(await held, "content");
		expectOutcome(await client.realtime({ url: "https://a.example/after" }), "content");
		expect(raw.requests.map((request) => JSON.parse(request.body).url)).toEqual([
			"https://a.example/held",
			"https://a.example/after",
		]);
	});

	test("an already aborted signal sends nothing", async () => {
		const emulator = await useEmulator();
		const error = await rejectionOf(
			scraperClientFor(emulator).realtime({ url: "https://example.com/" }, { signal: AbortSignal.abort() }),
			RequestAbortedError,
		);
		expect(error).toBeInstanceOf(RequestAbortedError);
		expect(emulator.ledger.requestCount).toBe(0);
	});

	test("realtimeTimeoutMs against a slow target: NetworkError timeout, retried", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const started = Date.now();
		const client = scraperClientFor(emulator, { realtimeTimeoutMs: 60 });
		const error = await rejectionOf(
			client.realtime({ url: `${site.url}/slow?ms=10000`, mode: "request" }),
			NetworkError,
		);
		expect(error.failure).toBe("timeout");
		expect(Date.now() - started).toBeLessThan(4000);
		expect(classifyFailure(error)).toEqual({ action: "retry", kind: "network_timeout", serviceDown: true });
	});

	// undici checks header timeouts on a ~0.5 s tick, so a 40 ms limit fires within about a second.
	test("the task poll has its own timeoutMs", async () => {
		const raw = await useRawServer((_req, res) => {
			const timer = setTimeout(() => sendJson(res, 200, { task_id: "t-1", status: "processing" }), 10_000);
			res.on("close", () => clearTimeout(timer));
		});
		const started = Date.now();
		const client = scraperClientFor({ scraperUrl: `${raw.url}/api/v1`, scraperKey: "k-raw-3" }, { timeoutMs: 40 });
		const error = await rejectionOf(client.task("t-1"), NetworkError);
		expect(error).toMatchObject({ failure: "timeout", endpoint: "GET /scraper/tasks/:id" });
		expect(Date.now() - started).toBeLessThan(4000);
	});
});
