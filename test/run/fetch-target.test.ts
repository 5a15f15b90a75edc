import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createScraperClient } from "../../src/api/index.js";
import type { Sleep } from "../../src/common/index.js";
import {
	type DemoSite,
	type Emulator,
	type ScenarioInput,
	startDemoSite,
	startEmulator,
} from "../../src/emulator/index.js";
import { createOutageMonitor } from "../../src/run/flow/outage-monitor.js";
import { createSendGate } from "../../src/run/flow/send-gate.js";
import { type FetchTargetDeps, fetchTarget } from "../../src/run/target/fetch-target.js";

let closers: Array<() => Promise<void>> = [];
afterEach(async () => {
	for (const close of closers.reverse()) await close();
	closers = [];
});

async function services(scenario: ScenarioInput = {}): Promise<{ emulator: Emulator; site: DemoSite }> {
	const site = await startDemoSite();
	const emulator = await startEmulator({ scenario });
	closers.push(
		() => site.close(),
		() => emulator.close(),
	);
	return { emulator, site };
}

/**
 * Time that moves only when the code under test waits: every wait is recorded (so a deleted backoff
 * is seen) and none is slept for real (so a 60 s reset costs nothing).
 */
function virtualTime() {
	let now = 1_000_000;
	const waits: number[] = [];
	const sleep: Sleep = async (ms, signal) => {
		if (signal?.aborted) throw signal.reason;
		waits.push(ms);
		now += ms;
		await Promise.resolve();
	};
	return { clock: () => now, sleep, waits };
}

function depsFor(
	client: ReturnType<typeof createScraperClient>,
	time: ReturnType<typeof virtualTime>,
	overrides: Partial<FetchTargetDeps> = {},
) {
	const gate = createSendGate(time.clock, time.sleep);
	const events = { retries: [] as string[], capped: 0 };
	const deps: FetchTargetDeps = {
		client,
		gate,
		outage: createOutageMonitor({
			gate,
			probe: (signal) => client.health(signal),
			clock: time.clock,
			sleep: time.sleep,
			timeoutMs: 600_000,
			onOutage: () => undefined,
			onRecovered: () => undefined,
			onTimeout: () => undefined,
		}),
		clock: time.clock,
		sleep: time.sleep,
		random: () => 0.999,
		retry: { attempts: 3, backoffMs: 1000, maxBackoffMs: 60_000 },
		taskPoll: { deadlineMs: 600_000, initialIntervalMs: 10, maxIntervalMs: 10 },
		signal: new AbortController().signal,
		isStopping: () => false,
		onHeaders: () => undefined,
		onTaskId: () => undefined,
		onRetry: (_id, kind) => events.retries.push(kind),
		onResetCapped: () => {
			events.capped += 1;
		},
		...overrides,
	};
	return { deps, events, gate };
}

const clientOf = (emulator: Emulator, timeoutMs?: number) =>
	createScraperClient({
		scraperKey: emulator.scraperKey,
		baseUrl: emulator.scraperUrl,
		...(timeoutMs ? { timeoutMs } : {}),
	});

