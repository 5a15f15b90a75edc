import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSavedItemsClient } from "../../src/api/index.js";
import { maskRecordSecrets } from "../../src/cli/format/index.js";
import { maskSecret } from "../../src/common/index.js";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { runCli } from "./cli-harness.js";

let emulator: Emulator;
let env: NodeJS.ProcessEnv;
const ids: Record<string, string> = {};

async function save(path: string, body: Record<string, unknown>): Promise<string> {
	const response = await fetch(`${emulator.scraperUrl}/account${path}`, {
		method: "POST",
		headers: { "content-type": "application/json", "x-api-key": emulator.scraperKey },
		body: JSON.stringify(body),
	});
	const json = (await response.json()) as { id: string };
	return json.id;
}

beforeAll(async () => {
	emulator = await startEmulator({ port: 0 });
	env = { SCRAPEJOB_API_URL: emulator.apiUrl, SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey };
	ids.config = await save("/configs", {
		name: "Product pages",
		config: { url: "https://shop.example/p/1", mode: "request", extract_scheme: [{ label: "t", selector: "h1" }] },
	});
	ids.scheme = await save("/schemes", {
		name: "Prices",
		config: {
			extract_scheme: [
				{ label: "price", selector: ".price" },
				{ label: "name", selector: "h1" },
			],
		},
	});
	ids.storage = await save("/storage", {
		name: "Results bucket",
		storage_type: "s3_compatible",
		config: { bucket: "results", access_key: "AKIAEXAMPLE123", secret_key: "s3-secret-value-xyz" },
		set_as_default: true,
	});
	ids.schedule = await save("/schedule", { name: "Nightly", config_id: ids.config, interval_minutes: 1440 });
});

afterAll(async () => {
	await emulator.close();
});

function rowOf(stdout: string, id: string): string[] {
	const line = stdout.split("\n").find((candidate) => candidate.trimStart().startsWith(`${id} `)) ?? "";
	return line.trim().split(/\s{2,}/);
}

