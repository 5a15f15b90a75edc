import { createServer } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { TargetFetcher } from "../../src/emulator/target-fetch.js";
import { listenForTest } from "../helpers/loopback.js";

/** A page that never ends: a kilobyte every 5 ms until the reader goes away. */
async function endlessPage(): Promise<{ url: string; close(): void }> {
	const server = createServer((req, res) => {
		res.writeHead(200, { "content-type": "text/html" });
		const timer = setInterval(() => res.write(`<p>${"x".repeat(1024)}</p>`), 5);
		req.on("close", () => clearInterval(timer));
		res.on("close", () => clearInterval(timer));
	});
	const origin = await listenForTest(server);
	return {
		url: `${origin}/endless`,
		close: () => {
			server.closeAllConnections();
			server.close();
		},
	};
}

let cleanup: Array<() => unknown> = [];
afterEach(async () => {
	for (const step of cleanup.reverse()) await step();
	cleanup = [];
});

describe("the emulator's fetch of a target page", () => {
	it("a page that never ends is a Navigation timeout once the fetch's total time is up (it was read forever)", async () => {
		const page = await endlessPage();
		const fetcher = new TargetFetcher({ totalTimeoutMs: 300 });
		cleanup.push(page.close, () => fetcher.close());
		const started = Date.now();
		expect(await fetcher.fetch(page.url, null)).toEqual({ kind: "failed", message: "Navigation timeout" });
		expect(Date.now() - started).toBeLessThan(5000);
	}, 15_000);

	it("reads a body up to maxBodyBytes, then stops", async () => {
		const page = await endlessPage();
		const fetcher = new TargetFetcher({ maxBodyBytes: 10_000 });
		cleanup.push(page.close, () => fetcher.close());
		const outcome = await fetcher.fetch(page.url, null);
		expect(outcome.kind).toBe("fetched");
		if (outcome.kind === "fetched") expect(outcome.body.length).toBe(10_000);
	}, 15_000);
});
