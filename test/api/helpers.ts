/**
 * Shared set-up of the API client contract tests: the emulator, the demo site and small raw
 * `node:http` servers on 127.0.0.1 port 0, one injected undici pool per test file, all closed after
 * each test. Nothing here patches globals: the clients get the addresses and the dispatcher.
 */
import {
	createServer,
	request as httpRequest,
	type IncomingHttpHeaders,
	type IncomingMessage,
	type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import type { Dispatcher } from "undici";
import { expect, onTestFinished } from "vitest";
import {
	type AccountClient,
	type AccountClientOptions,
	createAccountClient,
	createDispatcher,
	createScraperClient,
	type RealtimeOutcome,
	type ScraperClient,
	type ScraperClientOptions,
	type TaskState,
} from "../../src/api/index.js";
import {
	type DemoSite,
	type Emulator,
	type ScenarioInput,
	startDemoSite,
	startEmulator,
} from "../../src/emulator/index.js";

/**
 * One keep-alive pool, as the runner would inject it: made once per test process (files that Vitest runs
 * in one worker share it, and it outlives them: a pool destroyed after one file would fail the next).
 * Idle sockets close after 1 s.
 */
export const dispatcher: Dispatcher = createDispatcher({ keepAliveTimeoutMs: 1000 });

// Each use* closes what it started when the running test finishes, last started first (the emulator
// before the demo site it fetches from): registered per test, so it holds in a worker shared by files.

export async function useDemoSite(): Promise<DemoSite> {
	const site = await startDemoSite();
	onTestFinished(() => site.close());
	return site;
}

export async function useEmulator(scenario: ScenarioInput = {}): Promise<Emulator> {
	const emulator = await startEmulator({ scenario });
	onTestFinished(() => emulator.close());
	return emulator;
}

export function accountClientFor(
	emulator: Pick<Emulator, "apiUrl" | "accountKey">,
	overrides: Partial<AccountClientOptions> = {},
): AccountClient {
	return createAccountClient({ accountKey: emulator.accountKey, baseUrl: emulator.apiUrl, dispatcher, ...overrides });
}

export function scraperClientFor(
	emulator: Pick<Emulator, "scraperUrl" | "scraperKey">,
	overrides: Partial<ScraperClientOptions> = {},
): ScraperClient {
	return createScraperClient({
		scraperKey: emulator.scraperKey,
		baseUrl: emulator.scraperUrl,
		dispatcher,
		...overrides,
	});
}

/** What a raw server saw of one request. */
export interface SeenRequest {
	readonly method: string;
	/** Path and query exactly as sent. */
	readonly url: string;
	readonly headers: IncomingHttpHeaders;
	readonly body: string;
}

export interface RawServer {
	/** `http://127.0.0.1:<port>` */
	readonly url: string;
	readonly port: number;
	readonly requests: SeenRequest[];
}

export type RawHandler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/**
 * A bare `node:http` server on 127.0.0.1 port 0 that answers whatever the test needs: the real
 * service's shapes the emulator never produces (docs/service.md, "Where the documentation is silent").
 */
export async function useRawServer(handler: RawHandler): Promise<RawServer> {
	const requests: SeenRequest[] = [];
	const server = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => {
			const body = Buffer.concat(chunks).toString("utf8");
			requests.push({ method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers, body });
			handler(req, res, body);
		});
	});
	const port = await listen(server);
	onTestFinished(
		() =>
			new Promise<void>((resolve) => {
				server.close(() => resolve());
				server.closeAllConnections();
			}),
	);
	return { url: `http://127.0.0.1:${port}`, port, requests };
}

/**
 * A pass-through proxy in front of `origin` that records every request line and header exactly as
 * the client sent it, so a test can prove what went into the URL and what went into headers.
 */
export async function useRecordingProxy(origin: string): Promise<RawServer> {
	const requests: SeenRequest[] = [];
	const server = createServer((req, res) => {
		requests.push({ method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers, body: "" });
		const upstream = httpRequest(
			`${origin}${req.url ?? "/"}`,
			{ method: req.method, headers: req.headers },
			(answer) => {
				res.writeHead(answer.statusCode ?? 502, answer.headers);
				answer.pipe(res);
			},
		);
		upstream.on("error", () => res.destroy());
		req.pipe(upstream);
	});
	const port = await listen(server);
	onTestFinished(
		() =>
			new Promise<void>((resolve) => {
				server.close(() => resolve());
				server.closeAllConnections();
			}),
	);
	return { url: `http://127.0.0.1:${port}`, port, requests };
}

function listen(server: ReturnType<typeof createServer>): Promise<number> {
	return new Promise((resolve, reject) => {
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			server.off("error", reject);
			resolve((server.address() as AddressInfo).port);
		});
	});
}

/** A loopback port nothing listens on (a server bound it, then closed). */
export async function closedPort(): Promise<number> {
	const server = createServer();
	const port = await listen(server);
	await new Promise<void>((resolve) => server.close(() => resolve()));
	return port;
}

/** Answer JSON with a status and optional extra headers. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
	const text = JSON.stringify(body);
	res.writeHead(status, {
		"content-type": "application/json",
		"content-length": Buffer.byteLength(text),
		...headers,
	});
	res.end(text);
}

/** The error a promise rejects with, checked to be an instance of `type`. */
export async function rejectionOf<E extends Error>(
	promise: Promise<unknown>,
	type: abstract new (...args: never[]) => E,
): Promise<E> {
	let outcome: unknown;
	try {
		outcome = await promise;
	} catch (error) {
		expect(error).toBeInstanceOf(type);
		return error as E;
	}
	throw new Error(`expected a rejection with ${type.name}, got ${JSON.stringify(outcome)?.slice(0, 200)}`);
}

/** Poll `task()` every few ms until it leaves `pending`, or fail after `timeoutMs`. */
export async function settledTask(
	client: ScraperClient,
	taskId: string,
	timeoutMs = 3000,
): Promise<{ final: TaskState; seen: TaskState["state"][] }> {
	const seen: TaskState["state"][] = [];
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const state = await client.task(taskId);
		seen.push(state.state);
		if (state.state !== "pending") return { final: state, seen };
		if (Date.now() > deadline) throw new Error(`task ${taskId} still pending after ${timeoutMs} ms`);
		await delay(10);
	}
}

export function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Assert a realtime outcome's kind and narrow it. */
export function expectOutcome<K extends RealtimeOutcome["kind"]>(
	outcome: RealtimeOutcome,
	kind: K,
): Extract<RealtimeOutcome, { kind: K }> {
	expect(outcome.kind).toBe(kind);
	return outcome as Extract<RealtimeOutcome, { kind: K }>;
}

/** Assert a task state and narrow it. */
export function expectState<S extends TaskState["state"]>(
	state: TaskState,
	wanted: S,
): Extract<TaskState, { state: S }> {
	expect(state.state).toBe(wanted);
	return state as Extract<TaskState, { state: S }>;
}
