import { readdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { shardOf } from "../../src/job/index.js";
import { readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";

const servers: Server[] = [];
let emulator: Emulator | undefined;
afterEach(async () => {
	await emulator?.close();
	emulator = undefined;
	for (const server of servers.splice(0)) {
		server.closeAllConnections();
		await new Promise((resolve) => server.close(resolve));
	}
});

/** A tiny site whose pages link to the paths (or absolute URLs) `links` gives them. */
async function site(links: (path: string) => string[]): Promise<string> {
	const server = createServer((req, res) => {
		const anchors = links(req.url ?? "/")
			.map((href) => `<a href="${href}">x</a>`)
			.join("");
		res.writeHead(200, { "content-type": "text/html" });
		res.end(`<html><body>${anchors}</body></html>`);
	});
	servers.push(server);
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("crawl with --shard", () => {
	it("a link to another shard's host is left to that shard: each page fetched by one shard only", async () => {
		let a = "";
		let b = "";
		// Two hosts that hash to different shards of 2 (ports are random: retry until they do).
		for (let tries = 0; tries < 20 && (a === "" || shardOf(a, 2) === shardOf(b, 2)); tries += 1) {
			a = await site((path) => (path === "/" ? ["/a", `${b}/x`] : path === "/a" ? ["/b"] : []));
			b = await site((path) => (path === "/x" ? ["/y", `${a}/b`] : []));
		}
		expect(shardOf(a, 2)).not.toBe(shardOf(b, 2));
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults:",
				"  mode: request",
				"crawl:",
				"  max_depth: 3",
				"  scope: any",
				"targets:",
				`  - ${a}/`,
				`  - ${b}/x`,
				"",
			].join("\n"),
		);
		const urls: string[] = [];
		for (const index of [1, 2]) {
			const result = await runCli(["run", job, "--out", out, "--quiet", "--shard", `${index}/2`], { env });
			expect(result.code, result.stderr).toBe(0);
			const folder = readdirSync(join(out, "crawl")).find((name) => name.endsWith(`-shard-${index}-of-2`))!;
			const records = readRecords(join(out, "crawl", folder));
			for (const record of records) expect(shardOf(record.url, 2)).toBe(index);
			urls.push(...records.map((record) => record.url));
		}
		// The union is the whole site pair, each page once: a's /, /a, /b and b's /x, /y.
		expect(urls.sort()).toEqual([`${a}/`, `${a}/a`, `${a}/b`, `${b}/x`, `${b}/y`].sort());
	});
});
