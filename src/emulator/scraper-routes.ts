/**
 * The scraper endpoints under `/api/v1` (docs/service.md, "Fetching a page" and "Addresses and keys" and "Errors"): realtime fetches, task polling,
 * health, map, search and crawl, and the account's saved items under `/api/v1/account` (saved-routes.ts).
 * Order of checks on realtime: body → key (401) → parameters and saved ids (422) → injected answer
 * faults (503/502/500/drop/429 burst) → credits (402) → concurrency (429) → fetch, answered at once or
 * as a task.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { checkScrapeParams, errorMessage, type Mode } from "../common/index.js";
import type { EmulatorContext } from "./context.js";
import { checkCrawl, crawlRefusal, crawlTaskBody, runCrawl } from "./crawl.js";
import { answerMap, answerSearch, siteBase } from "./discovery.js";
import {
	dropConnection,
	invalidParamsBody,
	isTruthy,
	queryToObject,
	readBody,
	sendBody,
	sendJson,
	timestamp,
} from "./http-io.js";
import type { KeyPlace, LedgerEndpoint, LedgerEntry } from "./ledger.js";
import { resolveSavedReferences } from "./saved-references.js";
import { answerSaved, matchSavedRoute, type SavedRoute } from "./saved-routes.js";
import type { FaultRule } from "./scenario.js";
import { serviceExtraction } from "./scheme-extract.js";
import { type RenderOptions, readRenderOptions, renderContent } from "./scrape-render.js";
import type { ScrapeOutcome } from "./scrape-run.js";
import { rateLimitedBody, tryStartScrape } from "./scrape-start.js";
import { toTaskResult } from "./task-result.js";
import type { Task } from "./tasks.js";

/** Largest JSON body accepted, bytes. */
const MAX_BODY_BYTES = 1024 * 1024;

type Params = Record<string, unknown>;

interface Exchange {
	readonly ctx: EmulatorContext;
	readonly req: IncomingMessage;
	readonly res: ServerResponse;
	readonly entry: LedgerEntry;
	key: string | null;
	mode: string | undefined;
}

/** `path` is the part after `/api/v1`. */
export async function handleScraperRequest(
	ctx: EmulatorContext,
	req: IncomingMessage,
	res: ServerResponse,
	path: string,
	query: URLSearchParams,
): Promise<void> {
	const method = req.method ?? "GET";
	const route = matchRoute(path);
	const entry = ctx.ledger.open(route?.endpoint ?? "unknown", method, `/api/v1${path}`);
	const ex: Exchange = { ctx, req, res, entry, key: null, mode: undefined };
	if (!route) {
		answerError(ex, 404, "Not found", `No endpoint ${method} /api/v1${path}`);
		return;
	}
	if (!route.methods.includes(method)) {
		answerError(ex, 405, "Method not allowed", `${route.endpoint} accepts ${route.methods.join(", ")}`, {
			allow: route.methods.join(", "),
		});
		return;
	}
	let body: Params | null = null;
	if (method === "POST" || method === "PUT") {
		const parsed = await readJsonBody(ex);
		if (parsed === undefined) return;
		body = parsed;
	}
	if (!authenticate(ex, query, body)) return;
	switch (route.endpoint) {
		case "realtime":
			await handleRealtime(ex, method === "POST" ? withoutKey(body ?? {}) : withoutKey(queryToObject(query)));
			return;
		case "task":
			answerTask(ex, route.taskId ?? "");
			return;
		case "health":
			answer(ex, 200, { success: true });
			return;
		case "crawl":
			await handleCrawl(ex, withoutKey(body ?? {}));
			return;
		case "crawl-task": {
			const job = ctx.crawls.get(ex.key as string, route.taskId ?? "");
			ex.entry.taskId = route.taskId;
			if (!job) {
				answerError(
					ex,
					404,
					"Task not found",
					`No crawl task ${route.taskId ?? ""} for this key (unknown, another key's, or expired)`,
				);
				return;
			}
			answer(ex, 200, crawlTaskBody(job));
			return;
		}
		case "map":
		case "search": {
			const params = withoutKey(body ?? {});
			const balance = ex.ctx.credits.available;
			const outcome =
				route.endpoint === "map"
					? await answerMap(params, ex.ctx.signal, balance)
					: answerSearch(params, ex.ctx.searchSite, balance);
			if (outcome.credits > 0) {
				ex.ctx.credits.settle(0, outcome.credits);
				ex.ctx.ledger.charge(ex.entry, outcome.credits);
			}
			answer(ex, outcome.status, outcome.body, undefined, outcome.credits);
			return;
		}
		default: {
			if (!route.saved) {
				answerError(ex, 404, "Not found", `No endpoint ${method} /api/v1${path}`);
				return;
			}
			const saved = await answerSaved(route.saved, {
				ctx,
				method,
				id: route.saved.id,
				body: withoutKey(body ?? {}),
				query,
				key: ex.key as string,
				entry,
			});
			answer(ex, saved.status, saved.body, saved.modeUsed, saved.creditsUsed ?? 0);
		}
	}
}

