import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openJournal, readJournalTasks } from "../../src/run/target/journal.js";
import { tempDir } from "../helpers/job-files.js";

function lines(path: string): Array<Record<string, unknown>> {
	return readFileSync(path, "utf8")
		.split("\n")
		.filter((line) => line !== "")
		.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("journal.jsonl", () => {
	it("writes start lines (any id, escaped as JSON needs) before the task line that follows them, in order", async () => {
		const path = join(tempDir(), "journal.jsonl");
		const journal = openJournal(path);
		journal.session("run-1", false);
		const ids = ["0123456789abcdef", 'quote"and\\slash', "ünïcode-ïd", "tab\tnew\nline", ""];
		for (const id of ids) journal.started(id);
		journal.task("0123456789abcdef", "task-1");
		journal.started("after-the-task");
		journal.close();

		const events = lines(path);
		expect(events.map((event) => event.e)).toEqual(["session", ...ids.map(() => "start"), "task", "start"]);
		expect(events.filter((event) => event.e === "start").map((event) => event.id)).toEqual([...ids, "after-the-task"]);
		const read = await readJournalTasks(path);
		expect(read.started).toBe(ids.length + 1);
		expect([...read.tasks]).toEqual([["0123456789abcdef", "task-1"]]);
	});

	it("start lines wait for a sync, then reach the file whole, however many outgrow the buffer", () => {
		const path = join(tempDir(), "journal.jsonl");
		const journal = openJournal(path);
		journal.started("first");
		expect(readFileSync(path, "utf8")).toBe("");
		journal.sync();
		expect(lines(path).map((event) => event.id)).toEqual(["first"]);

		// ~3 buffers' worth, with ids of every length up to one longer than the buffer itself.
		const ids = Array.from({ length: 6_000 }, (_, index) => `id-${index}-${"x".repeat(index % 64)}`);
		ids.push("y".repeat(70 * 1024), "é".repeat(40 * 1024));
		for (const id of ids) journal.started(id);
		journal.sync();
		expect(lines(path).map((event) => event.id)).toEqual(["first", ...ids]);
		journal.close();
	});
});
