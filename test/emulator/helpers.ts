import { onTestFinished } from "vitest";
import {
	type DemoSite,
	type DemoSiteOptions,
	type Emulator,
	type StartEmulatorOptions,
	startDemoSite,
	startEmulator,
} from "../../src/emulator/index.js";

/** An emulator closed after the test. */
export async function useEmulator(options: StartEmulatorOptions = {}): Promise<Emulator> {
	const emulator = await startEmulator(options);
	onTestFinished(() => emulator.close());
	return emulator;
}

/** A demo site closed after the test. */
export async function useDemoSite(options: DemoSiteOptions = {}): Promise<DemoSite> {
	const site = await startDemoSite(options);
	onTestFinished(() => site.close());
	return site;
}

export interface Answer {
	readonly status: number;
	readonly headers: Headers;
	readonly text: string;
	/** The body parsed as JSON, or undefined when it is not JSON. */
	readonly json: Record<string, unknown>;
}

export async function call(url: string, init?: RequestInit): Promise<Answer> {
	const response = await fetch(url, init);
	const text = await response.text();
	let json: Record<string, unknown>;
	try {
		json = JSON.parse(text) as Record<string, unknown>;
	} catch {
		json = undefined as unknown as Record<string, unknown>;
	}
	return { status: response.status, headers: response.headers, text, json };
}

/** GET realtime with the key in the `x-api-key` header. */
export function scrapeGet(emulator: Emulator, params: Record<string, string>, key = emulator.scraperKey) {
	const query = new URLSearchParams(params);
	return call(`${emulator.scraperUrl}/scraper/realtime?${query}`, { headers: { "x-api-key": key } });
}

/** POST realtime with a JSON body and the key in the `x-api-key` header. */
export function scrapePost(
	emulator: Emulator,
	body: Record<string, unknown>,
	key: string | null = emulator.scraperKey,
) {
	return call(`${emulator.scraperUrl}/scraper/realtime`, {
		method: "POST",
		headers: { "content-type": "application/json", ...(key === null ? {} : { "x-api-key": key }) },
		body: JSON.stringify(body),
	});
}

export function account(
	emulator: Emulator,
	path: string,
	query: Record<string, string> = {},
	key = emulator.accountKey,
) {
	const search = new URLSearchParams(query).toString();
	return call(`${emulator.apiUrl}${path}${search ? `?${search}` : ""}`, { headers: { "x-apikey": key } });
}

export function pollTask(emulator: Emulator, taskId: string, key = emulator.scraperKey) {
	return call(`${emulator.scraperUrl}/scraper/tasks/${taskId}`, { headers: { "x-api-key": key } });
}

export function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll until `check` is truthy or `timeoutMs` passes. */
export async function waitFor<T>(
	check: () => Promise<T> | T,
	timeoutMs = 2000,
	intervalMs = 10,
): Promise<NonNullable<T>> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await check();
		if (value) return value as NonNullable<T>;
		if (Date.now() > deadline) throw new Error("waitFor: condition not met in time");
		await delay(intervalMs);
	}
}

/** An `/api/v1/account/…` call with the scraper key in `x-api-key` and, for POST and PUT, a JSON body. */
export function savedCall(
	emulator: Emulator,
	method: "GET" | "POST" | "PUT" | "DELETE",
	path: string,
	body?: Record<string, unknown>,
	key: string | null = emulator.scraperKey,
) {
	return call(`${emulator.scraperUrl}/account${path}`, {
		method,
		headers: { "content-type": "application/json", ...(key === null ? {} : { "x-api-key": key }) },
		...(body === undefined ? {} : { body: JSON.stringify(body) }),
	});
}
