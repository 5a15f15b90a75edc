import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { demoProductPrice } from "../../src/emulator/index.js";
import { HISTORY_FILE, OLD_HISTORY_FILE } from "../../src/history/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { runCli } from "../helpers/run-cli.js";
import { startTestService, type TestService } from "../helpers/service.js";

let service: TestService | undefined;
afterEach(async () => {
	await service?.close();
	service = undefined;
});

const TARGETS = 12;

function shopJob(dir: string, site: string): string {
	return writeJob(
		dir,
		"shop",
		[
			"name: shop",
			"defaults:",
			"  mode: request",
			"extract:",
			"  price: {css: .price, type: number}",
			"targets:",
			...Array.from({ length: TARGETS }, (_, index) => `  - ${site}/product/${index + 1}`),
			"",
		].join("\n"),
	);
}

/** Fetches the emulator was paid for so far. */
const paid = () => service!.emulator.ledger.byEndpoint("realtime").length;

async function run(job: string, out: string, extra: string[] = []) {
	const result = await runCli(["run", job, "--out", out, "--quiet", "--json", ...extra], { env: service!.env });
	expect(result.code, result.stderr).toBe(0);
	return JSON.parse(result.stdout) as { targets: { fresh?: number; total: number } };
}

/** The store's targets as python3's sqlite3 reads them: id → price. */
function storedPrices(out: string): Map<string, number> {
	const script =
		"import json, sqlite3, sys\n" +
		"db = sqlite3.connect(sys.argv[1])\n" +
		"print(json.dumps(db.execute(\"SELECT url, json_extract(data, '$.price') FROM targets WHERE status = 'ok'\").fetchall()))";
	const rows = JSON.parse(
		execFileSync("python3", ["-c", script, join(out, "shop", HISTORY_FILE)], { encoding: "utf8" }),
	) as Array<[string, number]>;
	return new Map(rows.map(([url, price]) => [new URL(url).pathname, price]));
}

const damages: Array<[string, (jobDir: string) => void]> = [
	[
		"truncated",
		(jobDir) => {
			const path = join(jobDir, HISTORY_FILE);
			truncateSync(path, Math.floor(statSync(path).size / 2));
		},
	],
	[
		"5-bytes-short",
		(jobDir) => {
			// A few bytes off: not a whole number of pages (SQLite's quick check alone took such a file).
			const path = join(jobDir, HISTORY_FILE);
			truncateSync(path, statSync(path).size - 5);
		},
	],
	["garbage", (jobDir) => writeFileSync(join(jobDir, HISTORY_FILE), Buffer.alloc(8192, 0xa5))],
	[
		"old-layout (.history)",
		(jobDir) => {
			execFileSync("rm", [join(jobDir, HISTORY_FILE)]);
			writeFileSync(join(jobDir, OLD_HISTORY_FILE), Buffer.concat([Buffer.from("SJH4"), Buffer.alloc(100, 7)]));
		},
	],
];

describe("a damaged store, end to end", () => {
	it.each(damages)(
		"a %s store is rebuilt from the run folders with a warning: no target is paid again",
		async (_name, damage) => {
			service = await startTestService();
			const dir = tempDir();
			const out = join(dir, "out");
			const jobDir = join(out, "shop");
			const job = shopJob(dir, service.site.url);
			await run(job, out);
			expect(paid()).toBe(TARGETS);
			const expected = new Map(
				Array.from({ length: TARGETS }, (_, index) => [`/product/${index + 1}`, Number(demoProductPrice(index + 1))]),
			);
			expect(storedPrices(out)).toEqual(expected);

			// Damaged, then a run with freshness: every target is fresh (read back from the run folder), none paid.
			damage(jobDir);
			const second = await run(job, out, ["--freshness", "1h"]);
			expect(second.targets.fresh).toBe(TARGETS);
			expect(paid()).toBe(TARGETS);
			expect(storedPrices(out)).toEqual(expected);
			expect(existsSync(join(jobDir, OLD_HISTORY_FILE))).toBe(false);

			// The warning: export prints what the open found (a run's caller reads history.warnings alike).
			damage(jobDir);
			const exported = await runCli([
				"export",
				job,
				"--latest",
				"--format",
				"jsonl",
				"--out",
				join(dir, "latest.jsonl"),
				"--from",
				out,
			]);
			expect(exported.code, exported.stderr).toBe(0);
			expect(exported.stderr).toMatch(
				/warning: .*(history\.sqlite: it (is damaged|cannot be read|is not a scrapejob store)|\.history \(the history of an earlier scrapejob\) is replaced).*rebuilt from the run folders/,
			);
			expect(exported.stdout).toContain(`${TARGETS} records`);
			expect(paid()).toBe(TARGETS);
			// Nothing of SQLite's is left beside the store once it is closed.
			expect(readdirSync(jobDir).filter((name) => name.startsWith(HISTORY_FILE))).toEqual([HISTORY_FILE]);
		},
	);
});