/** `POST /scraper/crawl`: 422 for bad parameters, 402 when not even one page can be paid, else the pages as tasks. */
async function handleCrawl(ex: Exchange, params: Params): Promise<void> {
	const { ctx, entry } = ex;
	entry.params = params;
	const checked = checkCrawl(params, ctx);
	if ("problems" in checked) {
		answer(ex, 422, invalidParamsBody(checked.problems));
		return;
	}
	const { plan } = checked;
	entry.url = siteBase(plan.domain);
	entry.mode = plan.mode;
	const refusal = crawlRefusal(ctx, plan);
	if (refusal) {
		answer(ex, 402, refusal);
		return;
	}
	const key = ex.key as string;
	if (!isTruthy(params.async)) {
		answer(ex, 200, await runCrawl(ctx, key, plan, entry));
		return;
	}
	const job = ctx.crawls.create(key, "crawl_");
	entry.taskId = job.id;
	entry.taskStatus = "processing";
	void runCrawl(ctx, key, plan, entry).then(
		(body) => {
			ctx.crawls.finish(job, "completed", body);
			entry.taskStatus = "completed";
		},
		(error: unknown) => {
			ctx.crawls.finish(job, "failed", { success: false, error: "Crawl failed", message: errorMessage(error) });
			entry.taskStatus = "failed";
		},
	);
	answer(ex, 202, {
		success: true,
		task_id: job.id,
		status: "processing",
		message: "Crawl submitted. Use task_id to check status.",
		check_url: `/api/v1/scraper/crawl/tasks/${job.id}`,
		timestamp: timestamp(),
	});
}

interface Route {
	readonly endpoint: LedgerEndpoint;
	readonly methods: readonly string[];
	readonly taskId?: string;
	/** An `/account/…` route. */
	readonly saved?: SavedRoute;
}

const TASK_PREFIX = "/scraper/tasks/";
const CRAWL_TASK_PREFIX = "/scraper/crawl/tasks/";

function matchRoute(path: string): Route | null {
	const saved = matchSavedRoute(path);
	if (saved) return { endpoint: saved.endpoint, methods: saved.methods, saved };
	if (path === "/scraper/realtime") return { endpoint: "realtime", methods: ["GET", "POST"] };
	if (path === "/scraper/crawl") return { endpoint: "crawl", methods: ["POST"] };
	if (
		path.startsWith(CRAWL_TASK_PREFIX) &&
		path.length > CRAWL_TASK_PREFIX.length &&
		!path.includes("/", CRAWL_TASK_PREFIX.length)
	) {
		return {
			endpoint: "crawl-task",
			methods: ["GET"],
			taskId: decodeURIComponent(path.slice(CRAWL_TASK_PREFIX.length)),
		};
	}
	if (path === "/scraper/health") return { endpoint: "health", methods: ["GET", "POST"] };
	if (path === "/scraper/map") return { endpoint: "map", methods: ["POST"] };
	if (path === "/scraper/search") return { endpoint: "search", methods: ["POST"] };
	if (path.startsWith(TASK_PREFIX) && path.length > TASK_PREFIX.length && !path.includes("/", TASK_PREFIX.length)) {
		return { endpoint: "task", methods: ["GET"], taskId: decodeURIComponent(path.slice(TASK_PREFIX.length)) };
	}
	return null;
}

