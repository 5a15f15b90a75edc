import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createSavedItemsClient, ServiceError, UnexpectedResponseError } from "../../src/api/index.js";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
	await Promise.all(closers.splice(0).map((close) => close()));
});

async function useEmulator(): Promise<Emulator> {
	const emulator = await startEmulator({ port: 0 });
	closers.push(() => emulator.close());
	return emulator;
}

/** A server answering every request with `answer(req)`; the requests it saw are kept. */
async function useFakeService(answer: (req: IncomingMessage) => unknown) {
	const seen: IncomingMessage[] = [];
	const server = createServer((req, res) => {
		seen.push(req);
		res.setHeader("content-type", "application/json");
		res.end(JSON.stringify(answer(req)));
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	closers.push(async () => {
		server.closeAllConnections();
		await new Promise((resolve) => server.close(resolve));
	});
	return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, seen };
}

describe("createSavedItemsClient", () => {
	it("reads every page of a paged list from the emulator", async () => {
		const emulator = await useEmulator();
		for (let index = 0; index < 105; index++) {
			await fetch(`${emulator.scraperUrl}/account/configs`, {
				method: "POST",
				headers: { "content-type": "application/json", "x-api-key": emulator.scraperKey },
				body: JSON.stringify({ name: `config ${index}`, config: { mode: "request" } }),
			});
		}
		const client = createSavedItemsClient({ scraperKey: emulator.scraperKey, baseUrl: emulator.scraperUrl });
		const configs = await client.configs();
		expect(configs).toHaveLength(105);
		expect(new Set(configs.map((config) => config.id)).size).toBe(105);
		const pages = emulator.ledger.byEndpoint("configs").filter((entry) => entry.method === "GET");
		expect(pages.map((entry) => entry.status)).toEqual([200, 200]);
		expect(await client.schedules()).toEqual([]);
	});

	it("reads a list under its own key, under data or items, or as a bare array; the key goes in x-api-key only", async () => {
		const service = await useFakeService((req) => {
			if (req.url?.startsWith("/api/v1/account/configs")) return { success: true, data: [{ id: "cfg_1", name: "a" }] };
			if (req.url?.startsWith("/api/v1/account/schemes")) return { items: [{ id: "sch_1", status: "ready" }] };
			if (req.url?.startsWith("/api/v1/account/storage")) return [{ id: "stor_1", is_default: true }];
			return { schedules: [{ id: "job_1", is_active: false, next_run: null }], pagination: { total: 1 } };
		});
		const client = createSavedItemsClient({ scraperKey: "secret-key-1", baseUrl: service.baseUrl });
		expect(await client.configs()).toEqual([{ id: "cfg_1", name: "a" }]);
		expect(await client.schemes()).toEqual([{ id: "sch_1", status: "ready" }]);
		expect(await client.storage()).toEqual([{ id: "stor_1", is_default: true }]);
		expect(await client.schedules()).toEqual([{ id: "job_1", is_active: false, next_run: null }]);
		for (const req of service.seen) {
			expect(req.headers["x-api-key"]).toBe("secret-key-1");
			expect(req.url).not.toContain("secret-key-1");
		}
	});

	it("an answer without a list, or items without ids, is UnexpectedResponseError; an error status is ServiceError", async () => {
		const service = await useFakeService((req) =>
			req.url?.startsWith("/api/v1/account/configs") ? { success: true } : { schemes: [{ name: "no id" }] },
		);
		const client = createSavedItemsClient({ scraperKey: "k", baseUrl: service.baseUrl });
		await expect(client.configs()).rejects.toThrow(UnexpectedResponseError);
		await expect(client.schemes()).rejects.toThrow(/field `0\.id`/);
		const emulator = await useEmulator();
		const refused = createSavedItemsClient({ scraperKey: "wrong-key-9", baseUrl: emulator.scraperUrl });
		const error = await refused.storage().catch((caught: unknown) => caught);
		expect(error).toBeInstanceOf(ServiceError);
		expect((error as ServiceError).status).toBe(401);
		expect(String((error as Error).message)).not.toContain("wrong-key-9");
	});
});
