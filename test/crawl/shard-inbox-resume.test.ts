import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../../src/emulator/index.js";
import { shardOf } from "../../src/job/index.js";
import { isRunFolderName, readRecords, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

const servers: Server[] = [];
let emulator: Emulator | undefined;
beforeAll(() => assertBuilt());
afterEach(async () => {
	await emulator?.close();
	emulator = undefined;
	for (const server of servers.splice(0)) {
		server.closeAllConnections();
		await new Promise((resolve) => server.close(resolve));
	}
});

/** A site whose pages link to what `links` gives them, each answered after `delayMs` and once `held(path)` resolves. */
async function site(
	links: (path: string) => string[],
	delayMs: number,
	held: (path: string) => Promise<void> = () => Promise.resolve(),
): Promise<string> {
	const server = createServer((req, res) => {
		const path = req.url ?? "/";
		const anchors = links(path)
			.map((href) => `<a href="${href}">x</a>`)
			.join("");
		void held(path).then(() =>
			setTimeout(() => {
				res.writeHead(200, { "content-type": "text/html" });
				res.end(`<html><body>${anchors}</body></html>`);
			}, delayMs),
		);
	});
	servers.push(server);
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const PAGES = 12;

/** Polled (the writer is another process): the shard's run folder once it holds `atLeast` records. */
async function shardRecords(jobDir: string, index: number, atLeast: number, count = 2): Promise<string> {
	const deadline = Date.now() + 30_000;
	while (Date.now() < deadline) {
		const name = existsSync(jobDir)
			? readdirSync(jobDir).find((each) => isRunFolderName(each) && each.endsWith(`-shard-${index}-of-${count}`))
			: null;
		const file = name ? join(jobDir, name, "results.jsonl") : null;
		if (file && existsSync(file) && readFileSync(file, "utf8").split("\n").length - 1 >= atLeast)
			return join(jobDir, name!);
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	throw new Error(`shard ${index}: no ${atLeast} records within 30 s`);
}

describe("crawl with --shard: the inbox across a kill", () => {
	it("shard 2 killed after reading part of its inbox, then --resume: every handed link fetched once, the union is the unsharded crawl", async () => {
		let a = "";
		let b = "";
		// A's last three pages answer only once shard 2 is killed: its inbox then grows past what it read.
		let killed: () => void = () => undefined;
		const afterKill = new Promise<void>((resolve) => {
			killed = resolve;
		});
		const unshardedDone = { value: false };
		// A's pages /1…/12 each link two pages of B (B's host is shard 2's): shard 1 hands them over one page
		// at a time, so shard 2's inbox fills while it runs; shard 2 is killed once it has a few records.
		// Each site is started again until its port puts it on its shard: one in two each time, apart.
		for (let tries = 0; tries < 64 && (a === "" || shardOf(a, 2) !== 1); tries += 1) {
			a = await site(
				(path) => {
					if (path === "/") return Array.from({ length: PAGES }, (_, index) => `/${index + 1}`);
					const n = Number(path.slice(1));
					return [`${b}/p${n}-x`, `${b}/p${n}-y`];
				},
				20,
				(path) => (unshardedDone.value && Number(path.slice(1)) > PAGES - 3 ? afterKill : Promise.resolve()),
			);
		}
		for (let tries = 0; tries < 64 && (b === "" || shardOf(b, 2) !== 2); tries += 1) b = await site(() => [], 50);
		expect([shardOf(a, 2), shardOf(b, 2)]).toEqual([1, 2]);
		emulator = await startEmulator({ scenario: { concurrency: 8 } });
		// A short lease: the killed shard's lock lapses quickly, and shard 1 ends without waiting 30 s for it.
		const env = {
			SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey,
			SCRAPEJOB_API_URL: emulator.apiUrl,
			SCRAPEJOB_LOCK_LEASE_MS: "1500",
		};
		const dir = tempDir();
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 3, scope: any, robots: ignore}",
				"targets:",
				`  - ${a}/`,
				`  - ${b}/`,
				"",
			].join("\n"),
		);
		const whole = join(dir, "whole");
		const unsharded = await spawnCli(["run", job, "--out", whole, "--quiet"], env).done;
		expect(unsharded.code, unsharded.stderr).toBe(0);
		const wholeUrls = readdirSync(join(whole, "crawl"))
			.filter(isRunFolderName)
			.flatMap((name) => readRecords(join(whole, "crawl", name)).map((record) => record.url))
			.sort();
		expect(wholeUrls).toHaveLength(2 + PAGES + 2 * PAGES);

		unshardedDone.value = true;
		const out = join(dir, "out");
		const jobDir = join(out, "crawl");
		const ledgerStart = emulator.ledger.requestCount;
		const shard1 = spawnCli(["run", job, "--out", out, "--quiet", "--shard", "1/2"], env);
		const shard2 = spawnCli(["run", job, "--out", out, "--quiet", "--shard", "2/2"], env);
		const shard2Dir = await shardRecords(jobDir, 2, 3);
		shard2.child.kill("SIGKILL");
		await shard2.done;
		killed();
		// It had read part of its inbox (the file shard 1 alone writes), not all that shard 1 hands it.
		const inbox = "inbox-shard-2-from-1-of-2.jsonl";
		const state = JSON.parse(readFileSync(join(jobDir, ".inbox-shard-2-of-2.state"), "utf8")) as {
			files: Record<string, { read: number }>;
		};
		expect(state.files[inbox]?.read).toBeGreaterThan(0);
		const ended1 = await shard1.done;
		expect(ended1.code, ended1.stderr).toBe(0);
		expect(state.files[inbox]?.read).toBeLessThan(statSync(join(jobDir, inbox)).size);
		expect(readdirSync(jobDir).filter((name) => name.startsWith("inbox-"))).toEqual([inbox]);
		const killedSession = readRecords(shard2Dir);
		const askedBeforeResume = emulator.ledger.requestCount;

		const resumed = await spawnCli(["run", job, "--out", out, "--quiet", "--shard", "2/2", "--resume"], env).done;
		expect(resumed.code, resumed.stderr).toBe(0);

		// Nothing with a record from the killed session was asked for again.
		const answered = new Set(killedSession.map((record) => record.url));
		const askedAgain = emulator.ledger.entries
			.filter(
				(entry) => entry.seq > askedBeforeResume && entry.endpoint === "realtime" && answered.has(entry.url ?? ""),
			)
			.map((entry) => entry.url);
		expect(askedAgain).toEqual([]);
		// Every handed link has one record; the union of the shards' records is the unsharded crawl's URL set.
		const records = readdirSync(jobDir)
			.filter(isRunFolderName)
			.flatMap((name) => readRecords(join(jobDir, name)));
		const urls = records.map((record) => record.url).sort();
		expect(urls).toEqual(wholeUrls);
		for (const record of records) expect(record.status).toBe("ok");
		// Paid twice only when in flight at the kill: asked by the killed session, which wrote no record for it.
		// (An answer charged nothing — a 503 the service asks to retry, under load — is not a payment.)
		const asked = emulator.ledger.entries.filter(
			(entry) => entry.seq > ledgerStart && entry.endpoint === "realtime" && entry.creditsCharged > 0,
		);
		const counts = new Map<string, number>();
		for (const entry of asked) counts.set(entry.url ?? "", (counts.get(entry.url ?? "") ?? 0) + 1);
		const killedAsked = new Set(asked.filter((entry) => entry.seq <= askedBeforeResume).map((entry) => entry.url));
		for (const [url, count] of counts) {
			if (count === 1) continue;
			const seen = {
				url,
				count,
				shard2Host: url.startsWith(b),
				askedByKilled: killedAsked.has(url),
				answered: answered.has(url),
				answers: asked.filter((entry) => entry.url === url).map((entry) => [entry.seq, entry.status]),
			};
			expect(count, JSON.stringify(seen)).toBe(2);
			expect(seen.shard2Host && seen.askedByKilled && !seen.answered, JSON.stringify(seen)).toBe(true);
		}
	}, 90_000);
});