/** The parsed JSON object body, or undefined after answering 400. */
async function readJsonBody(ex: Exchange): Promise<Params | null | undefined> {
	let raw: Buffer;
	try {
		raw = await readBody(ex.req, MAX_BODY_BYTES);
	} catch (error) {
		answerError(ex, 400, "Invalid request body", errorMessage(error));
		return undefined;
	}
	if (raw.length === 0) return {};
	let value: unknown;
	try {
		value = JSON.parse(raw.toString("utf8"));
	} catch (error) {
		answerError(ex, 400, "Invalid JSON body", `The request body is not valid JSON: ${errorMessage(error)}`);
		return undefined;
	}
	if (value === null || typeof value !== "object" || Array.isArray(value)) {
		answerError(ex, 400, "Invalid JSON body", "The request body must be a JSON object of parameters");
		return undefined;
	}
	return value as Params;
}

/**
 * The key is taken from the first place that has one, in the spec's order: query `api_key`, header
 * `x-api-key`, body `api_key` (docs/service.md, "Addresses and keys"). The header `x-apikey` of the account endpoints is not read.
 */
function authenticate(ex: Exchange, query: URLSearchParams, body: Params | null): boolean {
	let place: KeyPlace | null = null;
	let key: unknown;
	const fromQuery = query.get("api_key");
	const fromHeader = ex.req.headers["x-api-key"];
	if (fromQuery) {
		place = "query";
		key = fromQuery;
	} else if (fromHeader) {
		place = "header";
		key = fromHeader;
	} else if (body && body.api_key !== undefined && body.api_key !== "") {
		place = "body";
		key = body.api_key;
	}
	ex.entry.keyPlace = place;
	if (typeof key === "string" && ex.ctx.config.hasScraperAccess && ex.ctx.scraperKeys.has(key)) {
		ex.key = key;
		ex.entry.key = key;
		return true;
	}
	const message =
		place === null
			? "No API key: send it in the x-api-key header, the api_key query parameter or the api_key field of a POST body"
			: `The API key given in the ${place === "query" ? "api_key query parameter" : place === "header" ? "x-api-key header" : "api_key body field"} is not valid`;
	answerError(ex, 401, "Invalid API key", message);
	return false;
}

function withoutKey(params: Params): Params {
	if (!("api_key" in params)) return params;
	const { api_key: _key, ...rest } = params;
	return rest;
}

async function handleRealtime(ex: Exchange, request: Params): Promise<void> {
	const { ctx, entry } = ex;
	entry.params = request;
	const resolved = resolveSavedReferences(ctx.saved, request);
	const params = resolved.params;
	if (typeof params.url === "string") entry.url = params.url;
	if (typeof params.mode === "string" || params.mode === undefined) entry.mode = (params.mode as string) ?? "auto";
	const problems = [
		...checkScrapeParams(params).map((problem) => `${problem.param}: ${problem.problem}`),
		...resolved.problems,
	];
	if (problems.length > 0) {
		answer(ex, 422, invalidParamsBody(problems));
		return;
	}
	const key = ex.key as string;
	const url = params.url as string;
	const mode = (params.mode ?? "auto") as Mode;
	ex.mode = mode;
	if (ctx.faults.takeBurst(key)) {
		entry.fault = "rate_limit";
		answerRateLimited(ex, key, "fault");
		return;
	}
	const fault = ctx.faults.pick("scraper", "answer", url);
	if (fault && applyAnswerFault(ex, fault, key)) return;

	const started = tryStartScrape(ctx, {
		key,
		url,
		mode,
		datacenter: params.proxy_type === "datacenter",
		extraHeaders: extraHeaders(params),
		entry,
	});
	if (started.kind === "refused") {
		answer(ex, started.status, started.body);
		return;
	}
	const { job } = started;
	const render = readRenderOptions(params, isTruthy);

	if (isTruthy(params.async)) {
		const task = startTask(ex, job, url, mode, render);
		answerTaskRecord(ex, 202, task, "Task submitted. Use task_id to check status.");
		return;
	}
	let timer: NodeJS.Timeout | undefined;
	const timedOut = new Promise<null>((resolve) => {
		timer = setTimeout(resolve, ctx.config.timeoutMs, null);
	});
	const first = await Promise.race([job, timedOut]);
	clearTimeout(timer);
	if (first === null) {
		const task = startTask(ex, job, url, mode, render);
		answerTaskRecord(
			ex,
			ctx.config.timeoutStatus,
			task,
			"Task is taking longer than expected. Use task_id to check status.",
		);
		return;
	}
	answerOutcome(ex, first, url, render);
}

