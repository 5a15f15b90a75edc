import type { Browser, Page } from "playwright-core";
import type { Clock } from "../common/index.js";
import { BrowserSessionError, connectFailureKind, isSessionLost, sessionMessage } from "./session-errors.js";

/** The account's access to the browser service (GET /public/browser), as the runner uses it. */
export interface BrowserServiceAccess {
	/** WebSocket address of the service (`endpoint_url`), without the key. */
	readonly endpointUrl: string;
	readonly key: string;
	/** Sessions open at once, at most. */
	readonly concurrency: number;
	/** A session is ended by the service after this long. */
	readonly maxSessionSeconds: number;
}

/** The session settings and steps of a target (the job file's `browser_session:`, validated). */
export interface SessionSpec {
	readonly os?: string;
	readonly proxy_country?: string;
	readonly adblock?: boolean;
	readonly solve_cloudflare?: boolean;
	readonly steps?: ReadonlyArray<Readonly<Record<string, unknown>>>;
	/** Bound of each step and CDP call, as written (`15s`). */
	readonly step_timeout?: string;
}

export interface SessionPage {
	/** The main document's status, when the browser saw one. */
	readonly httpStatus: number | null;
	readonly finalUrl: string;
	/** The page's HTML after the last step. */
	readonly html: string;
	/** Each `evaluate` step's JSON value, in order. */
	readonly evaluated: unknown[];
}

export interface RunSessionOptions {
	readonly access: BrowserServiceAccess;
	readonly session: SessionSpec;
	readonly url: string;
	/** Closes the session at once (a stop past its grace period). */
	readonly signal: AbortSignal;
	/** Bound of each step and each CDP call (`browser_session.step_timeout`). @default 15,000 */
	readonly stepTimeoutMs?: number;
	readonly clock?: Clock;
}

/**
 * The address a session connects to, as the service documents it: the key and the settings in the
 * query string (docs/service.md, "The remote browser"). It carries the key, so it is passed to the CDP client and nowhere else.
 */
export function sessionAddress(access: BrowserServiceAccess, session: SessionSpec): string {
	const address = new URL(access.endpointUrl);
	address.searchParams.set("key", access.key);
	if (session.os !== undefined) address.searchParams.set("os", session.os);
	if (session.proxy_country !== undefined)
		address.searchParams.set("proxy_country", session.proxy_country.toUpperCase());
	if (session.adblock !== undefined) address.searchParams.set("adblock", String(session.adblock));
	if (session.solve_cloudflare !== undefined)
		address.searchParams.set("solve_cloudflare", String(session.solve_cloudflare));
	return address.href;
}

/**
 * How much of a session's length is kept back: the session is closed by us this long before the
 * service would end it (10 %, between 1 and 5 s), so a target never loses its page to the cut.
 */
export function sessionMarginMs(maxSessionSeconds: number): number {
	return Math.min(5000, Math.max(1000, maxSessionSeconds * 100));
}

/** Session lengths the service reports are clamped to this (a day): no timer may overflow. */
export const MAX_SESSION_SECONDS = 86_400;
/** `browser_session.step_timeout` when the job sets none. */
export const DEFAULT_STEP_TIMEOUT_MS = 15_000;
/** Largest `evaluate` value kept, as JSON text (docs/guides/browser.md). */
export const MAX_EVALUATE_JSON_CHARS = 1_000_000;
/** How long closing a session may take before it is left to the service. */
const CLOSE_TIMEOUT_MS = 5_000;

/**
 * One target in one fresh browser session: connect, load the page, run the steps, read the HTML,
 * close. Every await on the service is bounded: by `step_timeout` and by what is left of the session
 * (a CDP endpoint that accepts and stays silent ends the session within its bound). Throws
 * `BrowserSessionError`.
 */