describe("the retry loop (fetchTarget) against the emulator", () => {
	it("a realtime call that outlives the client's deadline is asked again as a task, not sent blind again", async () => {
		// The service keeps the call open (no hand-off within a minute); the client gives up after 300 ms.
		const { emulator, site } = await services({ timeout_ms: 60_000 });
		const client = createScraperClient({
			scraperKey: emulator.scraperKey,
			baseUrl: emulator.scraperUrl,
			realtimeTimeoutMs: 300,
		});
		const { deps } = depsFor(client, virtualTime());
		const result = await fetchTarget("t1", { url: `${site.url}/slow?ms=1500`, mode: "request" }, deps);
		expect(result).toMatchObject({ kind: "ok", attempts: 2 });
		const sends = emulator.ledger.byEndpoint("realtime");
		expect(sends).toHaveLength(2);
		// The second attempt asked for a task id at once and was followed as a task.
		expect(sends[1]!.params?.async).toBe(true);
		expect(sends[1]!.taskId).toBeDefined();
	});

	it("asks `beforeSend` before every attempt's request, retries included, and sends only once it settles", async () => {
		const { emulator, site } = await services({
			faults: [{ kind: "scraping_error", message: "Page crashed", times: 2 }],
		});
		const asked: Array<{ id: string; sentBefore: number }> = [];
		const { deps } = depsFor(clientOf(emulator), virtualTime(), {
			// A fleet worker's slot exchange: the request waits for it.
			beforeSend: (id) => {
				asked.push({ id, sentBefore: emulator.ledger.byEndpoint("realtime").length });
				return new Promise<void>((resolve) => setTimeout(resolve, 20));
			},
		});
		const result = await fetchTarget("t1", { url: `${site.url}/product/1`, mode: "request" }, deps);
		expect(result).toMatchObject({ kind: "ok", attempts: 3 });
		expect(asked).toEqual([
			{ id: "t1", sentBefore: 0 },
			{ id: "t1", sentBefore: 1 },
			{ id: "t1", sentBefore: 2 },
		]);
	});

	it("sends nothing once `maySend` says the target is no longer this worker's: the retry after a crash is given up, its gate place given back", async () => {
		const { emulator, site } = await services({
			faults: [{ kind: "scraping_error", message: "Page crashed", times: 1 }],
		});
		let mine = true;
		const { deps } = depsFor(clientOf(emulator), virtualTime(), {
			// A fleet worker's lease on the target lapses after the first attempt.
			maySend: () => mine,
			onRetry: () => {
				mine = false;
			},
		});
		const result = await fetchTarget("t1", { url: `${site.url}/product/1`, mode: "request" }, deps);
		expect(result).toMatchObject({ kind: "abandoned", attempts: 1, leaseLapsed: true });
		expect(emulator.ledger.byEndpoint("realtime")).toHaveLength(1);
		expect(deps.gate.inFlight).toBe(0);
	});

	it("a stop while a free health check asks whether a silent service is there leaves the target, not fails it", async () => {
		// The service drops the fetch unanswered; its health check never answers.
		let healthAsked: () => void = () => undefined;
		const asked = new Promise<void>((resolve) => {
			healthAsked = resolve;
		});
		const server: Server = createServer((req, res) => {
			if (req.url?.includes("/scraper/health")) healthAsked();
			else res.socket?.destroy();
		});
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		closers.push(() => new Promise((resolve) => server.close(() => resolve())));
		server.on("connection", (socket) => closers.push(async () => void socket.destroy()));
		const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
		const stop = new AbortController();
		const { deps } = depsFor(createScraperClient({ scraperKey: "k", baseUrl: base }), virtualTime(), {
			retry: { attempts: 1, backoffMs: 1, maxBackoffMs: 1 },
			stopped: stop.signal,
			isStopping: () => stop.signal.aborted,
		});
		const fetched = fetchTarget("t1", { url: "https://example.com/", mode: "request" }, deps);
		await asked;
		stop.abort();
		expect(await fetched).toMatchObject({ kind: "abandoned", attempts: 1, betweenAttempts: true });
	});

	it("waits a full-jitter backoff before each retry: 1 s, then 2 s (capped by max_backoff_ms)", async () => {
		const { emulator, site } = await services({
			faults: [{ kind: "scraping_error", message: "Page crashed", times: 2 }],
		});
		const time = virtualTime();
		const { deps, events } = depsFor(clientOf(emulator), time);
		const result = await fetchTarget("t1", { url: `${site.url}/product/1`, mode: "request" }, deps);
		expect(result).toMatchObject({ kind: "ok", attempts: 3 });
		// random() = 0.999 of the full-jitter ceiling: base·2^(retry-1).
		expect(time.waits).toEqual([999, 1998]);
		expect(events.retries).toEqual(["page_crashed", "page_crashed"]);
	});

	it("a 429 burst longer than the attempt limit still ends ok: 429s spend no attempt", async () => {
		const { emulator, site } = await services({
			reset_seconds: 5,
			faults: [{ kind: "rate_limit", times: 1, count: 6 }],
		});
		const time = virtualTime();
		const { deps } = depsFor(clientOf(emulator), time, {
			retry: { attempts: 2, backoffMs: 1000, maxBackoffMs: 60_000 },
		});
		const result = await fetchTarget("t1", { url: `${site.url}/product/1`, mode: "request" }, deps);
		expect(result).toMatchObject({ kind: "ok", attempts: 1 });
		expect(emulator.ledger.statusCounts()[429]).toBe(6);
		// Each 429 closed the gate for its reset (5 s), waited out before the next send.
		expect(time.waits.filter((ms) => ms === 5000)).toHaveLength(6);
	});

	it("caps a 429's reset at 3600 s and says so once", async () => {
		const { emulator, site } = await services({
			reset_seconds: 1_000_000_000,
			faults: [{ kind: "rate_limit", times: 1, count: 2 }],
		});
		const time = virtualTime();
		const { deps, events } = depsFor(clientOf(emulator), time);
		const result = await fetchTarget("t1", { url: `${site.url}/product/1`, mode: "request" }, deps);
		expect(result.kind).toBe("ok");
		expect(events.capped).toBe(2);
		expect(Math.max(...time.waits)).toBeLessThanOrEqual(3_600_000);
	});

	it("sends with GET when asked, the parameters in the query string", async () => {
		const { emulator, site } = await services();
		const { deps } = depsFor(clientOf(emulator), virtualTime(), { method: "GET" });
		const result = await fetchTarget("t1", { url: `${site.url}/product/2`, mode: "request" }, deps);
		expect(result.kind).toBe("ok");
		expect(emulator.ledger.byEndpoint("realtime").map((entry) => entry.method)).toEqual(["GET"]);
	});

	it("a task that never finishes fails task_timeout at the deadline, its id kept", async () => {
		const { emulator, site } = await services({ timeout_ms: 50 });
		const time = virtualTime();
		const { deps } = depsFor(clientOf(emulator), time, {
			taskPoll: { deadlineMs: 2000, initialIntervalMs: 100, maxIntervalMs: 500 },
		});
		const result = await fetchTarget("t1", { url: `${site.url}/slow?ms=60000`, mode: "request" }, deps);
		expect(result).toMatchObject({ kind: "failed", error: "task_timeout" });
		expect(result.kind === "failed" && result.taskId).toMatch(/^task_/);
	});
});