describe("scrapejob account --saved", () => {
	it("lists saved configs, schemes, storage configs and schedules, learning the scraper key from the account", async () => {
		const run = await runCli(["account", "--saved"], { env });
		expect(run.stderr).toBe("");
		expect(run.code).toBe(0);
		for (const title of ["Saved configs (1)", "Saved schemes (1)", "Storage configs (1)", "Schedules (1)"]) {
			expect(run.stdout).toContain(title);
		}
		expect(rowOf(run.stdout, ids.config as string).slice(0, 5)).toEqual([
			ids.config,
			"Product pages",
			"request",
			"https://shop.example/p/1",
			"1",
		]);
		expect(rowOf(run.stdout, ids.scheme as string).slice(0, 4)).toEqual([ids.scheme, "Prices", "ready", "2"]);
		expect(rowOf(run.stdout, ids.storage as string).slice(0, 5)).toEqual([
			ids.storage,
			"Results bucket",
			"s3_compatible",
			"results",
			"yes",
		]);
		expect(rowOf(run.stdout, ids.schedule as string).slice(0, 5)).toEqual([
			ids.schedule,
			"Nightly",
			ids.config,
			"1440 min",
			"yes",
		]);
		for (const secret of ["AKIAEXAMPLE123", "s3-secret-value-xyz", emulator.scraperKey, emulator.accountKey]) {
			expect(run.stdout).not.toContain(secret);
		}
	});

	it("--json prints the four lists as the service returned them, secrets masked", async () => {
		const client = createSavedItemsClient({ scraperKey: emulator.scraperKey, baseUrl: emulator.scraperUrl });
		const raw = {
			configs: await client.configs(),
			schemes: await client.schemes(),
			storage: await client.storage(),
			schedules: await client.schedules(),
		};
		const run = await runCli(["account", "--saved", "--json"], { env });
		expect(run.code).toBe(0);
		const printed = JSON.parse(run.stdout);
		expect(printed).toEqual(maskRecordSecrets(raw));
		expect(printed.schedules[0]).toMatchObject({ id: ids.schedule, config_id: ids.config, is_active: true });
	});

	it("works with SCRAPEJOB_SCRAPER_KEY alone; a refused key exits 3 without echoing it", async () => {
		const scraperEnv = { SCRAPEJOB_SCRAPER_URL: emulator.scraperUrl, SCRAPEJOB_SCRAPER_KEY: emulator.scraperKey };
		const run = await runCli(["account", "--saved", "--json"], { env: scraperEnv });
		expect(run.code).toBe(0);
		expect(JSON.parse(run.stdout).configs).toHaveLength(1);
		const wrong = await runCli(["account", "--saved"], {
			env: { ...scraperEnv, SCRAPEJOB_SCRAPER_KEY: "wrong-scraper-key-77" },
		});
		expect(wrong.code).toBe(3);
		expect(wrong.stderr).toContain("401 Invalid API key");
		expect(wrong.stderr).not.toContain("wrong-scraper-key-77");
	});

	it("says (none) for an empty account, and exits 3 without scraper access", async () => {
		const empty = await runCli(["account", "--saved", "--sandbox"]);
		expect(empty.code).toBe(0);
		expect(empty.stdout.match(/\(none\)/g)).toHaveLength(4);
		const bare = await startEmulator({ port: 0, scenario: { has_scraper_access: false } });
		try {
			const run = await runCli(["account", "--saved"], {
				env: { SCRAPEJOB_API_URL: bare.apiUrl, SCRAPEJOB_ACCOUNT_KEY: bare.accountKey },
			});
			expect(run.code).toBe(3);
			expect(run.stderr).toContain("no scraper access");
		} finally {
			await bare.close();
		}
	});

	it("masks credentials a service does answer in full, unless --show-secrets", async () => {
		// A service that returns a storage config's credentials as stored (the emulator masks them itself).
		const storage = {
			id: "stor_1",
			name: "raw",
			storage_type: "s3_compatible",
			config: { bucket: "b", access_key: "AKIARAWACCESS99", secret_key: "raw-secret-key-42" },
		};
		const server = createServer((req, res) => {
			res.setHeader("content-type", "application/json");
			if (req.headers["x-api-key"] !== "fake-scraper-key") {
				res.statusCode = 401;
				res.end(JSON.stringify({ success: false, error: "Invalid API key" }));
			} else if (req.url?.startsWith("/api/v1/account/storage")) res.end(JSON.stringify([storage]));
			else res.end(JSON.stringify({ success: true, data: [] }));
		});
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		try {
			const { port } = server.address() as AddressInfo;
			const fakeEnv = {
				SCRAPEJOB_SCRAPER_URL: `http://127.0.0.1:${port}/api/v1`,
				SCRAPEJOB_SCRAPER_KEY: "fake-scraper-key",
			};
			const masked = await runCli(["account", "--saved", "--json"], { env: fakeEnv });
			expect(masked.code).toBe(0);
			expect(JSON.parse(masked.stdout).storage[0].config).toEqual({
				bucket: "b",
				access_key: maskSecret("AKIARAWACCESS99"),
				secret_key: maskSecret("raw-secret-key-42"),
			});
			const human = await runCli(["account", "--saved"], { env: fakeEnv });
			for (const secret of ["AKIARAWACCESS99", "raw-secret-key-42"]) {
				expect(masked.stdout).not.toContain(secret);
				expect(human.stdout).not.toContain(secret);
			}
			const full = await runCli(["account", "--saved", "--json", "--show-secrets"], { env: fakeEnv });
			expect(JSON.parse(full.stdout).storage[0].config.secret_key).toBe("raw-secret-key-42");
		} finally {
			server.closeAllConnections();
			await new Promise((resolve) => server.close(resolve));
		}
	});
});