export async function runBrowserSession(options: RunSessionOptions): Promise<SessionPage> {
	const { access, session } = options;
	const clock = options.clock ?? Date.now;
	if (options.signal.aborted) throw new BrowserSessionError("lost", "stopped before the session started");
	// Loaded on the first session only: playwright-core is ~14 MB of source held in memory, which a
	// run without browser_session: targets should not carry. Loaded before the session's clock starts:
	// the service counts from the connection, and on a busy machine the first load takes seconds.
	const { chromium } = await import("playwright-core");
	const sessionSeconds = Math.min(Math.max(access.maxSessionSeconds, 0), MAX_SESSION_SECONDS);
	const deadline = clock() + sessionSeconds * 1000 - sessionMarginMs(sessionSeconds);
	const stepTimeoutMs = options.stepTimeoutMs ?? DEFAULT_STEP_TIMEOUT_MS;
	const left = (what: string) => {
		const ms = deadline - clock();
		if (ms <= 0) {
			throw new BrowserSessionError(
				"session_length",
				`${what}: the session's ${sessionSeconds} s (less a safety margin) ran out`,
			);
		}
		return ms;
	};
	/** The bound of one operation: the step timeout, within what is left of the session. */
	const bound = (what: string) => Math.min(stepTimeoutMs, left(what));
	let browser: Browser;
	try {
		// Connecting includes the service starting a browser: bounded by the session's length, not a step's.
		const ms = left("connecting");
		browser = await within(
			chromium.connectOverCDP(sessionAddress(access, session), { timeout: ms }),
			ms,
			"connecting",
			"lost",
		);
	} catch (error) {
		if (error instanceof BrowserSessionError) throw error;
		const message = sessionMessage(error, access.key);
		throw new BrowserSessionError(connectFailureKind(message), `browser session: ${message}`);
	}
	const onAbort = () => void browser.close().catch(() => undefined);
	options.signal.addEventListener("abort", onAbort, { once: true });
	try {
		const call = <T>(promise: Promise<T>, what: string) => within(promise, bound(what), what, "lost");
		const context = browser.contexts()[0] ?? (await call(browser.newContext(), "opening a browser context"));
		const page = await call(context.newPage(), "opening a page");
		let response: Awaited<ReturnType<Page["goto"]>>;
		try {
			const ms = left("loading the page");
			response = await within(
				page.goto(options.url, { timeout: ms, waitUntil: "load" }),
				ms,
				"loading the page",
				"navigation",
			);
		} catch (error) {
			throw classify(error, "loading the page", "navigation");
		}
		const evaluated: unknown[] = [];
		const steps = session.steps ?? [];
		for (let index = 0; index < steps.length; index += 1) {
			const step = steps[index]!;
			const name = `step ${index + 1} (${Object.keys(step)[0]})`;
			try {
				const value = await runStep(page, step, name, bound(name), left(name));
				if (value !== NO_VALUE) evaluated.push(value);
			} catch (error) {
				throw classify(error, name, "step");
			}
		}
		const html = await call(page.content(), "reading the page");
		return { httpStatus: response?.status() ?? null, finalUrl: page.url(), html, evaluated };
	} catch (error) {
		if (error instanceof BrowserSessionError) throw error;
		throw classify(error, "in the session", "lost");
	} finally {
		options.signal.removeEventListener("abort", onAbort);
		await within(browser.close(), CLOSE_TIMEOUT_MS, "closing the session", "lost").catch(() => undefined);
	}

	function classify(error: unknown, what: string, otherwise: "navigation" | "step" | "lost"): BrowserSessionError {
		if (error instanceof BrowserSessionError) return error;
		const message = sessionMessage(error, access.key);
		if (options.signal.aborted || isSessionLost(message)) return new BrowserSessionError("lost", `${what}: ${message}`);
		if (deadline - clock() <= 0) {
			return new BrowserSessionError("session_length", `${what}: the session's time ran out (${message})`);
		}
		return new BrowserSessionError(otherwise, `${what}: ${message}`);
	}
}

/**
 * `promise`, or a `BrowserSessionError` of `kind` once `ms` have passed: Playwright's own timeouts
 * do not cover every call (newContext, newPage, content, close, keyboard), and a CDP endpoint that
 * accepts and stays silent would otherwise hold the session, and the run, forever.
 */
