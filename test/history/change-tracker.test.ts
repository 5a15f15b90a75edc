import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
	CHANGES_FILE,
	createChangeTracker,
	HISTORY_FILE,
	openJobHistory,
	writeContractState,
} from "../../src/history/index.js";
import type { ResultRecord } from "../../src/output/index.js";
import { tempDir } from "../helpers/job-files.js";
import { record } from "../helpers/records.js";

/** What a target's fetch gave in one session: its content, or its extracted data when the job extracts. */
interface Fetched {
	readonly id: string;
	readonly body?: string;
	readonly data?: Record<string, unknown>;
}

/**
 * One session of a run as the runner drives the job's store: open (folding what the run folders hold),
 * then for each record stamp it, append it to results.jsonl, note it in the store; then save and close
 * — or, `killed`, stop without saving (SIGKILL: the last batch never reaches the store).
 */
function session(
	jobDir: string,
	runId: string,
	fetched: readonly Fetched[],
	options: { extracts?: boolean; killed?: boolean; finishedAt?: string; accept?: string } = {},
): { records: ResultRecord[]; counts: { new: number; changed: number; unchanged: number } } {
	const runDir = join(jobDir, runId);
	mkdirSync(runDir, { recursive: true });
	const results = join(runDir, "results.jsonl");
	if (!existsSync(results)) writeFileSync(results, "");
	const history = openJobHistory(jobDir);
	// `run --accept RUN_ID`: a run held back by its contract is folded in after the store was opened.
	if (options.accept) history.accept(options.accept);
	const run = history.runIndex(runId);
	const tracker = createChangeTracker(history, runDir, options.extracts === true);
	const finishedAt = options.finishedAt ?? new Date().toISOString();
	const records: ResultRecord[] = [];
	for (const each of fetched) {
		const written = record(each.id, {
			started_at: finishedAt,
			finished_at: finishedAt,
			...(each.data ? { data: each.data } : {}),
		});
		tracker.stamp(written, each.body === undefined ? null : Buffer.from(each.body));
		const line = `${JSON.stringify(written)}\n`;
		const offset = statSync(results).size;
		appendFileSync(results, line);
		history.record(written, run, offset, offset + Buffer.byteLength(line));
		records.push(written);
	}
	tracker.close();
	if (!options.killed) history.save();
	history.close();
	return { records, counts: { ...tracker.counts } };
}

const changeOf = (records: readonly ResultRecord[]) => Object.fromEntries(records.map((one) => [one.id, one.change]));
const hashOf = (records: readonly ResultRecord[]) =>
	Object.fromEntries(records.map((one) => [one.id, one.content_hash]));

function changeLines(jobDir: string, runId: string): Array<{ id: string; fields: Record<string, unknown> }> {
	const path = join(jobDir, runId, CHANGES_FILE);
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8")
		.split("\n")
		.filter((line) => line !== "")
		.map((line) => JSON.parse(line) as { id: string; fields: Record<string, unknown> });
}

