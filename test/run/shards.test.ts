import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { afterEach, describe, expect, it } from "vitest";
import { type DemoSite, startDemoSite } from "../../src/emulator/index.js";
import { type ProgressSnapshot, runJobFile } from "../../src/index.js";
import { parseShard, shardOf } from "../../src/job/index.js";
import { createSharedKeyConcurrency, shareOf } from "../../src/run/flow/shared-key-concurrency.js";
import { isRunFolderName, readCsv, readRecords, readSummary, tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";
import { assertBuilt, runPrintedCommand, spawnCli } from "../helpers/spawn-cli.js";
import { until } from "../helpers/until.js";

let service: TestService | undefined;
let sites: DemoSite[] = [];
afterEach(async () => {
	await service?.close();
	service = undefined;
	for (const site of sites.splice(0)) await site.close();
});

/** Several target hosts: a host is `host:port`, so each demo site on its own port is a host of its own. */
async function hostsOf(count: number, latencyMs = 0): Promise<string[]> {
	sites = await Promise.all(Array.from({ length: count }, () => startDemoSite({ latencyMs })));
	return sites.map((site) => site.url);
}

describe("shard assignment", () => {
	it("is a stable hash of the URL's host (port included): one host, one shard", () => {
		expect(shardOf("https://a.example/x", 4)).toBe(shardOf("https://a.example/y?z=1", 4));
		expect(shardOf("https://a.example:8443/x", 4)).toBe(shardOf("https://a.example:8443/other", 4));
		// Stable across versions and machines: pinned values.
		expect([1, 2, 3, 4, 5].map((n) => shardOf(`https://host-${n}.example/`, 3))).toEqual(
			[1, 2, 3, 4, 5].map((n) => shardOf(`https://host-${n}.example/`, 3)),
		);
		const spread = new Set(Array.from({ length: 60 }, (_, n) => shardOf(`https://host-${n}.example/`, 3)));
		expect([...spread].sort()).toEqual([1, 2, 3]);
		expect(shardOf("https://a.example/", 1)).toBe(1);
	});

	it("reads I/N, and auto/N from JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX (0-based)", () => {
		expect(parseShard("2/3", {})).toEqual({ index: 2, count: 3 });
		expect(parseShard("auto/3", { JOB_COMPLETION_INDEX: "0" })).toEqual({ index: 1, count: 3 });
		expect(parseShard("auto/3", { AWS_BATCH_JOB_ARRAY_INDEX: "2" })).toEqual({ index: 3, count: 3 });
		expect(parseShard("auto/3", {})).toMatch(/neither JOB_COMPLETION_INDEX/);
		expect(parseShard("auto/3", { JOB_COMPLETION_INDEX: "3" })).toMatch(/not an index from 0 to 2/);
		expect(parseShard("0/3", {})).toMatch(/I must be 1 to 3/);
		expect(parseShard("4/3", {})).toMatch(/I must be 1 to 3/);
		expect(parseShard("two/3", {})).toMatch(/must be I\/N/);
	});

	it("shards split the key's limit among the busy ones exactly, count unseen shards during the start grace, ramp up into their share, halve on a 429", () => {
		// The shares of B busy shards add up to the limit: 5 over 3 is 2 + 2 + 1, never 1 + 1 + 1.
		expect([0, 1, 2].map((rank) => shareOf(5, 3, rank))).toEqual([2, 2, 1]);
		expect([0, 1, 2].map((rank) => shareOf(12, 3, rank))).toEqual([4, 4, 4]);
		// More busy shards than slots: the first L in index order take one each, the others wait their turn.
		expect([0, 1, 2].map((rank) => shareOf(2, 3, rank))).toEqual([1, 1, 0]);
		let now = 1_000_000;
		// Shard 3 starts first: the others are not running yet, but within the grace they hold their shares.
		let live = [3];
		let idle: ReadonlySet<number> = new Set();
		const third = createSharedKeyConcurrency({
			limit: 10,
			shard: { index: 3, count: 3 },
			liveShards: () => live,
			idleShards: () => idle,
			clock: () => now,
			startGraceMs: 2000,
		});
		expect(third.concurrency).toBe(3);
		// Free slots reported: no growth past its share (that overfilled the key when others ramped up).
		expect(third.answered(10, 7)).toBe(3);
		// The others show up (new arrays, as each lock read gives): still 4 + 3 + 3.
		live = [1, 2, 3];
		expect(third.answered(10, 0)).toBe(3);
		// Shard 2 ends (its lock released): 5 + 5, taken one slot an answer while one is reported free.
		live = [1, 3];
		expect(third.answered(10, 2)).toBe(4);
		expect(third.answered(10, 0)).toBe(4);
		expect(third.answered(10, 1)).toBe(5);
		expect(third.answered(10, 3)).toBe(5);
		// Shard 1 is out of work (a crawl waiting for links): the whole key, in the same steps.
		idle = new Set([1]);
		live = [1, 3];
		for (let step = 6; step <= 10; step += 1) expect(third.answered(10, 1)).toBe(step);
		// Shard 1 works again: back to 5 at once (its fetches above that end on their own).
		idle = new Set();
		live = [1, 3];
		expect(third.answered(10, 0)).toBe(5);
		// A 429 halves; free slots bring it back to its share, one an answer.
		expect(third.rateLimited()).toBe(2);
		expect(third.answered(10, 1)).toBe(3);
		expect(third.answered(10, 0)).toBe(3);
		expect(third.answered(10, 2)).toBe(4);
		// A shard that was never seen stops counting once the grace is over; one that starts while others
		// run begins at one fetch and ramps up (the others may still hold its slots).
		now += 5000;
		const late = createSharedKeyConcurrency({
			limit: 10,
			shard: { index: 2, count: 3 },
			liveShards: () => [1, 2, 3],
			clock: () => now,
			startGraceMs: 2000,
		});
		expect(late.concurrency).toBe(1);
		expect(late.answered(10, 0)).toBe(1);
		expect(late.answered(10, 1)).toBe(2);
		expect(late.answered(10, 1)).toBe(3);
		expect(late.answered(10, 5)).toBe(3);

		// A limit of 2 over 3 shards: shard 3 sends nothing (no answer comes to it) until the peers' files say
		// one of the others ended; then one fetch, and its answers ramp it up to its share.
		let peers = [1, 2, 3];
		const waiting = createSharedKeyConcurrency({
			limit: 2,
			shard: { index: 3, count: 3 },
			liveShards: () => peers,
			clock: () => now,
			startGraceMs: 2000,
		});
		expect(waiting.concurrency).toBe(0);
		expect(waiting.peersRead()).toBe(0);
		expect(waiting.rateLimited()).toBe(0);
		peers = [1, 3];
		expect(waiting.peersRead()).toBe(1);
		expect(waiting.answered(2, 1)).toBe(1);
		peers = [3];
		expect(waiting.peersRead()).toBe(1);
		expect(waiting.answered(2, 1)).toBe(2);
		// Shard 1 is back (a resume): its turn is first again; the shard still sending ends where it is.
		peers = [1, 2, 3];
		expect(waiting.peersRead()).toBe(0);

		// Shards run one after another on a limit of 1: shard 2, started just after shard 1 ended, is not kept
		// waiting through the grace by it; a shard 1 not started yet is waited for.
		const second = (endedShards: ReadonlySet<number>) =>
			createSharedKeyConcurrency({
				limit: 1,
				shard: { index: 2, count: 2 },
				liveShards: () => [2],
				clock: () => now,
				startGraceMs: 2000,
				endedShards,
			}).concurrency;
		expect(second(new Set([1]))).toBe(1);
		expect(second(new Set())).toBe(0);
	});
});

describe("a shard resumed after the others ended", () => {
	it("takes the whole key at once: the ended shards are not counted as late to start during the grace", async () => {
		const service = await startTestService({ concurrency: 4, latency_ms: 40 });
		try {
			const dir = tempDir();
			const out = join(dir, "out");
			const urls = Array.from({ length: 60 }, (_, index) => `  - ${service.site.url}/product/${index + 1}`);
			const job = writeJob(
				dir,
				"shop",
				["name: shop", "shard_by: url", "defaults: {mode: request}", "targets:", ...urls, ""].join("\n"),
			);
			const run = (args: string[]) => runCli(["run", job, "--out", out, "--quiet", ...args], { env: service.env });
			// Shard 1 stops at a budget early; shard 2 runs whole after it: it ended during shard 1's run.
			expect((await run(["--shard", "1/2", "--max-credits", "4"])).code).toBe(1);
			expect((await run(["--shard", "2/2"])).code).toBe(0);
			service.emulator.ledger.clear();
			const resumed = await run(["--shard", "1/2", "--resume", "--max-credits", "1000"]);
			expect(resumed.code, resumed.stderr).toBe(0);
			// Not half the key for the 30 s grace, waiting for a shard 2 that was done.
			expect(service.emulator.ledger.maxInFlight()).toBe(4);
		} finally {
			await service.close();
		}
	});
});

/** Job `name` of `count` pages of one host (the demo site: any /page/<n> is one), split by URL. */
function onePageHostJob(dir: string, name: string, site: string, count: number): string {
	const pages = Array.from({ length: count }, (_, n) => `  - ${site}/page/${n + 1}`);
	return writeJob(
		dir,
		name,
		[`name: ${name}`, "defaults: {mode: request}", "shard_by: url", "targets:", ...pages, ""].join("\n"),
	);
}

function shardJob(hosts: string[], perHost: number): string {
	const lines = [
		"name: shop",
		"defaults:",
		"  mode: request",
		"retry:",
		"  attempts: 2",
		"  backoff_ms: 5",
		"targets:",
	];
	for (const host of hosts) for (let page = 1; page <= perHost; page += 1) lines.push(`  - ${host}/product/${page}`);
	return `${lines.join("\n")}\n`;
}

describe("shards on one key, then merge", () => {
	it("3 shard processes at once: each target once in the union, in flight never above the key's limit, no 429, merged", async () => {
		assertBuilt();
		service = await startTestService({ concurrency: 4, latency_ms: 25 });
		const hosts = await hostsOf(6);
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shardJob(hosts, 6));
		const runs = [1, 2, 3].map((index) =>
			spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${index}/3`], service!.env),
		);
		const ended = await Promise.all(runs.map((run) => run.done));
		for (const result of ended) expect(result.stderr).toBe("");
		expect(ended.map((result) => result.code)).toEqual([0, 0, 0]);

		const folders = readdirSync(join(out, "shop")).filter(isRunFolderName).sort();
		expect(folders.map((name) => name.replace(/^.*(-shard-\d-of-3)$/, "$1")).sort()).toEqual([
			"-shard-1-of-3",
			"-shard-2-of-3",
			"-shard-3-of-3",
		]);
		const all = folders.flatMap((name) => readRecords(join(out, "shop", name)));
		expect(all).toHaveLength(36);
		expect(new Set(all.map((record) => record.id)).size).toBe(36);
		// Every record of a shard is of that shard's hosts.
		for (const name of folders) {
			const index = Number(/-shard-(\d)-of-3$/.exec(name)![1]);
			for (const record of readRecords(join(out, "shop", name))) expect(shardOf(record.url, 3)).toBe(index);
		}
		const ledger = service.emulator.ledger;
		expect(ledger.maxInFlight()).toBeLessThanOrEqual(4);
		expect(ledger.statusCounts()[429]).toBeUndefined();
		expect(ledger.byEndpoint("realtime")).toHaveLength(36);

		const merged = join(dir, "merged");
		const result = await runCli([
			"merge",
			...folders.map((name) => join(out, "shop", name)),
			"--out",
			merged,
			"--json",
		]);
		expect(result.code).toBe(0);
		const summary = JSON.parse(result.stdout);
		expect(summary).toMatchObject({
			complete: true,
			targets: { total: 36, done: 36 },
			shards: { count: 3, missing: [], incomplete: [] },
		});
		expect(summary.credits.used).toBe(all.reduce((sum, record) => sum + record.credits_used, 0));
		expect(readRecords(merged)).toHaveLength(36);
		expect(readCsv(merged)).toHaveLength(36);
		expect(existsSync(join(merged, "report.html"))).toBe(true);
		expect(readSummary(merged).complete).toBe(true);
	}, 60_000);

	/** The 2-shard "shop" job run once per `--shard` given (each must exit 0); its run folders. */
	async function runShardsOfShop(shards: string[]) {
		const started = await startTestService({ concurrency: 4 });
		service = started;
		const hosts = await hostsOf(4);
		// Hosts on random ports: make sure each of the 2 shards has one (all 4 in one shard is 1 in 8).
		while (new Set(hosts.map((host) => shardOf(host, 2))).size < 2) {
			const extra = await startDemoSite();
			sites.push(extra);
			hosts.push(extra.url);
		}
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shardJob(hosts, 2));
		for (const shard of shards) {
			const result = await runCli(["run", job, "--out", out, "--quiet", "--shard", shard], { env: started.env });
			expect(result.code).toBe(0);
		}
		const folders = readdirSync(join(out, "shop"))
			.filter(isRunFolderName)
			.map((name) => join(out, "shop", name));
		return { dir, out, hosts, folders, env: started.env };
	}

	it("merge refuses a target recorded by two shards, naming both", async () => {
		const { dir, folders } = await runShardsOfShop(["1/2", "2/2"]);
		const shardIndex = (folder: string) =>
			(JSON.parse(readFileSync(join(folder, "run.json"), "utf8")) as { shard: { index: number } }).shard.index;
		const [first, second] = [...folders].sort((a, b) => shardIndex(a) - shardIndex(b));
		const copied = readRecords(first!)[0]!;
		appendFileSync(join(second!, "results.jsonl"), `${JSON.stringify(copied)}\n`);

		const merged = await runCli(["merge", first!, second!, "--out", join(dir, "m")]);
		expect(merged.code).toBe(2);
		expect(merged.stderr).toContain(`target ${copied.id} has a record in shard 1 and in shard 2: the shards overlap`);
		// Refused while reading: nothing written, not even a partial folder beside --out.
		expect(existsSync(join(dir, "m"))).toBe(false);
		expect(readdirSync(dir).filter((name) => name.startsWith("m"))).toEqual([]);

		// Two different ids whose 64-bit keys are the same (a high word of 0 is kept as 1): not an overlap.
		const rewrite = (folder: string, id: string, drop: number) => {
			const records = readRecords(folder).slice(0, readRecords(folder).length - drop);
			records[0] = { ...records[0]!, id };
			writeFileSync(join(folder, "results.jsonl"), records.map((record) => `${JSON.stringify(record)}\n`).join(""));
		};
		rewrite(first!, "00000000000000a1", 0);
		rewrite(second!, "00000001000000a1", 1);
		// The same --out again, now given as an empty folder: not refused "not empty".
		mkdirSync(join(dir, "m"));
		const sharing = await runCli(["merge", first!, second!, "--out", join(dir, "m")]);
		expect(sharing.stderr).toBe("");
		expect(sharing.code).toBe(0);
		const ids = readRecords(join(dir, "m")).map((record) => record.id);
		expect(ids).toContain("00000000000000a1");
		expect(ids).toContain("00000001000000a1");
	}, 60_000);

	it("merge refuses overlapping shards and different jobs, and names missing shards of an incomplete set", async () => {
		const { dir, out, hosts, folders, env } = await runShardsOfShop(["1/2", "1/2"]);
		const overlap = await runCli(["merge", ...folders, "--out", join(dir, "m1")]);
		expect(overlap.code).toBe(2);
		expect(overlap.stderr).toMatch(/are both shard 1 of 2: overlapping shards/);

		const otherDir = tempDir();
		const otherJob = writeJob(otherDir, "blog", shardJob(hosts, 1).replace("name: shop", "name: blog"));
		expect((await runCli(["run", otherJob, "--out", out, "--quiet", "--shard", "2/2"], { env })).code).toBe(0);
		const blog = join(out, "blog", readdirSync(join(out, "blog")).find(isRunFolderName)!);
		const different = await runCli(["merge", folders[0]!, blog, "--out", join(dir, "m2")]);
		expect(different.code).toBe(2);
		expect(different.stderr).toMatch(/refusing to merge different jobs/);

		const partial = await runCli(["merge", folders[0]!, "--out", join(dir, "m3"), "--json"]);
		expect(partial.code).toBe(1);
		expect(JSON.parse(partial.stdout)).toMatchObject({
			complete: false,
			shards: { missing: [2] },
			stopped_reason: "missing shards 2",
		});
		expect(
			readFileSync(join(dir, "m3", "results.jsonl"), "utf8")
				.split("\n")
				.filter(Boolean).length,
		).toBe(readRecords(folders[0]!).length);
		// What finishes the set, as printed: the missing shard's run (job file and --out from the folder).
		const told = await runCli(["merge", folders[0]!, "--out", join(dir, "m4")]);
		expect(told.stdout).toMatch(/finish with `npx scrapejob run .+ --shard 2\/2 --out [^`]+`/);
		const finish = /finish with `([^`]+)`/.exec(told.stdout)?.[1];
		const finished = await runPrintedCommand(finish!, env, process.cwd()).done;
		expect(finished.code, finished.stderr).toBe(0);
		const second = readdirSync(join(out, "shop")).find((name) => name.endsWith("-shard-2-of-2"))!;
		const whole = await runCli(["merge", folders[0]!, join(out, "shop", second), "--out", join(dir, "m5"), "--json"]);
		expect(whole.code, whole.stderr).toBe(0);
		expect(JSON.parse(whole.stdout)).toMatchObject({ complete: true, shards: { missing: [], incomplete: [] } });
	}, 60_000);

	it("merge of a layout with a late shard never says complete: one stopped short, one killed before its summary", async () => {
		const { dir, out, env } = await runShardsOfShop(["1/2"]);
		const job = join(dir, "shop.yaml");
		// Shard 2 stops before its first fetch (a request's worst case, 2 credits, does not fit in 1).
		const short = await runCli(["run", job, "--out", out, "--quiet", "--shard", "2/2", "--max-credits", "1"], { env });
		expect(short.code, short.stderr).toBe(1);
		const folders = readdirSync(join(out, "shop"))
			.filter(isRunFolderName)
			.map((name) => join(out, "shop", name));
		expect(folders).toHaveLength(2);
		const second = folders.find((folder) => folder.endsWith("-shard-2-of-2"))!;
		const merged = async (name: string) => {
			const result = await runCli(["merge", ...folders, "--out", join(dir, name), "--json"]);
			expect(result.code, result.stderr).toBe(1);
			return JSON.parse(result.stdout) as { complete: boolean; stopped_reason: string; shards: object };
		};
		const stopped = await merged("m1");
		expect(stopped).toMatchObject({
			complete: false,
			stopped_reason: "incomplete shards 2",
			shards: { missing: [], incomplete: [2] },
		});
		expect(readSummary(join(dir, "m1")).complete).toBe(false);
		// Killed before it wrote a summary (or still running): not complete either, and its resume is what finishes it.
		rmSync(join(second, "summary.json"));
		expect(await merged("m2")).toMatchObject({ complete: false, shards: { missing: [], incomplete: [2] } });
		const told = await runCli(["merge", ...folders, "--out", join(dir, "m3")]);
		expect(told.code).toBe(1);
		expect(told.stdout).toMatch(/finish with `npx scrapejob run .+ --shard 2\/2 .*--resume \S+-shard-2-of-2`/);
	}, 60_000);

	it("merge writes results.csv from the records (cells with line breaks kept) and refuses a damaged middle line", async () => {
		service = await startTestService({ concurrency: 4 });
		const hosts = await hostsOf(4);
		const dir = tempDir();
		const out = join(dir, "out");
		// Notes with line breaks, a blank line inside one: copying CSV lines one by one would break them.
		const notes = hosts.map((_, index) => `note ${index}\nsecond line\n\nafter a blank line`);
		const rows = hosts.map((host, index) => `${host}/product/1,"${notes[index]}"`);
		writeFileSync(join(dir, "pages.csv"), `url,note\n${rows.join("\n")}\n`);
		const job = writeJob(
			dir,
			"notes",
			[
				"name: notes",
				"defaults: {mode: request}",
				"sources:",
				"  - file: pages.csv",
				"    column: url",
				"carry: [note]",
				"output: {formats: [jsonl, csv], content: none}",
				"",
			].join("\n"),
		);
		for (const shard of ["1/2", "2/2"]) {
			const result = await runCli(["run", job, "--out", out, "--quiet", "--shard", shard], { env: service.env });
			expect(result.code).toBe(0);
		}
		const folders = readdirSync(join(out, "notes"))
			.filter(isRunFolderName)
			.map((name) => join(out, "notes", name));
		const merged = join(dir, "merged");
		const mergedRun = await runCli(["merge", ...folders, "--out", merged]);
		expect(mergedRun.stderr).toBe("");
		expect(mergedRun.code).toBe(0);
		const csv = parse(readFileSync(join(merged, "results.csv")), { columns: true }) as Array<Record<string, string>>;
		expect(csv.map((row) => row.note).sort()).toEqual([...notes].sort());
		expect(csv.map((row) => row.id).sort()).toEqual(
			readRecords(merged)
				.map((record) => record.id)
				.sort(),
		);

		// A line in the middle of a shard's results.jsonl that is not a record: refused, naming it.
		const damaged = folders.find((folder) => readRecords(folder).length >= 2)!;
		const path = join(damaged, "results.jsonl");
		const lines = readFileSync(path, "utf8").split("\n");
		lines[0] = lines[0]!.slice(0, 40);
		writeFileSync(path, lines.join("\n"));
		const refused = await runCli(["merge", ...folders, "--out", join(dir, "m2")]);
		expect(refused.code).toBe(2);
		expect(refused.stderr).toMatch(/results\.jsonl line 1 is not a record /);
		expect(existsSync(join(dir, "m2"))).toBe(false);
		// The repair it names works as printed: the damaged line is moved aside, its target fetched again,
		// and the merge then has every target once.
		const hint = /repair the shard first with (npx scrapejob .*? --repair)/.exec(refused.stderr)?.[1];
		expect(hint).toBeDefined();
		const repaired = await runPrintedCommand(hint!, service.env, process.cwd()).done;
		expect(repaired.code, repaired.stderr).toBe(0);
		const again = await runCli(["merge", ...folders, "--out", join(dir, "m3")]);
		expect(again.code, again.stderr).toBe(0);
		expect(readRecords(join(dir, "m3")).length).toBe(notes.length);
	}, 60_000);
});

/** Resolves once `path` exists (a run's lock file: the run has started and holds its layout). */
async function fileAppears(path: string, timeoutMs = 20_000): Promise<void> {
	const until = Date.now() + timeoutMs;
	while (!existsSync(path)) {
		if (Date.now() > until) throw new Error(`${path} did not appear within ${timeoutMs} ms`);
		await new Promise((resolve) => setTimeout(resolve, 5));
	}
}

/**
 * A loopback site whose pages are answered only while it is open: a run holding its lock waits on it
 * for as long as a test needs, without a timing guess.
 */
async function gatedSite(): Promise<{ url: string; open(): void; close(): void; waiting(): number }> {
	let opened = false;
	const held: Array<() => void> = [];
	const server = createServer((_req, res) => {
		const answer = () => {
			res.writeHead(200, { "content-type": "text/html" });
			res.end("<html><body><h1>page</h1></body></html>");
		};
		if (opened) answer();
		else held.push(answer);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
	const closeServer = async () => {
		server.closeAllConnections();
		await new Promise((resolve) => server.close(resolve));
	};
	sites.push({ url: "", close: closeServer } as unknown as DemoSite);
	return {
		url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		open() {
			opened = true;
			for (const answer of held.splice(0)) answer();
		},
		close() {
			opened = false;
		},
		waiting: () => held.length,
	};
}

describe("two shards interrupted together", () => {
	it("a merge while they run says so, with no resume to paste; each prints the same kind of resume hint, and each, run as printed, finishes its own folder", async () => {
		assertBuilt();
		service = await startTestService({ concurrency: 4 });
		// Pages answered only once the test opens the site: neither shard can finish before its SIGINT.
		const site = await gatedSite();
		const dir = tempDir();
		onePageHostJob(dir, "pair", site.url, 8);
		const shards = ["1/2", "2/2"].map((shard) =>
			spawnCli(["run", "pair.yaml", "--out", "out", "--shard", shard, "--grace-period", "200"], service!.env, dir),
		);
		const jobDir = join(dir, "out", "pair");
		const folders = () => (existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName).sort() : []);
		await until(
			() => folders().filter((name) => existsSync(join(jobDir, name, "run.json"))).length === 2,
			"each shard's run folder",
		);
		// A merge while both run: incomplete, said as running, and no --resume to paste (their locks refuse it).
		const early = await spawnCli(["merge", "out/pair", "--out", "merged"], {}, dir).done;
		expect(early.code, early.stderr).toBe(1);
		expect(early.stdout).toContain("stopped    incomplete shards 1, 2; still running: shards 1, 2");
		expect(early.stdout).toContain("finish with `npx scrapejob merge out/pair --out merged`");
		expect(early.stdout).toContain(
			"running    shards 1, 2 still running: once they have ended, `npx scrapejob merge out/pair --out merged` merges again",
		);
		expect(early.stdout).not.toContain("--resume");
		for (const shard of shards) shard.child.kill("SIGINT");
		const stopped = await Promise.all(shards.map((shard) => shard.done));
		expect(stopped.map((result) => result.code)).toEqual([130, 130]);
		// The hint of the shard whose folder was not the job's newest (the other shard's) named its run id;
		// the other's did not. Each shard's --resume picks its own newest folder: neither needs the id.
		const hints = stopped.map((result) => /finish with `([^`]+)`/.exec(result.stdout)?.[1]);
		expect(hints).toEqual([
			"npx scrapejob run pair.yaml --out out --shard 1/2 --resume",
			"npx scrapejob run pair.yaml --out out --shard 2/2 --resume",
		]);
		site.open();
		const resumed = await Promise.all(hints.map((hint) => runPrintedCommand(hint!, service!.env, dir).done));
		expect(
			resumed.map((result) => result.code),
			resumed.map((result) => result.stderr).join("\n"),
		).toEqual([0, 0]);
		// Each resumed its own folder: still one per shard, both complete, every page once.
		expect(
			folders()
				.map((name) => name.replace(/^.*-shard-/, "shard-"))
				.sort(),
		).toEqual(["shard-1-of-2", "shard-2-of-2"]);
		const records = folders().flatMap((name) => readRecords(join(jobDir, name)));
		expect(records.map((record) => record.status)).toEqual(Array(8).fill("ok"));
		for (const name of folders()) expect(readSummary(join(jobDir, name)).complete).toBe(true);
	}, 60_000);
});

