import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Sqlite from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/job-files.js";
import { assertBuilt, spawnNode } from "../helpers/spawn-cli.js";
import { until } from "../helpers/until.js";

/**
 * The job store's writer thread (src/history/store-writer.ts): it runs from the built library only (a
 * thread starts dist/history/store-worker.js), so each store here is written by a script of its own
 * against dist/, with the writer from the first batch on (`writerAfterTargets: 0`) and small merges.
 */
const DIST = join(import.meta.dirname, "..", "..", "dist", "history", "index.js");

/**
 * `node script.mjs JOB_DIR MODE COUNT MERGE_ROWS WRITER_AFTER`: writes COUNT records to run r1's
 * results.jsonl, noting each in the store as a run does (ids repeat, some fail, some carry data or a
 * crawl's depth). MODE save: save and close; keep: save nothing and stay up (to be killed); exit: save
 * nothing, close nothing, and return (the process must end by itself); open: only open and close
 * (folding in what results.jsonl holds past the store).
 */
const SCRIPT = `
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
const { openJobHistory } = await import(${JSON.stringify(DIST)});
const [jobDir, mode, countText, mergeText, afterText] = process.argv.slice(2);
const count = Number(countText);
const history = openJobHistory(jobDir, { mergeRows: Number(mergeText), writerAfterTargets: Number(afterText) });
if (mode === "open") {
	history.close();
	process.exit(0);
}
mkdirSync(join(jobDir, "r1"), { recursive: true });
const file = join(jobDir, "r1", "results.jsonl");
const run = history.runIndex("r1");
let offset = 0;
const start = Date.UTC(2026, 10, 28);
for (let i = 0; i < count; i++) {
	const n = i % Math.ceil(count * 0.8);
	const ok = i % 5 !== 3;
	const record = {
		id: (n * 2654435761 >>> 0).toString(16).padStart(8, "0") + String(n).padStart(8, "0"),
		url: "https://shop.example/p/" + n,
		status: ok ? "ok" : "failed",
		finished_at: new Date(start + i).toISOString(),
		credits_used: 1 + (i % 3),
		attempts: 1,
		content_hash: ok ? "h" + (i % 7) : undefined,
		data: ok && i % 2 === 0 ? { title: "Product " + n, price: i } : undefined,
		depth: i % 4 === 0 ? i % 3 : undefined,
		parent: i % 4 === 0 ? "p" + (i % 11) : undefined,
	};
	const line = JSON.stringify(record) + "\\n";
	appendFileSync(file, line);
	history.record(record, run, offset, offset + Buffer.byteLength(line));
	offset += Buffer.byteLength(line);
	if (i % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
}
if (mode === "save") {
	try {
		history.save();
		process.stdout.write("saved\\n");
	} catch (error) {
		process.stdout.write("save failed: " + error.message + "\\n");
	}
	history.close();
} else if (mode === "keep") {
	process.stdout.write("recorded\\n");
	setInterval(() => {}, 1000);
}
`;

let script: string;
beforeAll(() => {
	assertBuilt();
	script = join(tempDir(), "store-run.mjs");
	writeFileSync(script, SCRIPT);
});

async function runScript(jobDir: string, mode: string, count: number, mergeRows: number, writerAfter: number) {
	const spawned = spawnNode([script, jobDir, mode, String(count), String(mergeRows), String(writerAfter)], {});
	const ended = await spawned.done;
	expect(ended.stderr).toBe("");
	return ended;
}

/** The store's rows, as the comparison reads them. */
function storeRows(jobDir: string): { targets: unknown[]; runs: unknown[] } {
	const db = new Sqlite(join(jobDir, "history.sqlite"), { readonly: true });
	try {
		return {
			targets: db.prepare("SELECT * FROM targets ORDER BY id").raw().all(),
			runs: db.prepare("SELECT * FROM runs ORDER BY id").raw().all(),
		};
	} finally {
		db.close();
	}
}

