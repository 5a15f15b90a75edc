import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { onTestFinished } from "vitest";

/**
 * Listen on a free loopback port for the running test: the server is closed, its open connections cut,
 * when the test finishes (passed or failed). Resolves with its origin, `http://127.0.0.1:PORT`.
 */
export async function listenForTest(server: Server): Promise<string> {
	onTestFinished(
		() =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	);
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