describe("overlapping shard layouts of one job", () => {
	it("the later run exits 4 before sending anything, naming the other; shards of one layout run side by side", async () => {
		assertBuilt();
		// The runs to be refused use the key's second scraper key: whatever they send is theirs in the ledger
		// (the runs that go ahead ask /scraper/health for free slots as their shares change).
		service = await startTestService({ concurrency: 2, keys: { scraper: ["shards-key", "refused-runs-key"] } });
		// One host whose pages wait until the test opens it: the first run holds its lock meanwhile.
		const site = await gatedSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = writeJob(dir, "shop", shardJob([site.url], 8));
		const env = service.env;
		const refusedEnv = { ...env, SCRAPEJOB_SCRAPER_KEY: "refused-runs-key" };
		const ledger = service.emulator.ledger;

		const unsharded = spawnCli(["run", job, "--out", out, "--quiet"], env);
		await fileAppears(join(out, "shop", ".lock"));
		const refusals = await Promise.all(
			["1/2", "2/3"].map((shard) => spawnCli(["run", job, "--out", out, "--quiet", "--shard", shard], refusedEnv).done),
		);
		for (const refused of refusals) {
			expect(refused.code, refused.stderr).toBe(4);
			expect(refused.stderr).toMatch(/another shard layout is in progress: unsharded \(pid \d+ on .*, run \d/);
			// Another layout of an unsharded run overlaps it too: only waiting for its end helps.
			expect(refused.stderr).toMatch(/run it when that one has ended \[SCRAPEJOB_LOCK_HELD\]/);
		}
		site.open();
		expect((await unsharded.done).code).toBe(0);

		// The shard that holds the one host waits on it; the other has nothing to do.
		site.close();
		const busy = shardOf(site.url, 2);
		const half = spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${busy}/2`], env);
		await fileAppears(join(out, "shop", `.lock-shard-${busy}-of-2`));
		const [third, other] = await Promise.all([
			spawnCli(["run", job, "--out", out, "--quiet", "--shard", "1/3"], refusedEnv).done,
			spawnCli(["run", job, "--out", out, "--quiet", "--shard", `${3 - busy}/2`], env).done,
		]);
		// The unsharded one alone: it holds the job's lock for a moment before it refuses itself, and a
		// shard starting in that moment would be refused by it instead.
		const plain = await spawnCli(["run", job, "--out", out, "--quiet"], refusedEnv).done;
		expect(third!.code, third!.stderr).toBe(4);
		expect(third!.stderr).toMatch(/another shard layout is in progress: shard \d\/2 .*this run \(shard 1\/3\)/);
		expect(third!.stderr).toContain("run it when that one has ended, or with --shard I/2");
		expect(plain.code, plain.stderr).toBe(4);
		// A re-extraction has no --shard: it is told to wait, as beside an unsharded run. (Alone: while it
		// holds the job's unsharded lock for a moment, a shard starting beside it would be refused.)
		const reextraction = await spawnCli(["extract", job, "--run", "latest", "--out", out], refusedEnv).done;
		expect(reextraction.code, reextraction.stderr).toBe(4);
		expect(reextraction.stderr).toMatch(
			/another run of this job is in progress \(pid \d+ .*; shard \d\/2; a re-extraction writes the job's output, so it waits until that run has ended\)/,
		);
		expect(reextraction.stderr).not.toContain("--shard");
		// The same layout's other shard is no overlap: it runs beside the busy one.
		expect(other!.code, other!.stderr).toBe(0);
		site.open();
		expect((await half.done).code).toBe(0);

		// Three runs went ahead (unsharded, 1/2 and 2/2); the refused ones sent nothing, not even a health check.
		expect(ledger.byEndpoint("health").length).toBeGreaterThanOrEqual(3);
		expect(ledger.entries.filter((entry) => entry.key === "refused-runs-key")).toEqual([]);
		expect(ledger.byEndpoint("realtime")).toHaveLength(16);
	}, 60_000);
});

describe("shards on one key fill it in sum", () => {
	it("one host, 3 shards split by URL: every shard busy, ≥ 0.8·limit in flight at once, never above it, no 429, and while all three run each holds its share, together the limit one process holds", async () => {
		assertBuilt();
		const limit = 5;
		service = await startTestService({ concurrency: limit }, 40);
		const ledger = service.emulator.ledger;
		const dir = tempDir();
		const out = join(dir, "out");
		const byUrl = onePageHostJob(dir, "one-host", service.site.url, 200);

		// The same output folder: the job's history.sqlite exists before the shards start together.
		const single = await spawnCli(["run", byUrl, "--out", out, "--quiet"], service.env).done;
		expect(single.code, single.stderr).toBe(0);
		// One process alone fills the key.
		expect(ledger.maxInFlight()).toBe(limit);
		ledger.clear();

		const runs = [1, 2, 3].map((index) =>
			spawnCli(["run", byUrl, "--out", out, "--quiet", "--shard", `${index}/3`], service!.env),
		);
		const ended = await Promise.all(runs.map((run) => run.done));
		for (const result of ended) expect(result.stderr).toBe("");
		expect(ended.map((result) => result.code)).toEqual([0, 0, 0]);

		const fetches = ledger.byEndpoint("realtime");
		// Every page fetched by some shard (a fetch retried after a transient failure adds an entry, not a page).
		expect(new Set(fetches.map((entry) => entry.url)).size).toBe(200);
		// Split by URL, one host's pages went to every shard.
		const perShard = readdirSync(join(out, "one-host"))
			.filter((name) => isRunFolderName(name) && name.includes("-shard-"))
			.map((name) => readRecords(join(out, "one-host", name)).length);
		expect(perShard).toHaveLength(3);
		expect(perShard.reduce((sum, count) => sum + count, 0)).toBe(200);
		for (const count of perShard) expect(count).toBeGreaterThan(30);

		const timeline = ledger.inFlightOverTime("realtime");
		const first = timeline[0]!.at;
		const filled = timeline.find((point) => point.inFlight >= 0.8 * limit);
		expect(filled, "the shards never had 0.8 of the limit in flight together").toBeDefined();
		expect(filled!.at - first).toBeLessThan(10_000);
		expect(Math.max(...timeline.map((point) => point.inFlight))).toBeLessThanOrEqual(limit);
		expect(ledger.maxInFlight()).toBeLessThanOrEqual(limit);
		expect(ledger.rateLimits.filter((window) => window.cause === "concurrency")).toEqual([]);
		expect(ledger.statusCounts()[429]).toBeUndefined();

		// Each shard's own fetches in flight, counted where the key counts them. The URL says whose a fetch
		// was. A shard's slot is busy from its request's arrival to its answer (sent before the shard reads
		// it): what the ledger counts per shard never exceeds the concurrency the shard ran with.
		type Entry = (typeof fetches)[number];
		const byShard = [1, 2, 3].map((index) => fetches.filter((entry) => shardOf(entry.url!, 3, "url") === index));
		const answeredAt = (entry: Entry) => entry.finishedAt ?? Number.POSITIVE_INFINITY;
		// While all three ran: from the last one's first request in to the first one's last answer out. The
		// shares are 5 over 3 busy shards, 2 + 2 + 1 in index order; before and after, fewer shards share the key.
		const from = Math.max(...byShard.map((own) => Math.min(...own.map((entry) => entry.at))));
		const to = Math.min(...byShard.map((own) => Math.max(...own.map(answeredAt))));
		expect(to - from, "the three shards never ran together").toBeGreaterThan(0);
		const mostInFlight = (own: Entry[], since: number, until: number) =>
			Math.max(
				0,
				...own
					.filter((entry) => entry.at >= since && entry.at < until)
					.map((sent) => own.filter((entry) => entry.at <= sent.at && answeredAt(entry) > sent.at).length),
			);
		// Each shard at its exact share in every third of that time: started with its fair part and kept it,
		// never above it, the shares adding up to the limit one process holds alone. A count of fetches at
		// once, not a rate: a loaded machine that runs the processes in turns slows them, it does not change
		// the concurrency each runs with. (The key's mean use over the span, compared with one process's here
		// before, is the scheduler's: one process alone measured 4.3 of 5 on a quiet machine, 1.4 on a loaded
		// one.) The old floor(L/N) start held 1 + 1 + 1.
		for (const third of [0, 1, 2]) {
			const since = from + ((to - from) * third) / 3;
			const until = from + ((to - from) * (third + 1)) / 3;
			const held = byShard.map((own) => mostInFlight(own, since, until));
			expect(held, `shards' most fetches at once in third ${third + 1} of their time together`).toEqual([2, 2, 1]);
		}
	}, 90_000);

	it("more shards than the key has slots: the shards past the limit wait their turn (said in run.log), never above it, no 429, every page once", async () => {
		assertBuilt();
		const limit = 2;
		service = await startTestService({ concurrency: limit }, 40);
		const ledger = service.emulator.ledger;
		const dir = tempDir();
		const out = join(dir, "out");
		const job = onePageHostJob(dir, "many", service.site.url, 45);
		const ended = await Promise.all(
			[1, 2, 3].map((index) => spawnCli(["run", job, "--out", out, "--shard", `${index}/3`], service!.env).done),
		);
		expect(
			ended.map((result) => result.code),
			ended.map((result) => result.stderr).join("\n"),
		).toEqual([0, 0, 0]);
		const fetches = ledger.byEndpoint("realtime");
		expect(new Set(fetches.map((entry) => entry.url)).size).toBe(45);
		expect(fetches).toHaveLength(45);
		expect(ledger.maxInFlight()).toBeLessThanOrEqual(limit);
		expect(ledger.statusCounts()[429]).toBeUndefined();
		// Shard 3 started with no share (1 + 1 + 0): it said so (run.log, and its log on stderr), and sent
		// once one of the others was done.
		expect(ended[2]!.stderr).toContain("waiting for a turn on the key");
		const third = readdirSync(join(out, "many")).find(
			(name) => isRunFolderName(name) && name.endsWith("-shard-3-of-3"),
		)!;
		const waits = readFileSync(join(out, "many", third, "run.log"), "utf8")
			.split("\n")
			.filter((line) => line.includes('"event":"share_wait"'));
		expect(waits.length).toBeGreaterThanOrEqual(1);
		expect(readRecords(join(out, "many", third)).length).toBeGreaterThan(0);
	}, 60_000);

	it("a shard waiting its turn stops at once on SIGINT (exit 130, nothing sent) and its --resume fetches its share once the other is done", async () => {
		assertBuilt();
		service = await startTestService({ concurrency: 1 });
		const ledger = service.emulator.ledger;
		// Shard 1's pages wait until the test opens the site: it holds the key's one slot until then, and
		// shard 2 cannot get its turn before its SIGINT.
		const site = await gatedSite();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = onePageHostJob(dir, "turns", site.url, 12);
		const run = (shard: string, ...flags: string[]) =>
			spawnCli(["run", job, "--out", out, "--quiet", "--shard", shard, ...flags], service!.env);
		const first = run("1/2");
		await fileAppears(join(out, "turns", ".lock-shard-1-of-2"));
		const second = run("2/2");
		const runLogOf = () => {
			const folder = readdirSync(join(out, "turns")).find(
				(name) => isRunFolderName(name) && name.endsWith("-shard-2-of-2"),
			);
			return folder === undefined ? "" : readFileSync(join(out, "turns", folder, "run.log"), "utf8");
		};
		await until(() => runLogOf().includes('"event":"share_wait"'), "shard 2 waiting its turn");
		const sentBefore = ledger.byEndpoint("realtime").filter((entry) => shardOf(entry.url!, 2, "url") === 2).length;
		second.child.kill("SIGINT");
		const stopped = await second.done;
		expect(stopped.code, stopped.stderr).toBe(130);
		expect(ledger.byEndpoint("realtime").filter((entry) => shardOf(entry.url!, 2, "url") === 2)).toHaveLength(
			sentBefore,
		);
		site.open();
		expect((await first.done).code).toBe(0);
		const resumed = await run("2/2", "--resume").done;
		expect(resumed.code, resumed.stderr).toBe(0);
		const fetched = ledger.byEndpoint("realtime").map((entry) => entry.url);
		expect(new Set(fetched).size).toBe(12);
		expect(fetched).toHaveLength(12);
		expect(ledger.statusCounts()[429]).toBeUndefined();
	}, 60_000);

	it("a library run of a shard waiting its turn says so in its progress, once a second, and stops on its signal with nothing sent", async () => {
		assertBuilt();
		service = await startTestService({ concurrency: 1 }, 300);
		const ledger = service.emulator.ledger;
		const dir = tempDir();
		const out = join(dir, "out");
		// Shard 1 is busy for seconds (20 pages at 300 ms, one at a time), long past the library run's start.
		const job = onePageHostJob(dir, "turns", service.site.url, 40);
		const first = spawnCli(["run", job, "--out", out, "--quiet", "--shard", "1/2"], service.env);
		await fileAppears(join(out, "turns", ".lock-shard-1-of-2"));
		const abort = new AbortController();
		const waiting: ProgressSnapshot[] = [];
		const second = runJobFile(job, {
			env: service.env,
			out,
			shard: "2/2",
			signal: abort.signal,
			onProgress: (snapshot) => {
				if (snapshot.paused?.reason === "share_wait") waiting.push(snapshot);
			},
		});
		await until(() => waiting.length >= 2, "two progress snapshots of a shard waiting its turn");
		expect(waiting[1]).toMatchObject({ paused: { reason: "share_wait", leftMs: null }, inFlight: 0 });
		// Sent before it learnt the other shard was busy (a machine under load), if anything: nothing more.
		const sentBefore = ledger.byEndpoint("realtime").filter((entry) => shardOf(entry.url!, 2, "url") === 2).length;
		abort.abort();
		const summary = await second;
		expect(summary.stopped_reason).toBe("interrupted");
		expect(ledger.byEndpoint("realtime").filter((entry) => shardOf(entry.url!, 2, "url") === 2)).toHaveLength(
			sentBefore,
		);
		first.child.kill("SIGINT");
		expect((await first.done).code).toBe(130);
	}, 60_000);

	it("split by host, --dry-run and the run warn when a host holds more than 1/N or hosts are fewer than shards", async () => {
		service = await startTestService({ concurrency: 4 });
		const hosts = await hostsOf(2);
		const dir = tempDir();
		const out = join(dir, "out");
		const oneHost = writeJob(dir, "one", shardJob([hosts[0]!], 6));
		const fewer = await runCli(["run", oneHost, "--out", out, "--shard", "1/3", "--dry-run"], { env: service.env });
		expect(fewer.code).toBe(0);
		expect(fewer.stderr).toMatch(/on 1 host, fewer than the 3 shards.*shard_by: url/);
		// Fewer slots than shards: the ones past the key's concurrency would only wait their turn.
		expect(fewer.stderr).not.toContain("the run's concurrency");
		const turns = "the run's concurrency is 4 (the key's, or --concurrency when lower), below the 6 shards: at most 4";
		const six = await runCli(["run", oneHost, "--out", out, "--shard", "2/6", "--dry-run", "--json"], {
			env: service.env,
		});
		expect(six.stderr).toContain(turns);
		expect(JSON.parse(six.stdout)[0].shard_warning).toContain(turns);
		const lower = await runCli(["run", oneHost, "--out", out, "--shard", "1/3", "--concurrency", "2", "--dry-run"], {
			env: service.env,
		});
		expect(lower.stderr).toContain(
			"the run's concurrency is 2 (the key's, or --concurrency when lower), below the 3 shards",
		);

		const lines = ["name: lopsided", "defaults: {mode: request}", "targets:"];
		for (let page = 1; page <= 8; page += 1) lines.push(`  - ${hosts[0]}/product/${page}`);
		lines.push(`  - ${hosts[1]}/product/1`);
		const lopsided = writeJob(dir, "lopsided", `${lines.join("\n")}\n`);
		const host = new URL(hosts[0]!).host;
		const dry = await runCli(["run", lopsided, "--out", out, "--shard", "2/2", "--dry-run", "--json"], {
			env: service.env,
		});
		expect(dry.stderr).toContain(`host ${host} holds 8 of 9 targets (89%, more than 1/2)`);
		expect(JSON.parse(dry.stdout)[0].shard_warning).toMatch(/shard_by: url/);
		const run = await runCli(["run", lopsided, "--out", out, "--shard", "2/2"], { env: service.env });
		expect(run.code, run.stderr).toBe(0);
		expect(run.stderr).toContain(`host ${host} holds 8 of 9 targets`);

		// Split by URL: nothing to warn about.
		const byUrl = writeJob(
			dir,
			"by-url",
			`${shardJob([hosts[0]!], 6).replace("name: shop", "name: by-url")}shard_by: url\n`,
		);
		const quiet = await runCli(["run", byUrl, "--out", out, "--shard", "1/3", "--dry-run"], { env: service.env });
		expect(quiet.stderr).not.toMatch(/shard_by/);
	}, 60_000);
});
