import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/job-files.js";
import { assertBuilt } from "../helpers/spawn-cli.js";

/**
 * Every fetch of a run is sent with the run's one stop signal, and the transport keeps the fetch in
 * that signal's in-flight list for as long as it lasts. The list must let go of a finished fetch at once: a
 * JS Set that entries keep entering and leaving left a chain of old tables holding finished requests'
 * handlers and buffers, copied through young collections into the old space. Measured where it shows: V8's own GC trace of a client sending 20,000 fetches
 * with the signal, against the same client sending them without one.
 */
const FETCHES = 20_000;
const CONCURRENCY = 50;
const PAGE = `<!doctype html><html><head><title>Page</title></head><body>${"<p>some text of a page</p>".repeat(20)}</body></html>`;

describe("the stop signal shared by every fetch", () => {
	let server: Server;
	let baseUrl: string;
	let script: string;

	beforeAll(async () => {
		assertBuilt();
		server = createServer((request, response) => {
			request.resume();
			request.on("end", () => {
				response.writeHead(200, {
					"content-type": "text/html; charset=utf-8",
					"x-credits-used": "1",
					"x-credits-remaining": "1000000",
				});
				response.end(PAGE);
			});
		});
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
		const api = pathToFileURL(join(import.meta.dirname, "..", "..", "dist", "api", "index.js")).href;
		script = join(tempDir(), "fetches.mjs");
		writeFileSync(
			script,
			`import { createDispatcher, createScraperClient } from ${JSON.stringify(api)};
const [baseUrl, withSignal] = process.argv.slice(2);
const client = createScraperClient({ scraperKey: "k", baseUrl, dispatcher: createDispatcher({ connections: ${CONCURRENCY} }) });
const signal = withSignal === "signal" ? new AbortController().signal : undefined;
let sent = 0;
await Promise.all(Array.from({ length: ${CONCURRENCY} }, async () => {
	while (sent < ${FETCHES}) {
		sent += 1;
		const outcome = await client.realtime({ url: "http://site.test/page/" + sent, mode: "request" }, { signal, method: "POST" });
		if (outcome.kind !== "content") throw new Error("not ok: " + outcome.kind);
	}
}));
process.exit(0);
`,
		);
	});
	afterAll(async () => {
		server?.closeAllConnections();
		await new Promise((resolve) => server?.close(resolve));
	});

	/** Bytes V8 promoted into the old space over the child's whole run (its `--trace-gc-nvp` lines). */
	const promotedBytes = async (mode: "signal" | "none"): Promise<{ promoted: number; scavenges: number }> => {
		const child = spawn(process.execPath, ["--trace-gc-nvp", script, baseUrl, mode], {
			stdio: ["ignore", "pipe", "pipe"],
		});
		let trace = "";
		let stderr = "";
		child.stdout.on("data", (chunk: Buffer) => {
			trace += chunk.toString();
		});
		child.stderr.on("data", (chunk: Buffer) => {
			stderr += chunk.toString();
		});
		const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
		expect(stderr).toBe("");
		expect(code).toBe(0);
		let promoted = 0;
		let scavenges = 0;
		for (const line of trace.split("\n")) {
			if (!line.includes(" gc=s ")) continue;
			scavenges += 1;
			promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? Number.NaN);
		}
		return { promoted, scavenges };
	};

	it("a finished fetch's request is not kept through young collections by the signal's listeners", async () => {
		const without = await promotedBytes("none");
		const withSignal = await promotedBytes("signal");
		// Enough young collections for promotion to show (each fetch allocates ~10 KB).
		expect(without.scavenges).toBeGreaterThan(10);
		expect(Number.isFinite(withSignal.promoted)).toBe(true);
		// Measured: the same with and without (~0.4 KB a fetch); with the Set, 4.5× as much here (the chain
		// grows until a full collection: 14× over 100,000 fetches).
		expect(withSignal.promoted).toBeLessThan(without.promoted * 2 + 2 * 1024 * 1024);
	}, 60_000);
});
