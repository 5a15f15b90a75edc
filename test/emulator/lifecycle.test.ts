import { expect, test } from "vitest";
import { startDemoSite, startEmulator } from "../../src/emulator/index.js";
import { scrapeGet, scrapePost, waitFor } from "./helpers.js";

test("close() ends promptly with a slow fetch and a background task in flight", async () => {
	const site = await startDemoSite();
	const emulator = await startEmulator();
	try {
		const pending = scrapeGet(emulator, { url: `${site.url}/slow?ms=5000` }).catch((error: unknown) => error);
		const task = await scrapePost(emulator, { url: `${site.url}/slow?ms=5000`, async: true });
		expect(task.status).toBe(202);
		await waitFor(() => site.requestCount() === 2);
		const started = Date.now();
		await emulator.close();
		expect(Date.now() - started).toBeLessThan(500);
		// the waiting client sees its connection end instead of an answer
		expect(await pending).toBeInstanceOf(Error);
		await expect(fetch(`${emulator.apiUrl}/public`)).rejects.toThrow();
		// closing twice is harmless
		await emulator.close();
	} finally {
		const started = Date.now();
		await site.close();
		expect(Date.now() - started).toBeLessThan(500);
	}
});

test("binds 127.0.0.1 by default and reports the port it got", async () => {
	const emulator = await startEmulator({ port: 0 });
	try {
		expect(emulator.host).toBe("127.0.0.1");
		expect(emulator.port).toBeGreaterThan(0);
		expect(emulator.apiUrl).toBe(`http://127.0.0.1:${emulator.port}`);
	} finally {
		await emulator.close();
	}
});
