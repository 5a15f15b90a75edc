import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import Sqlite from "better-sqlite3";
import { beforeAll, describe, expect, it } from "vitest";
import { WRITER_AFTER_TARGETS } from "../../src/history/store-writer.js";
import { readSummary, tempDir, waitForRecords, writeJob } from "../helpers/job-files.js";
import { useTestService } from "../helpers/service.js";
import { assertBuilt, spawnCli, spawnNode } from "../helpers/spawn-cli.js";

beforeAll(() => assertBuilt());

const DIST = join(import.meta.dirname, "..", "..", "dist", "history", "index.js");
/** A target that stands for the store's earlier ones: its rowid is what the size check reads. */
const STAND_IN = "0000standin0000";

/** Open (and fold) a job folder's store with the built library, as a run's start does, and close it. */
async function openStore(jobDir: string): Promise<void> {
	const ended = await spawnNode(
		[
			"--input-type=module",
			"-e",
			`(await import(${JSON.stringify(DIST)})).openJobHistory(process.argv[1]).close();`,
			jobDir,
		],
		{},
	).done;
	expect(ended.stderr).toBe("");
}

/** The store's rows of the run (the stand-in left out). */
function storeRows(jobDir: string): { targets: unknown[]; runs: unknown[] } {
	const db = new Sqlite(join(jobDir, "history.sqlite"), { readonly: true });
	try {
		return {
			targets: db.prepare("SELECT * FROM targets WHERE id <> ? ORDER BY id").raw().all(STAND_IN),
			runs: db.prepare("SELECT * FROM runs ORDER BY id").raw().all(),
		};
	} finally {
		db.close();
	}
}

describe("the job store's writer thread under the built CLI", () => {
	it("a run killed while the writer holds its records, then --resume: the store as a rebuild from results.jsonl makes it, the process ends at once", async () => {
		const service = await useTestService({ concurrency: 20 });
		const dir = tempDir();
		const out = join(dir, "out");
		const jobDir = join(out, "shop");
		const count = 5_000;
		// The last target answers after 4 s: the others are all recorded while it waits.
		const urls = Array.from({ length: count - 1 }, (_, index) => `${service.site.url}/product/${index + 1}`);
		urls.push(`${service.site.url}/slow?ms=4000`);
		writeFileSync(join(dir, "urls.txt"), `${urls.join("\n")}\n`);
		const job = writeJob(
			dir,
			"shop",
			"name: shop\nconcurrency: 20\ndefaults:\n  mode: request\nsources:\n  - urls.txt\n",
		);
		// A store that looks as large as one the writer thread takes over from the run's first batch.
		mkdirSync(jobDir, { recursive: true });
		await openStore(jobDir);
		const db = new Sqlite(join(jobDir, "history.sqlite"));
		db.prepare(
			"INSERT INTO targets (rowid, id, url, status, status_at, credits) VALUES (?, ?, 'https://x/', 'failed', '2000-01-01T00:00:00.000Z', 0)",
		).run(WRITER_AFTER_TARGETS, STAND_IN);
		db.close();

		const args = ["run", job, "--out", out, "--quiet"];
		const first = spawnCli(args, service.env);
		const runDir = await waitForRecords(jobDir, count - 1, 30_000);
		// Batches on the run's thread would have committed 2,000 of them by now: the writer holds them all
		// (fewer than a merge), so the kill takes every one with it.
		expect(storeRows(jobDir).runs).toEqual([]);
		first.child.kill("SIGKILL");
		expect((await first.done).signal).toBe("SIGKILL");

		const started = Date.now();
		const resumed = await spawnCli([...args, "--resume"], service.env).done;
		// 1: some of the demo shop's product numbers do not exist (failed records, kept like the others).
		expect([0, 1], resumed.stderr).toContain(resumed.code);
		expect(readSummary(runDir).complete).toBe(true);
		// The slow target again, and no thread kept the process up past its end.
		expect(Date.now() - started).toBeLessThan(20_000);
		const lines = readFileSync(join(runDir, "results.jsonl"), "utf8").trimEnd().split("\n");
		expect(lines.length).toBeGreaterThanOrEqual(count);
		const credits = lines.reduce((sum, line) => sum + (JSON.parse(line) as { credits_used: number }).credits_used, 0);

		const written = storeRows(jobDir);
		const run = written.runs[0] as [string, number, number, number, number, number];
		expect(run[0]).toBe(basename(runDir));
		expect(run[2]).toBe(lines.length);
		expect(run[5]).toBe(credits);
		// What a rebuild from the run folder alone makes of it.
		const copy = join(tempDir(), "shop");
		mkdirSync(join(copy, basename(runDir)), { recursive: true });
		copyFileSync(join(runDir, "results.jsonl"), join(copy, basename(runDir), "results.jsonl"));
		await openStore(copy);
		expect(written).toEqual(storeRows(copy));
	}, 90_000);
});
