/**
 * The remote browser service (docs/service.md, "The remote browser"): a WebSocket address that speaks CDP, as Puppeteer's
 * `connect` and Playwright's `connectOverCDP` expect. Each connection is one session in a fresh
 * headless Chromium of this machine (Debian's `chromium`), so the runner's tests drive a real browser.
 *
 * The emulator does what the service does around it: checks the browser key (`?key=`), refuses a
 * session over the account's browser `concurrency` (429), ends a session at `max_session_length_seconds`,
 * and charges browser credits (one per started minute of a session). The CDP bytes themselves are
 * proxied untouched: the client's WebSocket upgrade is forwarded to Chromium's own DevTools socket.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";

export interface BrowserEndpointOptions {
	readonly key: string;
	readonly hasAccess: boolean;
	readonly concurrency: number;
	readonly maxSessionSeconds: number;
	/** Cut this many sessions (the first ones) after `cutAfterMs`, as if the service ended them early. */
	readonly cutSessions: number;
	readonly cutAfterMs: number;
	readonly chromiumPath: string;
}

export interface BrowserSessionStats {
	/** Sessions that got a browser. */
	readonly started: number;
	/** Refused upgrades by HTTP status (401 wrong key, 429 over the limit, 503 no browser). */
	readonly refused: Readonly<Record<number, number>>;
	readonly active: number;
	/** Most sessions open at once. */
	readonly peakActive: number;
	/** Sessions the endpoint ended: at the session length, or by a `cut` fault. */
	readonly cut: number;
	/** Browser credits charged so far. */
	readonly creditsUsed: number;
	/** Query parameters of each accepted session but the key (os, proxy_country, …), in order. */
	readonly sessionOptions: ReadonlyArray<Readonly<Record<string, string>>>;
}

export interface BrowserEndpoint {
	handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
	stats(): BrowserSessionStats;
	close(): Promise<void>;
}

/** How long Chromium may take to open its DevTools socket. */
const LAUNCH_TIMEOUT_MS = 20_000;