/** Injected faults that decide the answer outright; false when the fault is not of that phase. */
function applyAnswerFault(ex: Exchange, fault: FaultRule, key: string): boolean {
	ex.entry.fault = fault.kind;
	switch (fault.kind) {
		case "unavailable":
			answerError(ex, 503, "Service unavailable", "The service is temporarily unavailable; retry with backoff");
			return true;
		case "bad_gateway":
			answerError(ex, 502, "Bad gateway", "An upstream gateway failed; retry with backoff");
			return true;
		case "server_error":
			answerError(ex, 500, "Internal server error", fault.message ?? "An internal error occurred; retry with backoff");
			return true;
		case "drop_connection":
			ex.ctx.ledger.finish(ex.entry, 0);
			dropConnection(ex.req, ex.res);
			return true;
		case "rate_limit":
			ex.ctx.faults.startBurst(key, fault.count);
			answerRateLimited(ex, key, "fault");
			return true;
		case "slow":
		case "scraping_error":
		case "dns_failure":
			return false;
		default: {
			const unreachable: never = fault.kind;
			throw new Error(`unknown fault ${String(unreachable)}`);
		}
	}
}

function answerRateLimited(ex: Exchange, key: string, cause: "concurrency" | "fault"): void {
	answer(ex, 429, rateLimitedBody(ex.ctx, key, cause));
}

function extraHeaders(params: Params): Record<string, string> | null {
	const headers = params.additional_headers;
	if (headers === null || typeof headers !== "object" || Array.isArray(headers)) return null;
	const result: Record<string, string> = {};
	for (const [name, value] of Object.entries(headers)) {
		if (typeof value === "string") result[name.toLowerCase()] = value;
	}
	return result;
}

function answerOutcome(ex: Exchange, outcome: ScrapeOutcome, url: string, render: RenderOptions): void {
	const { ctx, entry } = ex;
	switch (outcome.kind) {
		case "ok": {
			const rendered = renderContent(outcome.body, outcome.contentType, render);
			const headers = scraperHeaders(ex, outcome.creditsUsed, outcome.modeUsed);
			if (outcome.finalUrl !== outcome.requestedUrl) headers[FINAL_URL_HEADER] = outcome.finalUrl;
			if (render.delivery === "json") {
				const body: Record<string, unknown> = {
					success: true,
					url,
					title: rendered.title,
					status_code: outcome.statusCode,
					credits_used: outcome.creditsUsed,
					mode_used: outcome.modeUsed,
				};
				if (render.includeContent) body.content = rendered.text;
				if (render.extraction) Object.assign(body, serviceExtraction(rendered.text, rendered.title, render.extraction));
				ctx.ledger.finish(entry, 200);
				sendJson(ex.res, 200, body, headers);
				return;
			}
			ctx.ledger.finish(entry, 200);
			sendBody(ex.res, 200, rendered.body, rendered.contentType, headers);
			return;
		}
		case "target-status": {
			const headers = scraperHeaders(ex, 0, outcome.modeUsed);
			headers["x-target-status"] = String(outcome.statusCode);
			ctx.ledger.finish(entry, outcome.statusCode);
			sendBody(ex.res, outcome.statusCode, outcome.body, outcome.contentType, headers);
			return;
		}
		case "scraping-error":
			answer(
				ex,
				500,
				{
					success: false,
					error: "Scraping error",
					message: outcome.message,
					url,
					credits_used: outcome.creditsUsed ?? 0,
					timestamp: timestamp(),
				},
				outcome.modeUsed,
				outcome.creditsUsed ?? 0,
			);
			return;
		default: {
			const unreachable: never = outcome;
			throw new Error(`unknown outcome ${String(unreachable)}`);
		}
	}
}

