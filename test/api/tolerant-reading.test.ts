/**
 * The real service's unknowns (docs/service.md, "Errors" and "Where the documentation is silent"): shapes the emulator never answers, served by
 * a raw loopback server, and what the clients must make of them.
 */
import type { ServerResponse } from "node:http";
import type { LookupFunction } from "node:net";
import { Agent } from "undici";
import { describe, expect, test } from "vitest";
import { classifyFailure, NetworkError, ServiceError, UnexpectedResponseError } from "../../src/api/index.js";
import {
	accountClientFor,
	expectOutcome,
	expectState,
	type RawHandler,
	rejectionOf,
	scraperClientFor,
	sendJson,
	useRawServer,
} from "./helpers.js";

const SCRAPER_KEY = "sk-live-0123456789abcdef";
const ACCOUNT_KEY = "ak-live-fedcba9876543210";

async function rawScraper(handler: RawHandler) {
	const raw = await useRawServer(handler);
	return { raw, client: scraperClientFor({ scraperUrl: `${raw.url}/api/v1`, scraperKey: SCRAPER_KEY }) };
}

async function rawAccount(handler: RawHandler) {
	const raw = await useRawServer(handler);
	return { raw, client: accountClientFor({ apiUrl: raw.url, accountKey: ACCOUNT_KEY }) };
}

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) {
	res.writeHead(status, { "content-type": "text/html; charset=utf-8", ...headers });
	res.end(text);
}

describe("scraper error bodies", () => {
	test("the nested 422 form {status_code, error:{code,message,details}} is read like the flat one", async () => {
		const { client } = await rawScraper((_req, res) =>
			sendJson(res, 422, {
				success: false,
				status_code: 422,
				error: {
					code: "VALIDATION_ERROR",
					message: "Invalid request parameters",
					details: { validation_errors: ["url: value is not a valid URL", "mode: invalid mode value"] },
				},
			}),
		);
		const error = await rejectionOf(client.realtime({ url: "https://a.example/" }), ServiceError);
		expect(error).toMatchObject({
			status: 422,
			errorType: "Invalid request parameters",
			detail: "Invalid request parameters",
			validationErrors: ["url: value is not a valid URL", "mode: invalid mode value"],
		});
		expect(error.message).toBe(
			"POST /scraper/realtime answered 422 Invalid request parameters (url: value is not a valid URL; mode: invalid mode value)",
		);
		expect(classifyFailure(error)).toEqual({ action: "fail", kind: "invalid_parameters" });
	});

	test("429 with numbers as strings, and 429 without reset (the documented 60 s default)", async () => {
		let withReset = true;
		const { client } = await rawScraper((_req, res) =>
			sendJson(
				res,
				429,
				withReset
					? { success: false, error: "Concurrency limit exceeded (5/5)", limit: "5", reset: "30" }
					: { success: false, error: "rate limit" },
			),
		);
		const first = await rejectionOf(client.realtime({ url: "https://a.example/" }), ServiceError);
		expect(first).toMatchObject({ limit: 5, resetSeconds: 30 });
		expect(classifyFailure(first)).toEqual({ action: "wait", kind: "rate_limited", resetMs: 30_000 });
		withReset = false;
		const second = await rejectionOf(client.realtime({ url: "https://a.example/" }), ServiceError);
		expect(second.resetSeconds).toBeUndefined();
		expect(classifyFailure(second)).toEqual({ action: "wait", kind: "rate_limited", resetMs: 60_000 });
	});

	test("a bare HTML 502 from a gateway is the service's error; retried", async () => {
		const { client } = await rawScraper((_req, res) =>
			sendText(res, 502, "<html><body><h1>502 Bad Gateway</h1>\n<p>nginx</p></body></html>"),
		);
		const error = await rejectionOf(client.realtime({ url: "https://a.example/" }), ServiceError);
		expect(error).toMatchObject({ status: 502, errorType: "HTTP 502" });
		expect(error.detail).toBe("<html><body><h1>502 Bad Gateway</h1> <p>nginx</p></body></html>");
		expect(classifyFailure(error)).toEqual({ action: "retry", kind: "http_502", serviceDown: true });
	});

	test("a non-2xx page without X-Target-Status and without an error record is the target's answer", async () => {
		const { client } = await rawScraper((_req, res) => sendText(res, 404, "<h1>no such product</h1>"));
		const outcome = expectOutcome(await client.realtime({ url: "https://a.example/x" }), "target_error");
		expect(outcome.targetStatus).toBe(404);
		expect(outcome.body.toString()).toBe("<h1>no such product</h1>");
	});

	test("a 2xx error record (success:false) is still an error", async () => {
		const { client } = await rawScraper((_req, res) =>
			sendJson(res, 200, { success: false, error: "Insufficient credits", credits_remaining: 0.5 }),
		);
		const error = await rejectionOf(client.realtime({ url: "https://a.example/" }), ServiceError);
		expect(error).toMatchObject({ status: 200, errorType: "Insufficient credits", creditsRemaining: 0.5 });
	});
});