/** The store a rebuild makes of `jobDir`'s results.jsonl alone, on the run's thread (the reference). */
async function rebuilt(jobDir: string): Promise<{ targets: unknown[]; runs: unknown[] }> {
	const copy = tempDir();
	mkdirSync(join(copy, "r1"));
	copyFileSync(join(jobDir, "r1", "results.jsonl"), join(copy, "r1", "results.jsonl"));
	await runScript(copy, "open", 0, 2_000, Number.MAX_SAFE_INTEGER);
	return storeRows(copy);
}

describe("the job store's writer thread", () => {
	it("writes the same store as batches on the run's thread", async () => {
		const thread = tempDir();
		const main = tempDir();
		// 4,000-row merges: 7 of them and a last one at save, each its own transaction.
		expect((await runScript(thread, "save", 30_000, 4_000, 0)).stdout).toBe("saved\n");
		expect((await runScript(main, "save", 30_000, 4_000, Number.MAX_SAFE_INTEGER)).stdout).toBe("saved\n");
		const written = storeRows(thread);
		expect(written.targets).toHaveLength(24_000);
		expect(written).toEqual(storeRows(main));
		expect(written).toEqual(await rebuilt(thread));
	}, 60_000);

	it("a process killed while merges go on leaves a store the next open completes exactly (no credit counted twice)", async () => {
		const jobDir = tempDir();
		const spawned = spawnNode([script, jobDir, "keep", "60000", "5000", "0"], {});
		const store = join(jobDir, "history.sqlite");
		// Killed the moment the writer's first merge is committed, while the next ones are posted and merging.
		await until(
			() => {
				const db = new Sqlite(store, { readonly: true, fileMustExist: true });
				try {
					return ((db.prepare("SELECT results_bytes FROM runs").pluck().get() as number | undefined) ?? 0) > 0;
				} finally {
					db.close();
				}
			},
			"the first merge",
			30_000,
			2,
		);
		spawned.child.kill("SIGKILL");
		expect((await spawned.done).signal).toBe("SIGKILL");
		const cut = storeRows(jobDir);
		await runScript(jobDir, "open", 0, 5_000, 0);
		const completed = storeRows(jobDir);
		expect(completed).toEqual(await rebuilt(jobDir));
		// What the kill left was a whole number of merges, short of the file: the open folded the rest.
		expect((completed.runs[0] as unknown[])[2]).toBeGreaterThan((cut.runs[0] as unknown[])[2] as number);
	}, 60_000);

	it("save() says the records could not be kept while another process holds the store's write lock", async () => {
		const jobDir = tempDir();
		await runScript(jobDir, "open", 0, 2_000, 0);
		// Another process holds a write transaction on the store, as a sqlite3 shell left in one would.
		const locker = spawn(
			process.execPath,
			[
				"-e",
				`const db = new (require("better-sqlite3"))(${JSON.stringify(join(jobDir, "history.sqlite"))});
				db.exec("BEGIN IMMEDIATE"); process.stdout.write("held\\n"); setInterval(() => {}, 1000);`,
			],
			{ cwd: join(import.meta.dirname, "..", ".."), stdio: ["ignore", "pipe", "inherit"] },
		);
		try {
			await new Promise((resolve) => locker.stdout.once("data", resolve));
			const ended = await runScript(jobDir, "save", 6_000, 2_000, 0);
			expect(ended.stdout).toMatch(
				/^save failed: this run's records could not be kept in the job's store \(database is locked: another process holds a write on history\.sqlite/,
			);
		} finally {
			locker.kill("SIGKILL");
		}
		// Once the lock is gone the next open folds the whole run in from results.jsonl.
		await runScript(jobDir, "open", 0, 2_000, 0);
		expect(storeRows(jobDir)).toEqual(await rebuilt(jobDir));
	}, 60_000);

	it("a process that neither saves nor closes its store still ends at once (the thread keeps nothing alive)", async () => {
		const jobDir = tempDir();
		const started = Date.now();
		const ended = await runScript(jobDir, "exit", 12_000, 4_000, 0);
		expect(ended.code).toBe(0);
		expect(Date.now() - started).toBeLessThan(15_000);
		await runScript(jobDir, "open", 0, 2_000, 0);
		expect(storeRows(jobDir)).toEqual(await rebuilt(jobDir));
	}, 60_000);
});