describe("change tracking against the job's store", () => {
	it("an empty store (a job's first run) is not looked up for a previous record; a store with targets is", () => {
		const empty = tempDir();
		const first = openJobHistory(empty);
		// With its database closed, any lookup throws: `previous` must answer without one.
		first.db.close();
		expect(first.previous("00000000000000a1")).toBeNull();
		expect(() => first.get("00000000000000a1")).toThrow();
		first.close();

		const jobDir = tempDir();
		session(jobDir, "20261121T000000Z-aaaaaa", [{ id: "00000000000000a1", body: "one" }]);
		const second = openJobHistory(jobDir);
		try {
			expect(second.previous("00000000000000a1")).toEqual(second.get("00000000000000a1"));
			expect(second.previous("00000000000000a1")?.okHash).toMatch(/^[0-9a-f]{16}$/);
			expect(second.previous("00000000000000ff")).toBeNull();
		} finally {
			second.close();
		}
	});

	it("first, second and third runs: new, then changed / unchanged / new per target, with content_hash; a deleted store is rebuilt first", () => {
		const jobDir = tempDir();
		const first = session(jobDir, "20261121T000000Z-aaaaaa", [
			{ id: "a", body: "page a" },
			{ id: "b", body: "page b" },
			{ id: "c", body: "page c" },
		]);
		expect(changeOf(first.records)).toEqual({ a: "new", b: "new", c: "new" });
		expect(first.counts).toEqual({ new: 3, changed: 0, unchanged: 0 });
		const hashes = hashOf(first.records);
		expect(Object.values(hashes).every((hash) => /^[0-9a-f]{16}$/.test(String(hash)))).toBe(true);
		expect(new Set(Object.values(hashes)).size).toBe(3);

		// Second run: a target added to the list (d) is new while the others are compared.
		const second = session(jobDir, "20261122T000000Z-bbbbbb", [
			{ id: "a", body: "page a" },
			{ id: "b", body: "page b, edited" },
			{ id: "d", body: "page d" },
		]);
		expect(changeOf(second.records)).toEqual({ a: "unchanged", b: "changed", d: "new" });
		expect(second.counts).toEqual({ new: 1, changed: 1, unchanged: 1 });
		expect(hashOf(second.records).a).toBe(hashes.a);
		expect(changeLines(jobDir, "20261122T000000Z-bbbbbb")).toEqual([
			expect.objectContaining({
				id: "b",
				fields: { content_hash: { old: hashes.b, new: hashOf(second.records).b } },
			}),
		]);

		// Third run after the store was deleted: rebuilt from both run folders at open, then compared
		// with each target's latest ok record (b's edited page, c's first one).
		rmSync(join(jobDir, HISTORY_FILE));
		const third = session(jobDir, "20261123T000000Z-cccccc", [
			{ id: "a", body: "page a" },
			{ id: "b", body: "page b, edited" },
			{ id: "c", body: "page c, edited" },
			{ id: "d", body: "page d" },
		]);
		expect(changeOf(third.records)).toEqual({ a: "unchanged", b: "unchanged", c: "changed", d: "unchanged" });
		expect(third.counts).toEqual({ new: 0, changed: 1, unchanged: 3 });
	});

	it("a run killed mid-way and resumed: the second session compares with the earlier run, not with its own first session", () => {
		const jobDir = tempDir();
		// A first run killed after one record (its last batch never committed), then resumed.
		const killed = session(jobDir, "20261121T000000Z-aaaaaa", [{ id: "a", body: "page a" }], { killed: true });
		expect(changeOf(killed.records)).toEqual({ a: "new" });
		// The resumed session finds the store holding the killed session's record (folded at open): the
		// targets left are still new, and its summary counts both sessions.
		const resumed = session(jobDir, "20261121T000000Z-aaaaaa", [
			{ id: "b", body: "page b" },
			{ id: "c", body: "page c" },
		]);
		expect(changeOf(resumed.records)).toEqual({ b: "new", c: "new" });
		expect(resumed.counts).toEqual({ new: 3, changed: 0, unchanged: 0 });

		// A second run killed, then resumed: both sessions compare with the first run.
		const secondKilled = session(
			jobDir,
			"20261122T000000Z-bbbbbb",
			[
				{ id: "a", body: "page a" },
				{ id: "b", body: "page b, edited" },
			],
			{ killed: true },
		);
		expect(changeOf(secondKilled.records)).toEqual({ a: "unchanged", b: "changed" });
		const secondResumed = session(jobDir, "20261122T000000Z-bbbbbb", [
			{ id: "c", body: "page c" },
			{ id: "d", body: "page d" },
		]);
		expect(changeOf(secondResumed.records)).toEqual({ c: "unchanged", d: "new" });
		expect(secondResumed.counts).toEqual({ new: 1, changed: 1, unchanged: 2 });

		// The store holds every record of both runs: b's latest is the edited page.
		const history = openJobHistory(jobDir);
		try {
			expect(history.get("b")?.okHash).toBe(hashOf(secondKilled.records).b);
			expect(history.size).toBe(4);
		} finally {
			history.close();
		}
	});

	it("a first run held back by its contract, accepted by the next run: the store was empty when opened, the next run still compares", () => {
		const jobDir = tempDir();
		const held = session(jobDir, "20261121T000000Z-aaaaaa", [
			{ id: "a", body: "page a" },
			{ id: "b", body: "page b" },
		]);
		expect(changeOf(held.records)).toEqual({ a: "new", b: "new" });
		writeContractState(join(jobDir, "20261121T000000Z-aaaaaa"), "held");
		rmSync(join(jobDir, HISTORY_FILE));
		// Opened with the held run left out (empty), then the run is accepted: its records are the previous ones.
		const next = session(
			jobDir,
			"20261122T000000Z-bbbbbb",
			[
				{ id: "a", body: "page a" },
				{ id: "b", body: "page b, edited" },
			],
			{ accept: "20261121T000000Z-aaaaaa" },
		);
		expect(changeOf(next.records)).toEqual({ a: "unchanged", b: "changed" });
	});

	it("with extraction, a changed target's line names the fields that changed, read back from a previous record larger than one read", () => {
		const jobDir = tempDir();
		// ~40 KB of data per record: the previous record is read back across several chunks of the file.
		const long = "x".repeat(40_000);
		session(
			jobDir,
			"20261121T000000Z-aaaaaa",
			[
				{ id: "a", data: { price: 1, description: long } },
				{ id: "b", data: { price: 2, description: long } },
			],
			{ extracts: true },
		);
		const second = session(
			jobDir,
			"20261122T000000Z-bbbbbb",
			[
				{ id: "a", data: { price: 1, description: long } },
				{ id: "b", data: { price: 3, description: long } },
			],
			{ extracts: true },
		);
		expect(changeOf(second.records)).toEqual({ a: "unchanged", b: "changed" });
		expect(changeLines(jobDir, "20261122T000000Z-bbbbbb")).toEqual([
			expect.objectContaining({ id: "b", fields: { price: { old: 2, new: 3 } } }),
		]);
	});
});