describe("JSON delivery without the X- headers", () => {
	test("credits and mode are taken from the body; the body is kept whole", async () => {
		const { client } = await rawScraper((_req, res) =>
			sendJson(res, 200, {
				title: "T",
				status_code: 200,
				credits_used: 2.5,
				mode_used: "auto (request)",
				data: { content: "<p>x</p>" },
			}),
		);
		const content = expectOutcome(await client.realtime({ url: "https://a.example/", delivery: "json" }), "content");
		expect(content).toMatchObject({ targetStatus: 200, headers: { creditsUsed: 2.5, modeUsed: "auto (request)" } });
		expect(JSON.parse(content.body.toString())).toMatchObject({ title: "T", data: { content: "<p>x</p>" } });
	});
});

describe("task hand-offs the service may answer", () => {
	test("408 with a task body {task_id, status: pending} is a task, not an error", async () => {
		const { client } = await rawScraper((_req, res) => sendJson(res, 408, { task_id: "t-1", status: "pending" }));
		const task = expectOutcome(await client.realtime({ url: "https://a.example/" }), "task");
		expect(task).toMatchObject({ status: 408, task: { task_id: "t-1", status: "pending" } });
	});

	test("408 without a task body is a timeout error: retried", async () => {
		const { client } = await rawScraper((_req, res) =>
			sendJson(res, 408, { success: false, error: "Request timeout", message: "Use async or retry" }),
		);
		const error = await rejectionOf(client.realtime({ url: "https://a.example/" }), ServiceError);
		expect(error).toMatchObject({ status: 408, errorType: "Request timeout", detail: "Use async or retry" });
		expect(classifyFailure(error)).toEqual({ action: "retry", kind: "timeout" });
	});

	test("200 with a processing task body (explicit async, documented without success) is a task", async () => {
		const { client } = await rawScraper((_req, res) =>
			sendJson(res, 200, {
				task_id: "task_abc123",
				status: "processing",
				check_url: "/api/v1/scraper/tasks/task_abc123",
			}),
		);
		const task = expectOutcome(await client.realtime({ url: "https://a.example/", async: true }), "task");
		expect(task.task.check_url).toBe("/api/v1/scraper/tasks/task_abc123");
	});
});

