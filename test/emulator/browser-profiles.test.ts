import { describe, expect, test } from "vitest";
import type { Emulator } from "../../src/emulator/index.js";
import { account, call, useEmulator } from "./helpers.js";

function order(emulator: Emulator, query: Record<string, string>, key: string | null = emulator.accountKey) {
	return call(`${emulator.apiUrl}/public/order-profile?${new URLSearchParams(query)}`, {
		method: "POST",
		headers: key === null ? {} : { "x-apikey": key },
	});
}

async function balances(emulator: Emulator): Promise<Record<string, number>> {
	const products = (await account(emulator, "/public")).json.products as Record<string, { balance_mb?: number }>;
	return Object.fromEntries(
		Object.entries(products)
			.filter(([, product]) => product.balance_mb !== undefined)
			.map(([code, product]) => [code, product.balance_mb as number]),
	);
}

describe("browser profiles: GET /public/profiles, POST /public/order-profile", () => {
	test("ordered profiles are listed; the first three are free, each one after costs 1,500 MB of data balance", async () => {
		const emulator = await useEmulator({ scenario: { balances_mb: { rp: 2000, rpc: 10, mp: 5, dcp: 1600 } } });
		const empty = await account(emulator, "/public/profiles");
		expect(empty.status).toBe(200);
		expect(empty.json).toEqual({ success: true, profiles: [] });
		for (const version of ["120", "121", "122"]) {
			const free = await order(emulator, { os: "windows", browserVersion: version });
			expect(free.status).toBe(200);
			expect(free.json).toMatchObject({
				success: true,
				charged_mb: 0,
				profile: { os: "windows", browser_version: version },
			});
		}
		expect(await balances(emulator)).toEqual({ rp: 2000, rpc: 10, mp: 5, dcp: 1600 });
		const fourth = await order(emulator, { os: "apple", browserVersion: "123" });
		expect(fourth.json).toMatchObject({ success: true, charged_mb: 1500, charged_product: "rp" });
		expect(await balances(emulator)).toEqual({ rp: 500, rpc: 10, mp: 5, dcp: 1600 });
		const fifth = await order(emulator, { os: "unix", browserVersion: "124" });
		expect(fifth.json).toMatchObject({ charged_product: "dcp" });
		const refused = await order(emulator, { os: "unix", browserVersion: "125" });
		expect(refused.status).toBe(400);
		expect(refused.json).toEqual({
			success: false,
			error: "Insufficient balance: a profile past the first 3 costs 1500 MB of proxy data",
		});
		const listed = (await account(emulator, "/public/profiles")).json.profiles as Array<Record<string, unknown>>;
		expect(listed.map((profile) => profile.browser_version)).toEqual(["120", "121", "122", "123", "124"]);
		expect(listed[0]).toMatchObject({ os: "windows", browser: "chrome" });
		expect(listed[0]?.id).toMatch(/^prof_[0-9a-f]{16}$/);
		expect(Date.parse(listed[0]?.created_at as string)).not.toBeNaN();
	});

	test("missing or bad os and browserVersion are 400 {error, success:false}; nothing is ordered", async () => {
		const emulator = await useEmulator();
		const noOs = await order(emulator, { browserVersion: "120" });
		expect(noOs.status).toBe(400);
		expect(noOs.json).toEqual({ success: false, error: "Missing os: one of windows, apple, unix" });
		expect((await order(emulator, { os: "amiga", browserVersion: "120" })).json.error).toContain("Invalid os");
		expect((await order(emulator, { os: "windows" })).json.error).toContain("Missing browserVersion");
		expect((await order(emulator, { os: "windows", browserVersion: "latest" })).json.error).toContain(
			"Invalid browserVersion",
		);
		expect((await account(emulator, "/public/profiles")).json.profiles).toEqual([]);
	});

	test("the account key is required; order-profile is POST, profiles is GET", async () => {
		const emulator = await useEmulator();
		expect((await call(`${emulator.apiUrl}/public/profiles`)).status).toBe(401);
		expect((await order(emulator, { os: "windows", browserVersion: "120" }, null)).status).toBe(401);
		expect((await order(emulator, { os: "windows", browserVersion: "120" }, emulator.scraperKey)).status).toBe(401);
		const getOrder = await account(emulator, "/public/order-profile", { os: "windows", browserVersion: "120" });
		expect(getOrder.status).toBe(405);
		expect(getOrder.headers.get("allow")).toBe("POST");
		const postList = await call(`${emulator.apiUrl}/public/profiles`, {
			method: "POST",
			headers: { "x-apikey": emulator.accountKey },
		});
		expect(postList.status).toBe(405);
	});
});