async function within<T>(
	promise: Promise<T>,
	ms: number,
	what: string,
	kind: "lost" | "step" | "navigation",
): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const expired = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new BrowserSessionError(kind, `${what}: no answer within ${ms} ms`)), ms);
	});
	try {
		return await Promise.race([promise, expired]);
	} finally {
		clearTimeout(timer);
		// The loser may still settle (or reject) later: nobody waits for it any more.
		promise.catch(() => undefined);
	}
}

const NO_VALUE = Symbol("no value");

/** What the page says of an `evaluate` value: its JSON text, or why there is none. */
interface EvaluateAnswer {
	json?: string;
	tooLong?: number;
	notJson?: string;
}

/**
 * One step, bounded by `timeoutMs` (step_timeout within the session's remaining time); a `wait` is
 * bounded by the session alone (`sessionLeftMs`): it is a wait the job asked for. Returns the value of
 * an `evaluate`, else `NO_VALUE`.
 */
async function runStep(
	page: Page,
	step: Readonly<Record<string, unknown>>,
	name: string,
	timeoutMs: number,
	sessionLeftMs: number,
): Promise<unknown> {
	const bounded = <T>(promise: Promise<T>) => within(promise, timeoutMs, name, "step");
	if (typeof step.click === "string") await bounded(page.click(step.click, { timeout: timeoutMs }));
	else if (Array.isArray(step.fill))
		await bounded(page.fill(String(step.fill[0]), String(step.fill[1]), { timeout: timeoutMs }));
	else if (typeof step.press === "string") await bounded(page.keyboard.press(step.press));
	else if (typeof step.wait_for === "string")
		await bounded(page.waitForSelector(step.wait_for, { state: "visible", timeout: timeoutMs }));
	else if (typeof step.wait === "number") {
		if (step.wait > sessionLeftMs) {
			throw new BrowserSessionError(
				"session_length",
				`wait ${step.wait} ms does not fit in the session's remaining ${sessionLeftMs} ms`,
			);
		}
		await page.waitForTimeout(step.wait);
	} else if (step.scroll !== undefined) {
		const to = step.scroll;
		await bounded(
			page.evaluate(
				(where) =>
					where === "top"
						? window.scrollTo(0, 0)
						: where === "bottom"
							? window.scrollTo(0, document.documentElement.scrollHeight)
							: window.scrollBy(0, Number(where)),
				to as string | number,
			),
		);
	} else if (typeof step.evaluate === "string") {
		return await bounded(evaluateAsJson(page, step.evaluate, name));
	}
	return NO_VALUE;
}

/**
 * An `evaluate` step's value as JSON: serialized in the page, so a cyclic value is an error there and
 * a huge one never crosses the wire (at most `MAX_EVALUATE_JSON_CHARS` does). `undefined` is null.
 */
async function evaluateAsJson(page: Page, expression: string, name: string): Promise<unknown> {
	// Evaluated, awaited and measured inside the page in one call: a handle to a primitive (a 150 MB string)
	// came over the wire whole before its size could be checked. The expression is evaluated as Playwright
	// evaluates a string (global eval, a promise awaited), so its meaning is unchanged.
	const answer = (await page.evaluate(`(async () => {
		let value = globalThis.eval(${JSON.stringify(expression)});
		if (value && typeof value === "object" && typeof value.then === "function") value = await value;
		try {
			const json = JSON.stringify(value);
			if (json === undefined) return { json: "null" };
			return json.length > ${MAX_EVALUATE_JSON_CHARS} ? { tooLong: json.length } : { json };
		} catch (error) {
			return { notJson: error instanceof Error ? error.message : String(error) };
		}
	})()`)) as EvaluateAnswer;
	if (answer.json !== undefined) return JSON.parse(answer.json) as unknown;
	if (answer.tooLong !== undefined) {
		throw new BrowserSessionError(
			"step",
			`${name}: its value is ${answer.tooLong} characters of JSON, above the ${MAX_EVALUATE_JSON_CHARS} kept`,
		);
	}
	throw new BrowserSessionError("step", `${name}: its value is not JSON (${String(answer.notJson).slice(0, 200)})`);
}
