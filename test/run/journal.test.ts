import { appendFileSync, readFileSync } from "node:fs";
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

	it("a breaker line is on disk as soon as it is written; a resume reads each domain's latest, well-formed ones only", async () => {
		const path = join(tempDir(), "journal.jsonl");
		const journal = openJournal(path);
		const fingerprint = "f".repeat(64);
		const opened = (domain: string, at: string) =>
			({ e: "breaker", domain, open: true, opened_at: at, reason: "8 of the last 8", fingerprint }) as const;
		journal.started("waiting");
		journal.breaker(opened("a.test", "2026-01-01T00:00:00.000Z"));
		// No sync, no close: a process killed now has left both lines (the start line flushed before it).
		expect(lines(path).map((event) => event.e)).toEqual(["start", "breaker"]);
		journal.breaker(opened("b.test", "2026-01-01T00:01:00.000Z"));
		journal.breaker({ e: "breaker", domain: "a.test", open: false, fingerprint });
		journal.breaker(opened("c.test", "2026-01-01T00:02:00.000Z"));
		journal.close();
		// Read back as hostile: an open line without its time, a bad time, no fingerprint; a torn last line.
		appendFileSync(
			path,
			[
				JSON.stringify({ e: "breaker", domain: "c.test", open: true, reason: "x", fingerprint }),
				JSON.stringify({ ...opened("c.test", "yesterday") }),
				JSON.stringify({ e: "breaker", domain: "c.test", open: false }),
				'{"e":"breaker","domain":"b.test","open":false,"finger',
			].join("\n"),
		);
		const read = await readJournalTasks(path);
		// In the order of each domain's latest change: a.test closed after b.test opened.
		expect([...read.breakers.values()]).toEqual([
			opened("b.test", "2026-01-01T00:01:00.000Z"),
			{ e: "breaker", domain: "a.test", open: false, fingerprint },
			opened("c.test", "2026-01-01T00:02:00.000Z"),
		]);
	});

	it("a figures line is on disk as soon as it is written; a resume reads the latest well-formed one, none in an older journal", async () => {
		const path = join(tempDir(), "journal.jsonl");
		const journal = openJournal(path);
		journal.session("run-1", false);
		journal.started("waiting");
		expect((await readJournalTasks(path)).figures).toBeNull();
		const figures = { wallMs: 4200, rateLimitPauses: 2, abandoned: 0, creditsRemaining: 9990 };
		journal.figures({ wallMs: 2100, rateLimitPauses: 1, abandoned: 0, creditsRemaining: null }, Date.UTC(2026, 0, 1));
		journal.figures(figures, Date.UTC(2026, 0, 1, 0, 0, 2));
		// No sync, no close: a process killed now has left the line.
		expect(lines(path).at(-1)).toEqual({
			e: "figures",
			at: "2026-01-01T00:00:02.000Z",
			wall_ms: 4200,
			rate_limit_pauses: 2,
			abandoned: 0,
			credits_remaining: 9990,
		});
		journal.close();
		// Read back as hostile: a negative count, a bad time, a balance that is not a number; a torn last line.
		const line = lines(path).at(-1)!;
		appendFileSync(
			path,
			[
				JSON.stringify({ ...line, wall_ms: -1 }),
				JSON.stringify({ ...line, at: "yesterday" }),
				JSON.stringify({ ...line, credits_remaining: "lots" }),
				'{"e":"figures","at":"2026-01-01T00:00:09.000Z","wall_ms":9',
			].join("\n"),
		);
		expect((await readJournalTasks(path)).figures).toEqual({ atMs: Date.UTC(2026, 0, 1, 0, 0, 2), figures });
	});

	it("a charged line is on disk as soon as it is written; a resume sums each target's since its latest paid answer, well-formed ones only", async () => {
		const path = join(tempDir(), "journal.jsonl");
		const journal = openJournal(path);
		journal.started("a");
		journal.charged("a", 1);
		// No sync, no close: a process killed now has left the line.
		expect(lines(path).at(-1)).toEqual({ e: "charged", id: "a", credits: 1 });
		journal.charged("a", 2);
		journal.charged("b", 1);
		// b's answer was paid and kept: its answer holds the charges before it; a later one adds to it.
		const answer = {
			id: "b",
			credits: 3,
			httpStatus: 200,
			contentType: "text/html",
			creditsRemaining: null,
			modeUsed: "request",
			attempts: 2,
			taskId: null,
			title: null,
			finalUrl: null,
			json: false,
		};
		journal.paid(answer);
		journal.charged("c", 1);
		journal.paid({ ...answer, id: "c" });
		journal.charged("c", 2);
		journal.close();
		// Read back as hostile: no credits, a negative or absurd figure, no id; a torn last line.
		appendFileSync(
			path,
			[
				'{"e":"charged","id":"a"}',
				'{"e":"charged","id":"a","credits":-5}',
				'{"e":"charged","id":"a","credits":1e308}',
				'{"e":"charged","credits":4}',
				'{"e":"charged","id":"a","credits":4',
			].join("\n"),
		);
		expect([...(await readJournalTasks(path)).charged]).toEqual([
			["a", 3],
			["c", 2],
		]);
	});
});