/** Every record of every run folder of the job. */
function allRecords(jobDir: string) {
	return readdirSync(jobDir)
		.filter(isRunFolderName)
		.flatMap((name) => readRecords(join(jobDir, name)));
}

describe("crawl with --shard: two writers hand links to one reader", () => {
	it("shards 1 and 3 each write their own file for shard 2; shard 2, killed and resumed, fetches every link of both once", async () => {
		const linkers = 5;
		let b = "";
		let killed: () => void = () => undefined;
		const afterKill = new Promise<void>((resolve) => {
			killed = resolve;
		});
		const unshardedDone = { value: false };
		// A linking site: its pages /1…/5 each link two pages of B, its last two answered only after the kill.
		const linking = (name: string) =>
			site(
				(path) => {
					if (path === "/") return Array.from({ length: linkers }, (_, index) => `/${index + 1}`);
					const n = Number(path.slice(1));
					return [`${b}/${name}${n}-x`, `${b}/${name}${n}-y`];
				},
				20,
				(path) => (unshardedDone.value && Number(path.slice(1)) > linkers - 2 ? afterKill : Promise.resolve()),
			);
		// One site per shard of 3 (ports are random: sites are started until each shard has one); B's first.
		const byShard = new Map<number, string>();
		for (let tries = 0; tries < 60 && byShard.size < 3; tries += 1) {
			const wantsB = !byShard.has(2);
			// Each linking site names its links apart (`/s7-3-x`): two linkers never link the same page of B.
			const origin = wantsB ? await site(() => [], 50) : await linking(`s${tries}-`);
			const owner = shardOf(origin, 3);
			if (byShard.has(owner) || (owner === 2) !== wantsB) continue;
			byShard.set(owner, origin);
			if (owner === 2) b = origin;
		}
		expect([...byShard.keys()].sort()).toEqual([1, 2, 3]);
		const [a, c] = [byShard.get(1)!, byShard.get(3)!];
		emulator = await startEmulator({ scenario: { concurrency: 8 } });
		const env = {
			SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey,
			SCRAPEJOB_API_URL: emulator.apiUrl,
			SCRAPEJOB_LOCK_LEASE_MS: "1500",
		};
		const dir = tempDir();
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 3, scope: any, robots: ignore}",
				"targets:",
				`  - ${a}/`,
				`  - ${b}/`,
				`  - ${c}/`,
				"",
			].join("\n"),
		);
		const whole = join(dir, "whole");
		const unsharded = await spawnCli(["run", job, "--out", whole, "--quiet"], env).done;
		expect(unsharded.code, unsharded.stderr).toBe(0);
		const wholeUrls = allRecords(join(whole, "crawl"))
			.map((record) => record.url)
			.sort();
		expect(wholeUrls).toHaveLength(3 + 2 * linkers + 2 * 2 * linkers);

		unshardedDone.value = true;
		const out = join(dir, "out");
		const jobDir = join(out, "crawl");
		const ledgerStart = emulator.ledger.requestCount;
		const shards = [1, 2, 3].map((index) =>
			spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${index}/3`], env),
		);
		await shardRecords(jobDir, 2, 3, 3);
		shards[1]!.child.kill("SIGKILL");
		await shards[1]!.done;
		killed();
		for (const index of [0, 2]) {
			const ended = await shards[index]!.done;
			expect(ended.code, ended.stderr).toBe(0);
		}
		// One file per writer: shard 1's and shard 3's links for shard 2 never share a file.
		expect(
			readdirSync(jobDir)
				.filter((name) => name.startsWith("inbox-"))
				.sort(),
		).toEqual(["inbox-shard-2-from-1-of-3.jsonl", "inbox-shard-2-from-3-of-3.jsonl"]);
		const askedBeforeResume = emulator.ledger.requestCount;
		const answered = new Set(allRecords(jobDir).map((record) => record.url));

		const resumed = await spawnCli(["run", job, "--out", out, "--quiet", "--shard", "2/3", "--resume"], env).done;
		expect(resumed.code, resumed.stderr).toBe(0);
		// Nothing with a record before the resume is asked for again; every link of both writers has one record.
		const askedAgain = emulator.ledger.entries
			.filter((entry) => entry.seq > askedBeforeResume && entry.endpoint === "realtime")
			.map((entry) => entry.url ?? "")
			.filter((url) => answered.has(url));
		expect(askedAgain).toEqual([]);
		const urls = allRecords(jobDir)
			.map((record) => record.url)
			.sort();
		expect(urls).toEqual(wholeUrls);
		// Asked twice only when in flight at the kill (asked by the killed process, which wrote no record for it).
		const asked = emulator.ledger.entries.filter((entry) => entry.seq > ledgerStart && entry.endpoint === "realtime");
		const counts = new Map<string, number>();
		for (const entry of asked) counts.set(entry.url ?? "", (counts.get(entry.url ?? "") ?? 0) + 1);
		for (const [url, count] of counts) {
			if (count === 1) continue;
			expect({ url, count, answered: answered.has(url), shard2: url.startsWith(b) }).toEqual({
				url,
				count: 2,
				answered: false,
				shard2: true,
			});
		}
	}, 90_000);
});

describe("crawl with --shard: a shard that starts late", () => {
	it("links it hands to a shard that has ended make that run incomplete: merge says so, and its --resume fetches them", async () => {
		let a = "";
		let b = "";
		// A's pages link B's; B's pages link pages of A that only B links (`/late-…`): shard 1 learns of them
		// only from shard 2, which starts after shard 1 has ended.
		// Each site is started again until its port puts it on its shard: one in two each time, apart.
		for (let tries = 0; tries < 64 && (a === "" || shardOf(a, 2) !== 1); tries += 1)
			a = await site(
				(path) => (path === "/" ? ["/1", "/2", `${b}/x`] : path.startsWith("/late") ? [] : [`${b}/y${path}`]),
				0,
			);
		for (let tries = 0; tries < 64 && (b === "" || shardOf(b, 2) !== 2); tries += 1)
			b = await site((path) => (path === "/" ? [] : [`${a}/late${path.replaceAll("/", "-")}`]), 0);
		expect([shardOf(a, 2), shardOf(b, 2)]).toEqual([1, 2]);
		emulator = await startEmulator({ scenario: { concurrency: 4 } });
		const env = {
			SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey,
			SCRAPEJOB_API_URL: emulator.apiUrl,
			SCRAPEJOB_LOCK_LEASE_MS: "500",
		};
		const dir = tempDir();
		const job = writeJob(
			dir,
			"crawl",
			[
				"name: crawl",
				"defaults: {mode: request}",
				"output: {content: none}",
				"crawl: {max_depth: 4, scope: any, robots: ignore}",
				"targets:",
				`  - ${a}/`,
				"",
			].join("\n"),
		);
		const whole = join(dir, "whole");
		expect((await spawnCli(["run", job, "--out", whole, "--quiet"], env).done).code).toBe(0);
		const wholeUrls = allRecords(join(whole, "crawl"))
			.map((record) => record.url)
			.sort();
		expect(wholeUrls.filter((url) => url.includes("/late"))).toHaveLength(3);

		const out = join(dir, "out");
		const jobDir = join(out, "crawl");
		// Shard 1 alone: it waits out the start grace for shard 2, then ends.
		const first = await spawnCli(["run", job, "--out", out, "--quiet", "--shard", "1/2"], env).done;
		expect(first.code, first.stderr).toBe(0);
		const second = await spawnCli(["run", job, "--out", out, "--quiet", "--shard", "2/2"], env).done;
		expect(second.code, second.stderr).toBe(0);
		const folders = () =>
			readdirSync(jobDir)
				.filter(isRunFolderName)
				.map((name) => join(jobDir, name));
		expect(allRecords(jobDir).filter((record) => record.url.includes("/late"))).toEqual([]);

		const merged = await runCli(["merge", ...folders(), "--out", join(dir, "m1"), "--json"]);
		expect(merged.code, merged.stderr).toBe(1);
		expect(JSON.parse(merged.stdout)).toMatchObject({ complete: false, shards: { missing: [], incomplete: [1] } });

		const resumed = await spawnCli(["run", job, "--out", out, "--quiet", "--shard", "1/2", "--resume"], env).done;
		expect(resumed.code, resumed.stderr).toBe(0);
		const again = await runCli(["merge", ...folders(), "--out", join(dir, "m2"), "--json"]);
		expect(again.code, again.stderr).toBe(0);
		expect(JSON.parse(again.stdout)).toMatchObject({ complete: true });
		expect(
			allRecords(jobDir)
				.map((record) => record.url)
				.sort(),
		).toEqual(wholeUrls);
	}, 90_000);
});
