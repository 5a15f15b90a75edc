import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { openShardInbox } from "../../src/crawl/index.js";
import { OutputError } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";
import { canMountPrivately, inPrivateMount } from "../helpers/private-mount.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";

const LAYOUT = 3;
const entry = (u: string, d = 1) => ({ u, d, p: "parent", k: "0" });
const urls = (entries: readonly { u: string }[]) => entries.map((each) => each.u).sort();
/** A reader that never waits for shards it has not seen (they are not part of these tests). */
const open = (dir: string, index: number, runId: string, resume = false) =>
	openShardInbox(dir, { index, count: LAYOUT }, runId, resume, { startGraceMs: 0 });

describe("shard inboxes: one writer per file", () => {
	it("two writer shards write two files; the reader takes each link once, and once more after a restart only what is new", () => {
		const dir = tempDir();
		const reader = open(dir, 2, "r1");
		const one = open(dir, 1, "w1");
		const three = open(dir, 3, "w3");
		one.handOff(2, [entry("https://a/1"), entry("https://a/2", 2)]);
		three.handOff(2, [entry("https://c/1")]);

		const inboxes = readdirSync(dir)
			.filter((name) => name.startsWith("inbox-"))
			.sort();
		expect(inboxes).toEqual(["inbox-shard-2-from-1-of-3.jsonl", "inbox-shard-2-from-3-of-3.jsonl"]);
		expect(readFileSync(join(dir, inboxes[0]!), "utf8").trim().split("\n")).toHaveLength(2);

		expect(urls(reader.readNew())).toEqual(["https://a/1", "https://a/2", "https://c/1"]);
		expect(reader.readNew()).toEqual([]);
		// Depths are kept as handed over.
		three.handOff(2, [entry("https://c/2", 3)]);
		expect(reader.readNew()).toEqual([entry("https://c/2", 3)]);

		// Restarted as a new run: nothing read before is read again; what came meanwhile is read once.
		reader.close();
		one.handOff(2, [entry("https://a/3")]);
		const next = open(dir, 2, "r2");
		expect(urls(next.readNew())).toEqual(["https://a/3"]);
		expect(next.readNew()).toEqual([]);
		next.close();

		// Resumed (the same run): read again from where that run began, each file's line once (the crawler's
		// URL keys drop those already journalled).
		const resumed = open(dir, 2, "r2", true);
		expect(urls(resumed.readNew())).toEqual(["https://a/3"]);
		resumed.close();
		one.close();
		three.close();
	});

	it("a writer killed mid-line: the torn line is passed over and the links of its next run are whole", () => {
		const dir = tempDir();
		const reader = open(dir, 2, "r1");
		const first = open(dir, 1, "w1");
		first.handOff(2, [entry("https://a/1")]);
		first.close();
		appendFileSync(join(dir, "inbox-shard-2-from-1-of-3.jsonl"), '{"u":"https://a/torn","d"');
		const again = open(dir, 1, "w1", true);
		again.handOff(2, [entry("https://a/2")]);
		expect(urls(reader.readNew())).toEqual(["https://a/1", "https://a/2"]);
		again.close();
		reader.close();
	});

	it("an inbox written by a version with one shared file is still read, from where that version's state says", () => {
		const dir = tempDir();
		const shared = join(dir, "inbox-shard-2-of-3.jsonl");
		const old = `${JSON.stringify(entry("https://old/1"))}\n`;
		writeFileSync(shared, `${old}${JSON.stringify(entry("https://old/2"))}\n`);
		writeFileSync(
			join(dir, ".inbox-shard-2-of-3.state"),
			JSON.stringify({ run_id: "before", read: Buffer.byteLength(old), idle: false, from: 0, at: 0 }),
		);
		const reader = open(dir, 2, "after");
		expect(urls(reader.readNew())).toEqual(["https://old/2"]);
		// Never written again: links go to the files of one writer each.
		const one = open(dir, 1, "w1");
		one.handOff(2, [entry("https://a/1")]);
		expect(urls(reader.readNew())).toEqual(["https://a/1"]);
		expect(readFileSync(shared, "utf8").split("\n")).toHaveLength(3);
		one.close();
		reader.close();
	});

	it("the layout is not settled while a writer's file holds links its reader has not read", () => {
		const dir = tempDir();
		const reader = open(dir, 2, "r1");
		const one = open(dir, 1, "w1");
		const three = open(dir, 3, "w3");
		const running = () => true;
		for (const inbox of [one, three, reader]) inbox.setIdle(true);
		expect(reader.allSettled(running)).toBe(true);
		three.handOff(2, [entry("https://c/1")]);
		expect(reader.allSettled(running)).toBe(false);
		// Shard 1 sees it too: shard 2's file from shard 3 is ahead of shard 2's state.
		expect(one.allSettled(running)).toBe(false);
		expect(urls(reader.readNew())).toEqual(["https://c/1"]);
		reader.setIdle(true);
		expect(one.allSettled(running)).toBe(true);
		expect(existsSync(join(dir, "inbox-shard-2-of-3.jsonl"))).toBe(false);
		for (const inbox of [one, three, reader]) inbox.close();
	});
});