describe("task status words and finished bodies", () => {
	const answers: Record<string, (res: ServerResponse) => void> = {
		queued: (res) => sendJson(res, 200, { task_id: "queued", status: "queued" }),
		running: (res) => sendJson(res, 200, { task_id: "running", status: "RUNNING" }),
		done: (res) => sendJson(res, 200, { task_id: "done", status: "done", content: "<p>done</p>", credits_used: 2 }),
		success: (res) =>
			sendJson(res, 200, { task_id: "success", status: "success", result: { content: "<p>result</p>" } }),
		data: (res) =>
			sendJson(res, 200, { task_id: "data", status: "completed", data: { content: "# data" }, mode_used: "browser" }),
		error: (res) =>
			sendJson(res, 200, {
				task_id: "error",
				status: "error",
				error: { code: "SCRAPE_FAILED", message: "Navigation timeout" },
				credits_used: 0,
			}),
		failed500: (res) =>
			sendJson(res, 500, { success: false, task_id: "failed500", status: "failed", error: "Scraping error" }),
		paused: (res) => sendJson(res, 200, { task_id: "paused", status: "paused" }),
		pausedWithContent: (res) => sendJson(res, 200, { task_id: "p", status: "paused", content: "<p>late</p>" }),
		text: (res) =>
			sendText(res, 200, "<html>the page itself</html>", {
				"x-credits-used": "5",
				"x-credits-remaining": "95",
				"x-mode-used": "browser",
			}),
		expired: (res) => sendJson(res, 404, { success: false, error: "Task not found" }),
		broken: (res) => sendJson(res, 503, { success: false, error: "Service unavailable" }),
	};

	async function taskServer() {
		const { raw, client } = await rawScraper((req, res) => {
			const id = (req.url ?? "").split("/").pop() ?? "";
			const answer = answers[id];
			if (answer) answer(res);
			else sendJson(res, 500, { error: "test server: unknown id" });
		});
		return { raw, client };
	}

	test("queued and running (any case) are pending", async () => {
		const { client, raw } = await taskServer();
		expect(await client.task("queued")).toEqual({ state: "pending", status: "queued" });
		expect(await client.task("running")).toEqual({ state: "pending", status: "RUNNING" });
		expect(raw.requests.map((request) => request.url)).toEqual([
			"/api/v1/scraper/tasks/queued",
			"/api/v1/scraper/tasks/running",
		]);
		for (const request of raw.requests) expect(request.headers["x-api-key"]).toBe(SCRAPER_KEY);
	});

	test("done / success / completed: content from content, result.content or data.content", async () => {
		const { client } = await taskServer();
		const done = expectState(await client.task("done"), "completed");
		expect(done.body.toString()).toBe("<p>done</p>");
		expect(done.creditsUsed).toBe(2);
		expect(expectState(await client.task("success"), "completed").body.toString()).toBe("<p>result</p>");
		const data = expectState(await client.task("data"), "completed");
		expect(data.body.toString()).toBe("# data");
		expect(data.modeUsed).toBe("browser");
	});

	test("a non-JSON 200 task body is the content; credits and mode from the headers", async () => {
		const { client } = await taskServer();
		const text = expectState(await client.task("text"), "completed");
		expect(text.body.toString()).toBe("<html>the page itself</html>");
		expect(text).toMatchObject({ creditsUsed: 5, creditsRemaining: 95, modeUsed: "browser" });
	});

	test("error and failed (even on a 500) are failed, with a nested error read as text", async () => {
		const { client } = await taskServer();
		const error = expectState(await client.task("error"), "failed");
		expect(error).toMatchObject({ errorType: "Navigation timeout", message: "Navigation timeout", creditsUsed: 0 });
		expect(expectState(await client.task("failed500"), "failed").errorType).toBe("Scraping error");
	});

	test("an unknown word is unknown (keep polling) unless the body carries content", async () => {
		const { client } = await taskServer();
		expect(await client.task("paused")).toEqual({ state: "unknown", status: "paused" });
		expect(expectState(await client.task("pausedWithContent"), "completed").body.toString()).toBe("<p>late</p>");
	});

	test("404 is not_found (unknown or expired); another error status is a ServiceError", async () => {
		const { client } = await taskServer();
		expect(await client.task("expired")).toEqual({ state: "not_found" });
		const error = await rejectionOf(client.task("broken"), ServiceError);
		expect(error).toMatchObject({ status: 503, endpoint: "GET /scraper/tasks/:id" });
		expect(classifyFailure(error).action).toBe("retry");
	});
});

describe("account endpoints answering 2xx with an unexpected shape", () => {
	test("a wrong field type names the field; never retried", async () => {
		const { client } = await rawAccount((_req, res) =>
			sendJson(res, 200, {
				success: true,
				has_access: "yes",
				credits: 5,
				concurrency: 1,
				api_key: null,
				endpoint_url: "https://scrape.example/api/v1",
			}),
		);
		const error = await rejectionOf(client.scraperAccess(), UnexpectedResponseError);
		expect(error.status).toBe(200);
		expect(error.message).toContain("GET /public/scraper answered 200 with an unexpected body");
		expect(error.message).toContain("field `has_access`");
		expect(classifyFailure(error)).toEqual({ action: "fail", kind: "unexpected_response" });
	});

	test("a missing nested field is named by its path", async () => {
		const { client } = await rawAccount((_req, res) =>
			sendJson(res, 200, { success: true, data: { bandwidth: {} }, meta: { period: "3d" } }),
		);
		const error = await rejectionOf(client.usage({ product: "rp" }), UnexpectedResponseError);
		expect(error.message).toContain("field `data.bandwidth.products`");
	});

	test("a body that is not JSON", async () => {
		const { client } = await rawAccount((_req, res) => sendText(res, 200, "<html>login</html>"));
		const error = await rejectionOf(client.proxyData(), UnexpectedResponseError);
		expect(error.message).toBe("GET /public answered 200 with an unexpected body: not JSON");
	});

	test("a generate line in no known layout is an UnexpectedResponseError, not a crash", async () => {
		const { client } = await rawAccount((_req, res) => {
			res.writeHead(200, { "content-type": "text/plain" });
			res.end("user:pass@host.example:1000\nnot-a-proxy-line\n");
		});
		const error = await rejectionOf(client.generate({ product: "rp" }), UnexpectedResponseError);
		expect(error).toMatchObject({ status: 200, endpoint: "GET /public/generate" });
		expect(error.message).toBe(
			"GET /public/generate answered 200 with an unexpected body: line 2 is not a format 1 proxy line",
		);
		expect(classifyFailure(error).action).toBe("fail");
	});

	test("the ISP layout of the service's own fixture ({label, countries}) is accepted too", async () => {
		const { client } = await rawAccount((_req, res) =>
			sendJson(res, 200, {
				success: true,
				data: {
					rp: {
						countries: { US: "United States" },
						cities: { data: [{ id: "boston", name: "Boston", country_code: "US" }] },
						regions: { data: [{ id: "uttar.pradesh", name: "Uttar Pradesh" }] },
						isp: { comcastcable: { label: "Comcast Cable", countries: ["US"] } },
						asn: ["AS7922"],
					},
				},
			}),
		);
		const settings = await client.settings();
		expect(settings.data.rp?.isp?.comcastcable?.label).toBe("Comcast Cable");
		expect(settings.data.rp?.cities?.data[0]?.id).toBe("boston");
	});
});