/**
 * A sqlite3 shell left in a transaction (`BEGIN EXCLUSIVE` or `IMMEDIATE`): it holds the store's write lock
 * until it is killed. Resolves once the lock is held.
 */
async function holdStore(path: string, mode: "EXCLUSIVE" | "IMMEDIATE"): Promise<ChildProcess> {
	const holder = spawn(
		"python3",
		[
			"-c",
			`import sqlite3,sys,time\nd=sqlite3.connect(sys.argv[1],isolation_level=None)\nd.execute('BEGIN ${mode}')\nprint('held',flush=True)\ntime.sleep(60)`,
			path,
		],
		{ stdio: ["ignore", "pipe", "inherit"] },
	);
	await once(holder.stdout, "data");
	return holder;
}

describe("a store another process holds", () => {
	it("a write lock held elsewhere costs the run seconds, not 30: said once with who may hold it, the run completes (its records fold in next time)", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = shopJob(dir, service.site.url);
		await run(job, out);
		const holder = await holdStore(join(out, "shop", HISTORY_FILE), "EXCLUSIVE");
		try {
			const started = Date.now();
			const second = await runCli(["run", job, "--out", out], { env: service!.env });
			expect(Date.now() - started).toBeLessThan(20_000);
			expect(second.code, second.stderr).toBe(0);
			expect(second.stderr).toContain("another process holds a write on history.sqlite");
			expect(second.stderr.match(/could not save the job's history/g)).toHaveLength(1);
			// The run's costs could not be kept either: said with the same hint.
			const costs = second.stderr
				.split("\n")
				.filter((line) => line.includes("could not keep the run's modes and costs"));
			expect(costs).toHaveLength(1);
			expect(JSON.parse(costs[0]!).error).toContain("another process holds a write on history.sqlite");
		} finally {
			holder.kill("SIGKILL");
		}
	});

	// Three 5 s busy waits: the second run's costs and its records, the third run's open.
	it("a store held locked when a run must write to it at open (records to fold in) stops the run, exit 5, naming who may hold it", async () => {
		service = await startTestService();
		const dir = tempDir();
		const out = join(dir, "out");
		const job = shopJob(dir, service.site.url);
		await run(job, out);
		const holder = await holdStore(join(out, "shop", HISTORY_FILE), "IMMEDIATE");
		try {
			// This run completes, but its records stay out of the store: the next open must fold them in.
			const second = await runCli(["run", job, "--out", out], { env: service.env });
			expect(second.code, second.stderr).toBe(0);
			expect(second.stderr).toContain("could not save the job's history");
			const paidBefore = paid();
			expect(paidBefore).toBe(2 * TARGETS);
			const third = await runCli(["run", job, "--out", out], { env: service.env });
			expect(third.code, third.stderr).toBe(5);
			expect(third.stderr).toContain(`cannot write ${join(out, "shop", HISTORY_FILE)}: database is locked`);
			expect(third.stderr).toContain(
				"another process holds a write on history.sqlite — another run of the job, an export, or a sqlite3 shell left in a transaction",
			);
			expect(paid()).toBe(paidBefore);
		} finally {
			holder.kill("SIGKILL");
		}
	}, 60_000);
});
