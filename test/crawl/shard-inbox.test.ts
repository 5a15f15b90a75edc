import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openShardInbox } from "../../src/crawl/index.js";
import { tempDir } from "../helpers/job-files.js";

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