describe("shard inboxes on a full disk", () => {
	// /dev/full answers every write with ENOSPC.
	it.skipIf(!existsSync("/dev/full"))(
		"a hand-off that cannot be written is an output failure naming the inbox file (exit 5), not the disk's bare error",
		() => {
			const dir = tempDir();
			const path = join(dir, "inbox-shard-2-from-1-of-3.jsonl");
			symlinkSync("/dev/full", path);
			const one = open(dir, 1, "w1");
			let thrown: unknown;
			try {
				one.handOff(2, [entry("https://a/1")]);
			} catch (error) {
				thrown = error;
			}
			expect(thrown).toBeInstanceOf(OutputError);
			expect((thrown as OutputError).path).toBe(path);
			expect((thrown as OutputError).message).toMatch(/no space left on the device \(ENOSPC\)/);
			one.close();
		},
	);

	it.skipIf(!canMountPrivately())(
		"a line the disk takes only part of is cut back off: the file holds whole lines, and the error names it",
		async () => {
			assertBuilt();
			const dir = tempDir();
			const disk = join(dir, "disk");
			mkdirSync(disk);
			const crawl = pathToFileURL(join(BIN, "..", "..", "crawl", "index.js")).href;
			const script = [
				`const { openShardInbox } = await import(${JSON.stringify(crawl)});`,
				'const { openSync, writeSync, closeSync, readFileSync } = await import("node:fs");',
				"const dir = process.argv[1];",
				'const entry = (u) => ({ u, d: 1, p: "parent", k: "0" });',
				"const one = openShardInbox(dir, { index: 1, count: 3 }, 'w1', false, { startGraceMs: 0 });",
				'one.handOff(2, [entry("https://a/1")]);',
				// The disk filled to its last block: the inbox's own block has room left for part of a line.
				'const filler = openSync(dir + "/filler", "w");',
				"try { for (;;) writeSync(filler, Buffer.alloc(4096)); } catch {}",
				"closeSync(filler);",
				"let message = 'no error';",
				'try { one.handOff(2, [entry("https://a/" + "x".repeat(8000)), entry("https://a/3")]); } catch (error) { message = error.constructor.name + ": " + error.message; }',
				"console.log(JSON.stringify({ message, inbox: readFileSync(dir + '/inbox-shard-2-from-1-of-3.jsonl', 'utf8') }));",
			].join("\n");
			const result = await inPrivateMount(
				'mount -t tmpfs -o size=64k tmpfs "$1" && exec "$2" --input-type=module -e "$3" "$1"',
				[disk, process.execPath, script],
				{},
			);
			expect(result.code, result.stderr).toBe(0);
			const { message, inbox } = JSON.parse(result.stdout) as { message: string; inbox: string };
			expect(message).toMatch(
				/^OutputError: output failed: cannot write .*inbox-shard-2-from-1-of-3\.jsonl: no space left on the device \(ENOSPC\)/,
			);
			// The line before the failure, whole; nothing of the one the disk had no room for.
			expect(inbox).toBe(`${JSON.stringify(entry("https://a/1"))}\n`);
		},
	);
});