export function createBrowserEndpoint(options: BrowserEndpointOptions): BrowserEndpoint {
	let started = 0;
	let active = 0;
	let peakActive = 0;
	let cut = 0;
	let creditsUsed = 0;
	const refused: Record<number, number> = {};
	const sessionOptions: Array<Record<string, string>> = [];
	const live = new Set<() => void>();

	function refuse(socket: Duplex, status: number, reason: string, message: string) {
		refused[status] = (refused[status] ?? 0) + 1;
		const body = JSON.stringify({ success: false, error: reason, message });
		socket.end(
			`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
		);
	}

	return {
		handleUpgrade(req, socket, head) {
			const url = new URL(req.url ?? "/", "http://emulator");
			const key = url.searchParams.get("key");
			if (!options.hasAccess || key === null || key !== options.key) {
				refuse(socket, 401, "Unauthorized", "Invalid or missing browser API key");
				return;
			}
			if (active >= options.concurrency) {
				refuse(
					socket,
					429,
					"Too Many Requests",
					`Browser session limit reached (${options.concurrency} concurrent sessions)`,
				);
				return;
			}
			active += 1;
			peakActive = Math.max(peakActive, active);
			const settings: Record<string, string> = {};
			for (const [name, value] of url.searchParams) if (name !== "key") settings[name] = value;
			let ended = false;
			let browser: ChildProcess | undefined;
			let upstream: Socket | undefined;
			let lengthTimer: NodeJS.Timeout | undefined;
			const profile = mkdtempSync(join(tmpdir(), "scrapejob-emulated-browser-"));
			const openedAt = Date.now();
			const end = () => {
				if (ended) return;
				ended = true;
				live.delete(end);
				active -= 1;
				clearTimeout(lengthTimer);
				creditsUsed += Math.max(1, Math.ceil((Date.now() - openedAt) / 60_000));
				socket.destroy();
				upstream?.destroy();
				browser?.kill("SIGKILL");
				// Chromium (and its helper processes) write into the profile until they exit; remove it after.
				if (browser && browser.exitCode === null) browser.once("exit", () => removeProfile(profile));
				else removeProfile(profile);
			};
			live.add(end);
			socket.on("close", end);
			socket.on("error", end);

			launchChromium(options.chromiumPath, profile)
				.then(({ child, devtoolsUrl }) => {
					browser = child;
					child.once("exit", end);
					if (ended) {
						end();
						return;
					}
					const index = started;
					started += 1;
					sessionOptions.push(settings);
					const lengthMs =
						index < options.cutSessions
							? options.cutAfterMs
							: // A scenario may report any length (1e8 s): a timer holds at most ~24.8 days.
								Math.min(Math.max(1, options.maxSessionSeconds) * 1000, 2 ** 31 - 1);
					// The session's clock started when it was accepted, not when Chromium was ready.
					lengthTimer = setTimeout(
						() => {
							cut += 1;
							end();
						},
						Math.max(0, lengthMs - (Date.now() - openedAt)),
					);
					const target = new URL(devtoolsUrl);
					upstream = connect(Number(target.port), target.hostname, () => {
						// The client's own upgrade request, re-addressed to Chromium's DevTools socket.
						const headers: string[] = [`GET ${target.pathname} HTTP/1.1`, `Host: ${target.host}`];
						for (let i = 0; i < req.rawHeaders.length; i += 2) {
							const name = req.rawHeaders[i]!;
							if (name.toLowerCase() !== "host") headers.push(`${name}: ${req.rawHeaders[i + 1]}`);
						}
						upstream!.write(`${headers.join("\r\n")}\r\n\r\n`);
						if (head.length > 0) upstream!.write(head);
						socket.pipe(upstream!);
						upstream!.pipe(socket);
					});
					upstream.on("close", end);
					upstream.on("error", end);
				})
				.catch((error: unknown) => {
					if (ended) return;
					// The session was counted; undo it as a refusal rather than a session.
					ended = true;
					live.delete(end);
					active -= 1;
					removeProfile(profile);
					refuse(
						socket,
						503,
						"Service Unavailable",
						`no browser: ${error instanceof Error ? error.message : String(error)}`,
					);
				});
		},
		stats: () => ({
			started,
			refused: { ...refused },
			active,
			peakActive,
			cut,
			creditsUsed,
			sessionOptions: [...sessionOptions],
		}),
		close: async () => {
			for (const end of [...live]) end();
		},
	};
}

/** Best effort, with retries: a helper process may still be writing a file as the directory goes. */
function removeProfile(profile: string): void {
	rm(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }).catch(() => undefined);
}

/** Start a headless Chromium with its DevTools socket on a free loopback port; resolves with its address. */
function launchChromium(path: string, profile: string): Promise<{ child: ChildProcess; devtoolsUrl: string }> {
	return new Promise((resolve, reject) => {
		const child = spawn(
			path,
			[
				"--headless",
				"--no-sandbox",
				"--disable-gpu",
				"--disable-quic",
				"--no-first-run",
				"--disable-background-networking",
				"--disable-component-update",
				"--disable-sync",
				"--remote-debugging-address=127.0.0.1",
				"--remote-debugging-port=0",
				`--user-data-dir=${profile}`,
				"about:blank",
			],
			{ stdio: ["ignore", "ignore", "pipe"] },
		);
		let stderr = "";
		const timer = setTimeout(
			() => fail(new Error(`Chromium did not start within ${LAUNCH_TIMEOUT_MS} ms`)),
			LAUNCH_TIMEOUT_MS,
		);
		const fail = (error: Error) => {
			clearTimeout(timer);
			child.kill("SIGKILL");
			reject(error);
		};
		child.once("error", (error) => fail(new Error(`cannot start ${path}: ${error.message}`)));
		child.once("exit", (code) =>
			fail(new Error(`Chromium exited (${code}) before opening DevTools: ${stderr.slice(-300)}`)),
		);
		child.stderr!.setEncoding("utf8");
		child.stderr!.on("data", (chunk: string) => {
			stderr += chunk;
			const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
			if (match) {
				clearTimeout(timer);
				child.removeAllListeners("exit");
				child.stderr!.removeAllListeners("data");
				child.stderr!.resume();
				resolve({ child, devtoolsUrl: match[1]! });
			}
		});
	});
}