describe("an error body echoing the key never puts the key in an error", () => {
	function expectNoKey(error: Error, key: string) {
		expect(error.message).not.toContain(key);
		expect(JSON.stringify({ ...error })).not.toContain(key);
	}

	test("account 401 and 500 bodies echoing the account key", async () => {
		let status = 401;
		const { client, raw } = await rawAccount((req, res) =>
			sendJson(res, status, {
				success: false,
				error: `Invalid API key ${String(req.headers["x-apikey"])}`,
				message: `key=${String(req.headers["x-apikey"])} rejected`,
			}),
		);
		const unauthorized = await rejectionOf(client.proxyData(), ServiceError);
		expect(unauthorized.errorType).toBe("Invalid API key [redacted]");
		expect(unauthorized.detail).toBe("key=[redacted] rejected");
		expectNoKey(unauthorized, ACCOUNT_KEY);
		status = 500;
		expectNoKey(await rejectionOf(client.usage({ product: "rp" }), ServiceError), ACCOUNT_KEY);
		// It was the header that carried it.
		expect(raw.requests[0]?.headers["x-apikey"]).toBe(ACCOUNT_KEY);
	});

	test("scraper bodies echoing the key in error, message, url, validation errors and plain text", async () => {
		let mode = "json";
		const { client } = await rawScraper((_req, res) => {
			if (mode === "json") {
				sendJson(res, 500, {
					success: false,
					error: `Scraping error for ${SCRAPER_KEY}`,
					message: `api_key=${SCRAPER_KEY}`,
					url: `https://a.example/?api_key=${SCRAPER_KEY}`,
					credits_used: 0,
					details: { validation_errors: [`api_key: ${SCRAPER_KEY} is odd`] },
				});
			} else {
				sendText(res, 503, `upstream said: bad key ${SCRAPER_KEY}`);
			}
		});
		const json = await rejectionOf(client.realtime({ url: "https://a.example/" }), ServiceError);
		expectNoKey(json, SCRAPER_KEY);
		expect(json.url).toBe("https://a.example/?api_key=[redacted]");
		expect(json.validationErrors).toEqual(["api_key: [redacted] is odd"]);
		mode = "text";
		const text = await rejectionOf(client.health(), ServiceError);
		expectNoKey(text, SCRAPER_KEY);
		expect(text.detail).toBe("upstream said: bad key [redacted]");
	});

	test("task bodies echoing the key: failed message and an unknown status word", async () => {
		const { client } = await rawScraper((req, res) => {
			const id = (req.url ?? "").split("/").pop();
			sendJson(
				res,
				200,
				id === "f"
					? { task_id: "f", status: "failed", error: "Scraping error", message: `bad key ${SCRAPER_KEY}` }
					: { task_id: "u", status: `weird-${SCRAPER_KEY}` },
			);
		});
		const failed = expectState(await client.task("f"), "failed");
		expect(failed.message).toBe("bad key [redacted]");
		const unknown = expectState(await client.task("u"), "unknown");
		expect(unknown.status).toBe("weird-[redacted]");
	});
});

describe("a name that does not resolve", () => {
	test("NetworkError dns: the service's own host not resolving is an outage sign, retried", async () => {
		// The resolver is the edge injected here: no real DNS query leaves the machine.
		const lookup: LookupFunction = (hostname, _options, callback) =>
			callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), "", 0);
		const agent = new Agent({ connect: { lookup } });
		try {
			const client = accountClientFor(
				{ apiUrl: "https://api.scrapejob-test.invalid", accountKey: ACCOUNT_KEY },
				{ dispatcher: agent },
			);
			const error = await rejectionOf(client.proxyData(), NetworkError);
			expect(error).toMatchObject({ failure: "dns", endpoint: "GET /public" });
			expect(error.message).toBe(
				"GET /public at https://api.scrapejob-test.invalid failed: the host name did not resolve (ENOTFOUND)",
			);
			// Not the target's DNS (that comes back as a 500 scraping error, never retried) but ours: an outage sign.
			expect(classifyFailure(error)).toEqual({ action: "retry", kind: "network_dns", serviceDown: true });
		} finally {
			await agent.destroy();
		}
	});
});
