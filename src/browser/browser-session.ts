import type { Browser, Page } from "playwright-core";
import type { Clock } from "../shared/index.js";
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
	readonly clock?: Clock;
}

/**
 * The address a session connects to, as the service documents it: the key and the settings in the
 * query string (facts §8). It carries the key, so it is passed to the CDP client and nowhere else.
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

/**
 * One target in one fresh browser session: connect, load the page, run the steps, read the HTML,
 * close. Every operation is bounded by what is left of the session. Throws `BrowserSessionError`.
 */
export async function runBrowserSession(options: RunSessionOptions): Promise<SessionPage> {
	const { access, session } = options;
	const clock = options.clock ?? Date.now;
	const deadline = clock() + access.maxSessionSeconds * 1000 - sessionMarginMs(access.maxSessionSeconds);
	const left = (what: string) => {
		const ms = deadline - clock();
		if (ms <= 0) {
			throw new BrowserSessionError(
				"session_length",
				`${what}: the session's ${access.maxSessionSeconds} s (less a safety margin) ran out`,
			);
		}
		return ms;
	};
	if (options.signal.aborted) throw new BrowserSessionError("lost", "stopped before the session started");

	// Loaded on the first session only: playwright-core is ~14 MB of source held in memory, which a
	// run without browser_session: targets should not carry.
	const { chromium } = await import("playwright-core");
	let browser: Browser;
	try {
		browser = await chromium.connectOverCDP(sessionAddress(access, session), { timeout: left("connecting") });
	} catch (error) {
		if (error instanceof BrowserSessionError) throw error;
		const message = sessionMessage(error, access.key);
		throw new BrowserSessionError(connectFailureKind(message), `browser session: ${message}`);
	}
	const onAbort = () => void browser.close().catch(() => undefined);
	options.signal.addEventListener("abort", onAbort, { once: true });
	try {
		const context = browser.contexts()[0] ?? (await browser.newContext());
		const page = await context.newPage();
		let response: Awaited<ReturnType<Page["goto"]>>;
		try {
			response = await page.goto(options.url, { timeout: left("loading the page"), waitUntil: "load" });
		} catch (error) {
			throw classify(error, "loading the page", "navigation");
		}
		const evaluated: unknown[] = [];
		const steps = session.steps ?? [];
		for (let index = 0; index < steps.length; index += 1) {
			const step = steps[index]!;
			const name = `step ${index + 1} (${Object.keys(step)[0]})`;
			try {
				const value = await runStep(page, step, left(name));
				if (value !== NO_VALUE) evaluated.push(value);
			} catch (error) {
				throw classify(error, name, "step");
			}
		}
		return { httpStatus: response?.status() ?? null, finalUrl: page.url(), html: await page.content(), evaluated };
	} catch (error) {
		if (error instanceof BrowserSessionError) throw error;
		throw classify(error, "in the session", "lost");
	} finally {
		options.signal.removeEventListener("abort", onAbort);
		await browser.close().catch(() => undefined);
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

const NO_VALUE = Symbol("no value");

/** One step; every wait bounded by `timeoutMs`. Returns the value of an `evaluate`, else `NO_VALUE`. */
async function runStep(page: Page, step: Readonly<Record<string, unknown>>, timeoutMs: number): Promise<unknown> {
	if (typeof step.click === "string") await page.click(step.click, { timeout: timeoutMs });
	else if (Array.isArray(step.fill))
		await page.fill(String(step.fill[0]), String(step.fill[1]), { timeout: timeoutMs });
	else if (typeof step.press === "string") await page.keyboard.press(step.press);
	else if (typeof step.wait_for === "string")
		await page.waitForSelector(step.wait_for, { state: "visible", timeout: timeoutMs });
	else if (typeof step.wait === "number") {
		if (step.wait > timeoutMs) {
			throw new BrowserSessionError(
				"session_length",
				`wait ${step.wait} ms does not fit in the session's remaining ${timeoutMs} ms`,
			);
		}
		await page.waitForTimeout(step.wait);
	} else if (step.scroll !== undefined) {
		const to = step.scroll;
		await page.evaluate(
			(where) =>
				where === "top"
					? window.scrollTo(0, 0)
					: where === "bottom"
						? window.scrollTo(0, document.documentElement.scrollHeight)
						: window.scrollBy(0, Number(where)),
			to as string | number,
		);
	} else if (typeof step.evaluate === "string") {
		// Bounded like every other step: a page script that never settles must not hold the session.
		return await Promise.race([
			page.evaluate(step.evaluate),
			new Promise((_, reject) =>
				setTimeout(() => reject(new Error(`evaluate did not finish in ${timeoutMs} ms`)), timeoutMs).unref(),
			),
		]);
	}
	return NO_VALUE;
}