describe("a hostile service", () => {
	async function hostile(handler: Parameters<typeof createServer>[1]): Promise<string> {
		const server: Server = createServer(handler);
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
		closers.push(async () => {
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
		});
		return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
	}

	it("a task poll whose answer trickles in one byte a second cannot hold the task past its deadline", async () => {
		const base = await hostile((req, res) => {
			if (req.url?.includes("/scraper/realtime")) {
				res.writeHead(202, { "content-type": "application/json" });
				res.end(JSON.stringify({ success: true, task_id: "task_trickle", status: "processing" }));
				return;
			}
			res.writeHead(200, { "content-type": "application/json" });
			const timer = setInterval(() => res.write(" "), 1000);
			res.on("close", () => clearInterval(timer));
		});
		// Real time here: the deadline must cut a poll that is on the wire.
		const client = createScraperClient({ scraperKey: "k".repeat(32), baseUrl: base });
		const realSleep: Sleep = (ms, signal) =>
			new Promise<void>((resolve) => setTimeout(resolve, ms)).then(() => signal?.throwIfAborted());
		const { deps } = depsFor(
			client,
			{ clock: Date.now, sleep: realSleep, waits: [] },
			{
				taskPoll: { deadlineMs: 600, initialIntervalMs: 10, maxIntervalMs: 10 },
			},
		);
		const started = Date.now();
		const result = await fetchTarget("t1", { url: "https://example.com/", mode: "request" }, deps);
		expect(result).toMatchObject({ kind: "failed", error: "task_timeout", taskId: "task_trickle" });
		expect(Date.now() - started).toBeLessThan(3000);
	});

	it("a 429 status line whose body has not come holds every other send until it has", async () => {
		let sendBody: (() => void) | undefined;
		let realtimeCalls = 0;
		const base = await hostile((_req, res) => {
			realtimeCalls += 1;
			if (realtimeCalls === 1) {
				// The status line and headers now; the body (with its reset) only when the test says.
				res.writeHead(429, { "content-type": "application/json" });
				res.flushHeaders();
				sendBody = () => res.end(JSON.stringify({ success: false, error: "Too many requests", reset: 1 }));
				return;
			}
			res.writeHead(200, { "content-type": "text/html", "x-credits-used": "1" }).end("<p>page</p>");
		});
		const client = createScraperClient({ scraperKey: "k".repeat(32), baseUrl: base });
		// Told when the status line has been read (the client's onStatus, passed through).
		let statusSeen!: () => void;
		const statusRead = new Promise<void>((resolve) => {
			statusSeen = resolve;
		});
		const watched: typeof client = {
			...client,
			realtime: (request, options) =>
				client.realtime(request, {
					...options,
					onStatus: (status) => {
						options?.onStatus?.(status);
						statusSeen();
					},
				}),
		};
		const { deps, gate } = depsFor(watched, virtualTime());
		const fetching = fetchTarget("t1", { url: "https://example.com/", mode: "request" }, deps);
		await statusRead;
		// No body yet, so no reset to pause for: the status line alone closes the gate.
		expect(gate.pauseReason()).toBe("rate_limited");
		expect(gate.tryAcquire()).toBe(false);
		sendBody!();
		expect(await fetching).toMatchObject({ kind: "ok", attempts: 1 });
		expect(realtimeCalls).toBe(2);
	});
});
