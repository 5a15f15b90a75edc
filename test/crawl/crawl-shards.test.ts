import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { shardOf } from "../../src/job/index.js";
import { isRunFolderName, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

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

/** A tiny site whose pages link to the paths (or absolute URLs) `links` gives them, each answered after `delayMs`. */
async function site(links: (path: string) => string[], delayMs: (path: string) => number = () => 0): Promise<string> {
	const server = createServer((req, res) => {
		const anchors = links(req.url ?? "/")
			.map((href) => `<a href="${href}">x</a>`)
			.join("");
		setTimeout(
			() => {
				res.writeHead(200, { "content-type": "text/html" });
				res.end(`<html><body>${anchors}</body></html>`);
			},
			delayMs(req.url ?? "/"),
		);
	});
	servers.push(server);
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * Sites A and B whose hosts fall in different shards of 2 (new ones tried until they do), linking as
 * `links` says given both origins, and the emulator with the crawl job of their two seeds.
 */
async function twoShardCrawl(links: (site: "a" | "b", path: string, origins: { a: string; b: string }) => string[]) {
	const origins = { a: "", b: "" };
	for (let tries = 0; tries < 20 && (origins.a === "" || shardOf(origins.a, 2) === shardOf(origins.b, 2)); tries += 1) {
		origins.a = await site((path) => links("a", path, origins));
		origins.b = await site((path) => links("b", path, origins));
	}
	expect(shardOf(origins.a, 2)).not.toBe(shardOf(origins.b, 2));
	emulator = await startEmulator({ scenario: { concurrency: 2 } });
	const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
	const dir = tempDir();
	const lines = ["name: crawl", "defaults: {mode: request}", "crawl: {max_depth: 3}", "targets:"];
	const job = writeJob(dir, "crawl", [...lines, `  - ${origins.a}/`, `  - ${origins.b}/`, ""].join("\n"));
	return { ...origins, env, dir, job };
}

describe("crawl with --shard", () => {
	it("a link to another shard's host is left to that shard: each page fetched by one shard only", async () => {
		assertBuilt();
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
		// Shards of a layout run together: each waits for the other before it ends (links may still come).
		const results = await Promise.all(
			[1, 2].map((index) => spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${index}/2`], env).done),
		);
		for (const index of [1, 2]) {
			const result = results[index - 1]!;
			expect(result.code, result.stderr).toBe(0);
			const folder = readdirSync(join(out, "crawl")).find((name) => name.endsWith(`-shard-${index}-of-2`))!;
			const records = readRecords(join(out, "crawl", folder));
			for (const record of records) expect(shardOf(record.url, 2)).toBe(index);
			urls.push(...records.map((record) => record.url));
		}
		// The union is the whole site pair, each page once: a's /, /a, /b and b's /x, /y.
		expect(urls.sort()).toEqual([`${a}/`, `${a}/a`, `${a}/b`, `${b}/x`, `${b}/y`].sort());
	});

	it("a link to another shard's host is handed to it through its inbox: the merged crawl is the unsharded crawl", async () => {
		assertBuilt();
		// Only a page of A links to a page of B that B's seed does not lead to, and that page links back to A.
		const { a, b, env, dir, job } = await twoShardCrawl((site, path, { a, b }) => {
			if (site === "a") return path === "/" ? [`${b}/deep`] : [];
			return path === "/deep" ? [`${a}/back`] : [];
		});
		const urlsOf = (out: string) =>
			readdirSync(join(out, "crawl"))
				.filter(isRunFolderName)
				.flatMap((name) => readRecords(join(out, "crawl", name)).map((record) => record.url))
				.sort();
		const whole = join(dir, "whole");
		const unsharded = await spawnCli(["run", job, "--out", whole, "--quiet"], env).done;
		expect(unsharded.code, unsharded.stderr).toBe(0);
		expect(urlsOf(whole)).toEqual([`${a}/`, `${a}/back`, `${b}/`, `${b}/deep`].sort());

		const out = join(dir, "out");
		const chargedBefore = emulator!.ledger.totalCharged();
		const shards = await Promise.all(
			[1, 2].map((index) => spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${index}/2`], env).done),
		);
		for (const shard of shards) expect(shard.code, shard.stderr).toBe(0);
		expect(urlsOf(out)).toEqual(urlsOf(whole));
		for (const name of readdirSync(join(out, "crawl")).filter(isRunFolderName)) {
			const index = Number(/-shard-(\d)-of-2$/.exec(name)![1]);
			for (const record of readRecords(join(out, "crawl", name))) expect(shardOf(record.url, 2)).toBe(index);
		}
		const folders = readdirSync(join(out, "crawl"))
			.filter(isRunFolderName)
			.map((name) => join(out, "crawl", name));
		const merged = await runCli(["merge", ...folders, "--out", join(dir, "merged"), "--json"]);
		expect(merged.code, merged.stderr).toBe(0);
		expect(
			readRecords(join(dir, "merged"))
				.map((record) => record.url)
				.sort(),
		).toEqual(urlsOf(whole));
		// Every credit the shards paid, robots.txt included (no record holds it), is in the merged summary.
		const summary = JSON.parse(merged.stdout) as {
			credits: { used: number };
			targets: { total: number | null; remaining: number | null };
			crawl?: { pages: number; max_depth: number };
		};
		expect(summary.credits.used).toBe(emulator!.ledger.totalCharged() - chargedBefore);
		// A crawl's size is its pages, as one crawl's summary says: not "4 of 2" (the seeds run.json counts).
		expect(summary.targets).toMatchObject({ total: null, remaining: null });
		expect(summary.crawl).toMatchObject({ pages: 4, max_depth: 3 });
		expect(merged.stderr + (await runCli(["merge", ...folders, "--out", join(dir, "merged")])).stdout).toMatch(
			/targets +4 done: 4 ok.*\n[\s\S]*crawl +4 pages/,
		);
	}, 60_000);

	it("a redirect that lands on another shard's page hands it over as fetched: that shard does not pay for it again", async () => {
		assertBuilt();
		// A's /moved redirects to B's /landing; B's seed links to /landing too, answered only once shard A
		// has handed the landing over (its inbox line is written), so shard B's link comes after it.
		let inbox = "";
		const inboxHolds = async (text: string) => {
			for (let waited = 0; waited < 10_000; waited += 20) {
				if (existsSync(inbox) && readFileSync(inbox, "utf8").includes(text)) return;
				await new Promise((resolve) => setTimeout(resolve, 20));
			}
		};
		const page = (res: ServerResponse, links: string[]) =>
			res
				.writeHead(200, { "content-type": "text/html" })
				.end(`<html><body>${links.map((href) => `<a href="${href}">x</a>`).join("")}</body></html>`);
		const start = async (handler: (path: string, res: ServerResponse) => void) => {
			const server = createServer((req, res) => handler(req.url ?? "/", res));
			servers.push(server);
			await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
			return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
		};
		let a = "";
		let b = "";
		for (let tries = 0; tries < 20 && (a === "" || shardOf(a, 2) === shardOf(b, 2)); tries += 1) {
			a = await start((path, res) => {
				if (path === "/moved") res.writeHead(302, { location: `${b}/landing`, "content-length": 0 }).end();
				else page(res, path === "/" ? ["/moved"] : []);
			});
			b = await start((path, res) => {
				if (path === "/") void inboxHolds("/landing").then(() => page(res, ["/landing"]));
				else page(res, []);
			});
		}
		expect(shardOf(a, 2)).not.toBe(shardOf(b, 2));
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
		const dir = tempDir();
		const out = join(dir, "out");
		inbox = join(out, "crawl", `inbox-shard-${shardOf(b, 2)}-from-${shardOf(a, 2)}-of-2.jsonl`);
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"crawl: {max_depth: 3, robots: ignore}",
				"targets:",
				`  - ${a}/`,
				`  - ${b}/`,
				"",
			].join("\n"),
		);
		const shards = await Promise.all(
			[1, 2].map((index) => spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${index}/2`], env).done),
		);
		for (const shard of shards) expect(shard.code, shard.stderr).toBe(0);
		expect(readFileSync(inbox, "utf8")).toContain('"r":1');
		// /landing was paid once, as /moved's page; no shard asked for it under its own address.
		const asked = emulator.ledger.entries.filter((entry) => entry.endpoint === "realtime").map((entry) => entry.url);
		expect(asked.sort()).toEqual([`${a}/`, `${a}/moved`, `${b}/`].sort());
		const records = readdirSync(join(out, "crawl"))
			.filter(isRunFolderName)
			.flatMap((name) => readRecords(join(out, "crawl", name)).map((record) => record.url));
		expect(records.sort()).toEqual([`${a}/`, `${a}/moved`, `${b}/`].sort());
	}, 60_000);

	// /dev/full answers every write with ENOSPC: the disk filled up while the crawl went on.
	it.skipIf(!existsSync("/dev/full"))(
		"a link that cannot be handed over (a full disk) stops the shard as an output failure: exit 5 naming the inbox file",
		async () => {
			assertBuilt();
			const { a, b, env, dir, job } = await twoShardCrawl((site, path, { b }) =>
				site === "a" && path === "/" ? [`${b}/deep`] : [],
			);
			const out = join(dir, "out");
			const inbox = `inbox-shard-${shardOf(b, 2)}-from-${shardOf(a, 2)}-of-2.jsonl`;
			mkdirSync(join(out, "crawl"), { recursive: true });
			symlinkSync("/dev/full", join(out, "crawl", inbox));
			const result = await spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${shardOf(a, 2)}/2`], env).done;
			expect(result.stderr).toMatch(
				new RegExp(
					`output failed: cannot write .*${inbox.replaceAll(".", "\\.")}: no space left on the device \\(ENOSPC\\)`,
				),
			);
			expect(result.code, result.stderr).toBe(5);
			// Room again: the resume hands the link over (the page's record was not written, so it is done again).
			rmSync(join(out, "crawl", inbox));
			const resumed = await spawnCli(
				["run", job, "--out", out, "--quiet", "--shard", `${shardOf(a, 2)}/2`, "--resume"],
				// The other shard never starts: waited for one short lease, not 30 s.
				{ ...env, SCRAPEJOB_LOCK_LEASE_MS: "2000" },
			).done;
			expect(resumed.code, resumed.stderr).toBe(0);
			expect(readFileSync(join(out, "crawl", inbox), "utf8")).toContain(`"${b}/deep"`);
		},
		60_000,
	);

	it("a shard woken by a link while the other fills the key asks for a free slot before it sends: one 429 at most (the race), no 60 s pause", async () => {
		assertBuilt();
		// B's seed has no links: B runs out of work and the key is all A's, whose slow pages fill it. Then
		// a page of A hands B a link: B's free slots, heard before it went quiet, are the others' now.
		let a = "";
		let b = "";
		for (let tries = 0; tries < 20 && (a === "" || shardOf(a, 2) === shardOf(b, 2)); tries += 1) {
			a = await site(
				(path) => (path === "/" ? [1, 2, 3, 4, 5, 6, 7, 8].map((n) => `/p${n}`) : path === "/p2" ? [`${b}/deep`] : []),
				(path) => (path.startsWith("/p") ? 400 : 0),
			);
			b = await site(() => []);
		}
		expect(shardOf(a, 2)).not.toBe(shardOf(b, 2));
		// A short reset: without the probe the 429 shows as one, not as a test that times out.
		emulator = await startEmulator({ scenario: { concurrency: 2, reset_seconds: 2 } });
		const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"crawl: {max_depth: 2, scope: any}",
				"targets:",
				`  - ${a}/`,
				`  - ${b}/`,
				"",
			].join("\n"),
		);
		const results = await Promise.all(
			[1, 2].map((index) => spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${index}/2`], env).done),
		);
		for (const result of results) expect(result.code, result.stderr).toBe(0);
		// B asked the free health check between A's page that handed it the link and its own send. Another
		// shard can still take the slot heard free in between (each shard's view is an answer old): one 429
		// at most, where without the question B sends on the slots it heard before it went quiet.
		const realtime = emulator.ledger.byEndpoint("realtime");
		const handedOver = realtime.find((entry) => entry.url === `${a}/p2`)!;
		const woken = realtime.find((entry) => entry.url === `${b}/deep`)!;
		const asked = emulator.ledger
			.byEndpoint("health")
			.filter((entry) => entry.at >= handedOver.at && entry.at <= woken.at);
		expect(asked.length).toBeGreaterThan(0);
		expect(emulator.ledger.statusCounts()[429] ?? 0).toBeLessThanOrEqual(1);
		// Every page fetched once (robots.txt apart, and the send the race's 429 refused): A's 9, B's seed and
		// the page handed to B.
		const pages = emulator.ledger
			.byEndpoint("realtime")
			.filter((entry) => entry.status !== 429)
			.map((entry) => entry.url!)
			.filter((url) => !url.endsWith("/robots.txt"));
		expect(pages.sort()).toEqual(
			[`${a}/`, ...[1, 2, 3, 4, 5, 6, 7, 8].map((n) => `${a}/p${n}`), `${b}/`, `${b}/deep`].sort(),
		);
	}, 60_000);

	it("the shard's inbox state that cannot be written once it runs out of work stops it as an output failure: exit 5 naming the file", async () => {
		assertBuilt();
		const dir = tempDir();
		const out = join(dir, "out");
		let state = "";
		// While the seed is fetched, a folder (not empty) takes the state file's place: the next write of the
		// state (the shard out of work) cannot rename over it.
		const a = await site((path) => {
			if (path === "/" && state !== "") {
				rmSync(state, { force: true });
				mkdirSync(join(state, "in-the-way"), { recursive: true });
			}
			return [];
		});
		state = join(out, "crawl", `.inbox-shard-${shardOf(a, 2)}-of-2.state`);
		emulator = await startEmulator({ scenario: { concurrency: 2 } });
		const env = { SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey, SCRAPEJOB_API_URL: emulator.apiUrl };
		const job = writeJob(
			dir,
			"crawl",
			["name: crawl", "defaults: {mode: request}", "crawl: {max_depth: 3}", "targets:", `  - ${a}/`, ""].join("\n"),
		);
		const result = await spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${shardOf(a, 2)}/2`], env).done;
		expect(result.stderr).toMatch(/output failed: cannot write .*\.inbox-shard-\d-of-2\.state/);
		expect(result.code, result.stderr).toBe(5);
	});
});