/** Turn a running scrape into a task; its outcome lands in the task store when the fetch ends. */
function startTask(ex: Exchange, job: Promise<ScrapeOutcome>, url: string, mode: string, render: RenderOptions): Task {
	const { ctx, entry } = ex;
	const task = ctx.tasks.create(ex.key as string, url, mode);
	entry.taskId = task.id;
	entry.taskStatus = "processing";
	void job
		.then((outcome) => {
			const result = toTaskResult(ctx, outcome, render);
			ctx.tasks.finish(task, result);
			entry.taskStatus = result.status;
		})
		.catch((error: unknown) => {
			ctx.tasks.finish(task, {
				status: "failed",
				error: "Scraping error",
				message: errorMessage(error),
				modeUsed: mode,
			});
			entry.taskStatus = "failed";
		});
	return task;
}

function answerTaskRecord(ex: Exchange, status: number, task: Task, message: string): void {
	answer(ex, status, {
		success: true,
		task_id: task.id,
		status: "processing",
		message,
		check_url: `/api/v1/scraper/tasks/${task.id}`,
		timestamp: timestamp(),
	});
}

function answerTask(ex: Exchange, taskId: string): void {
	const task = ex.ctx.tasks.get(ex.key as string, taskId);
	ex.entry.taskId = taskId;
	if (!task) {
		answerError(ex, 404, "Task not found", `No task ${taskId} for this key (unknown, another key's, or expired)`);
		return;
	}
	ex.entry.url = task.url;
	ex.entry.taskStatus = task.status;
	ex.mode = task.mode;
	const result = task.result;
	if (result === null) {
		answer(ex, 200, {
			success: true,
			task_id: task.id,
			status: "processing",
			message: "Task is still processing. Check again shortly.",
			check_url: `/api/v1/scraper/tasks/${task.id}`,
			timestamp: timestamp(),
		});
		return;
	}
	ex.entry.modeUsed = result.modeUsed;
	if (result.status === "completed") {
		answer(
			ex,
			200,
			{
				success: true,
				task_id: task.id,
				status: "completed",
				url: task.url,
				...(result.title !== undefined ? { title: result.title } : {}),
				status_code: result.statusCode,
				mode_used: result.modeUsed,
				credits_used: result.creditsUsed,
				credits_remaining: result.creditsRemaining,
				content: result.content,
				...result.extraction,
				timestamp: timestamp(),
			},
			result.modeUsed,
			result.creditsUsed,
			result.finalUrl !== undefined ? { [FINAL_URL_HEADER]: result.finalUrl } : undefined,
		);
		return;
	}
	const body: Record<string, unknown> = {
		success: false,
		task_id: task.id,
		status: "failed",
		error: result.error,
		message: result.message,
		url: task.url,
		credits_used: result.creditsUsed ?? 0,
		timestamp: timestamp(),
	};
	const extra: OutgoingHttpHeaders = {};
	if (result.statusCode !== undefined) {
		body.status_code = result.statusCode;
		extra["x-target-status"] = String(result.statusCode);
	}
	answer(ex, 200, body, result.modeUsed, result.creditsUsed ?? 0, extra);
}

/**
 * Names the page's address after the target's redirects, when they moved it: a crawl then counts that
 * address as fetched. An emulator extension — the public service documents no such header, so the
 * client treats it as optional.
 */
const FINAL_URL_HEADER = "x-final-url";

/** The headers of every scraper answer (docs/service.md, "Answers and headers"). */
function scraperHeaders(ex: Exchange, creditsUsed: number, modeUsed?: string): OutgoingHttpHeaders {
	const { ctx } = ex;
	const headers: OutgoingHttpHeaders = {
		"x-credits-used": String(creditsUsed),
		"x-credits-remaining": String(ctx.credits.balance),
		"x-ratelimit-limit": String(ctx.slots.limit),
		"x-ratelimit-remaining": String(ctx.slots.remaining(ex.key)),
	};
	const mode = modeUsed ?? ex.mode;
	if (mode !== undefined) headers["x-mode-used"] = mode;
	return headers;
}

function answer(
	ex: Exchange,
	status: number,
	body: unknown,
	modeUsed?: string,
	creditsUsed = 0,
	extra?: OutgoingHttpHeaders,
): void {
	ex.ctx.ledger.finish(ex.entry, status);
	sendJson(ex.res, status, body, { ...scraperHeaders(ex, creditsUsed, modeUsed), ...extra });
}

function answerError(ex: Exchange, status: number, error: string, message: string, extra?: OutgoingHttpHeaders): void {
	answer(ex, status, { success: false, error, message, timestamp: timestamp() }, undefined, 0, extra);
}
