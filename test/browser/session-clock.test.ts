import { createServer } from "node:net";
import { expect, it, vi } from "vitest";
import { BrowserSessionError, runBrowserSession } from "../../src/browser/index.js";

/**
 * The session's length is the service's, counted from the connection: loading playwright-core (the
 * first session in a process; seconds on a busy machine) must not eat into it. The load is made to
 * take 100 s of the test's clock; a 60 s session then still gets to connect (here to a port that
 * refuses: `lost`), where a clock started before the load said `session_length` without trying.
 */
let now = 1_000_000;
vi.mock("playwright-core", async () => {
	now += 100_000;
	return await vi.importActual<typeof import("playwright-core")>("playwright-core");
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
	const server = createServer();
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as { port: number };
	await new Promise<void>((resolve) => server.close(() => resolve()));
	return port;
}

it("a session's clock starts after playwright-core is loaded, not before", async () => {
	const port = await closedPort();
	const failure = await runBrowserSession({
		access: { endpointUrl: `ws://127.0.0.1:${port}/`, key: "k", concurrency: 1, maxSessionSeconds: 60 },
		session: { steps: [] },
		url: "http://127.0.0.1:9/",
		signal: new AbortController().signal,
		stepTimeoutMs: 5_000,
		clock: () => now,
	}).catch((error: unknown) => error);
	expect(failure).toBeInstanceOf(BrowserSessionError);
	// The connection was tried (and refused), within the session's time.
	expect((failure as BrowserSessionError).kind).toBe("lost");
	expect(now).toBe(1_100_000);
});
