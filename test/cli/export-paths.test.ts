import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { canMountPrivately, inPrivateMount } from "../helpers/private-mount.js";
import { record } from "../helpers/records.js";
import { assertBuilt, BIN } from "../helpers/spawn-cli.js";
import { runCli } from "./cli-harness.js";

/** A job with one run folder of two ok records under `<dir>/out/shop/`. */
function setUp() {
	const dir = tempDir();
	const job = writeJob(dir, "shop", "name: shop\ntargets:\n  - https://shop.test/p/1\n  - https://shop.test/p/2\n");
	const runDir = join(dir, "out", "shop", "20261121T000000Z-aaaaaa");
	mkdirSync(runDir, { recursive: true });
	const results = join(runDir, "results.jsonl");
	writeFileSync(
		results,
		["0000000000000001", "0000000000000002"]
			.map((id) => `${JSON.stringify(record(id, { content_hash: id }))}\n`)
			.join(""),
	);
	const exportTo = (out: string, ...extra: string[]) =>
		runCli(["export", job, "--latest", "--out", out, "--from", join(dir, "out"), ...extra], { cwd: dir });
	return { dir, runDir, results, exportTo };
}

describe("export --out: where an export may be written", () => {
	it("inside the job's output folder (a run's own results.jsonl): exit 2, the run untouched", async () => {
		const { runDir, results, exportTo } = setUp();
		const before = readFileSync(results, "utf8");
		for (const out of [results, join(runDir, "latest.csv"), join(runDir, "..", "latest.csv")]) {
			const result = await exportTo(out, "--force", "--format", "jsonl");
			expect(result.code).toBe(2);
			expect(result.stderr).toMatch(/inside the job's output folder/);
		}
		expect(readFileSync(results, "utf8")).toBe(before);
		expect(readdirSync(runDir)).toEqual(["results.jsonl"]);
	});

	it("a folder, an empty name, or a folder that does not exist: exit 2 with a message naming the rule", async () => {
		const { dir, exportTo } = setUp();
		mkdirSync(join(dir, "exports"));
		const folder = await exportTo(join(dir, "exports"), "--force");
		expect(folder.code).toBe(2);
		expect(folder.stderr).toMatch(/is a folder/);
		const empty = await exportTo("");
		expect(empty.code).toBe(2);
		expect(empty.stderr).toMatch(/--out is empty/);
		const nowhere = await exportTo(join(dir, "no-such", "latest.csv"));
		expect(nowhere.code).toBe(2);
		expect(nowhere.stderr).toMatch(/does not exist/);
		expect(readdirSync(join(dir, "exports"))).toEqual([]);
	});

	it("without --format, the format --out's extension names; a --format the extension contradicts: exit 2, nothing written", async () => {
		const { dir, exportTo } = setUp();
		const jsonl = await exportTo(join(dir, "latest.jsonl"));
		expect(jsonl.code, jsonl.stderr).toBe(0);
		expect(JSON.parse(readFileSync(join(dir, "latest.jsonl"), "utf8").split("\n")[0]!)).toMatchObject({
			id: "0000000000000001",
		});
		const parquet = await exportTo(join(dir, "latest.parquet"), "--json");
		expect(parquet.code, parquet.stderr).toBe(0);
		expect(JSON.parse(parquet.stdout)).toMatchObject({ records: 2, format: "parquet" });
		expect(readFileSync(join(dir, "latest.parquet")).subarray(0, 4).toString()).toBe("PAR1");
		const sqlite = await exportTo(join(dir, "latest.db"));
		expect(sqlite.code, sqlite.stderr).toBe(0);
		expect(readFileSync(join(dir, "latest.db")).subarray(0, 15).toString()).toBe("SQLite format 3");
		const other = await exportTo(join(dir, "latest.txt"));
		expect(other.code, other.stderr).toBe(0);
		expect(readFileSync(join(dir, "latest.txt"), "utf8")).toMatch(/^id,url,/);
		const contradicted = await exportTo(join(dir, "shop.parquet"), "--format", "csv");
		expect(contradicted.code).toBe(2);
		expect(contradicted.stderr).toMatch(
			/--out shop\.parquet names a parquet file but --format is csv: pass --format parquet/,
		);
		expect(readdirSync(dir).filter((name) => name.startsWith("shop."))).toEqual(["shop.yaml"]);
	});

	it("an existing file: exit 2 without --force, replaced with it, nothing temporary left", async () => {
		const { dir, exportTo } = setUp();
		const out = join(dir, "latest.jsonl");
		writeFileSync(out, "keep me\n");
		const refused = await exportTo(out, "--format", "jsonl");
		expect(refused.code).toBe(2);
		expect(refused.stderr).toMatch(/exists: pass --force/);
		expect(readFileSync(out, "utf8")).toBe("keep me\n");
		const forced = await exportTo(out, "--format", "jsonl", "--force");
		expect(forced.code, forced.stderr).toBe(0);
		expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(2);
		expect(readdirSync(dir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
	});

	it("--out a symbolic link (with --force): the link is replaced, the file it pointed at is never written", async () => {
		const { dir, exportTo } = setUp();
		const victim = join(dir, "victim.txt");
		writeFileSync(victim, "precious\n");
		const link = join(dir, "latest.csv");
		symlinkSync(victim, link);
		expect((await exportTo(link)).code).toBe(2);
		const forced = await exportTo(link, "--force");
		expect(forced.code, forced.stderr).toBe(0);
		expect(readFileSync(victim, "utf8")).toBe("precious\n");
		expect(readFileSync(link, "utf8").split("\n")[0]).toMatch(/^id,url,status/);
	});

	it("a fresh --out is written (every format), through a new temporary name renamed at the end", async () => {
		const { dir, exportTo } = setUp();
		for (const format of ["csv", "jsonl", "parquet", "sqlite"]) {
			const result = await exportTo(join(dir, `latest.${format}`), "--format", format, "--json");
			expect(result.code, result.stderr).toBe(0);
			expect(JSON.parse(result.stdout)).toMatchObject({ records: 2, format });
		}
		expect(
			readdirSync(dir)
				.filter((name) => name.startsWith("latest") || name.includes(".tmp"))
				.sort(),
		).toEqual(["latest.csv", "latest.jsonl", "latest.parquet", "latest.sqlite"]);
	});
});

describe("export --out on a full disk", () => {
	it.skipIf(!canMountPrivately())(
		"every format: exit 5 (the output could not be written), the message names the file and ENOSPC, nothing left there",
		async () => {
			assertBuilt();
			const dir = tempDir();
			const job = writeJob(dir, "shop", "name: shop\ntargets:\n  - https://shop.test/p/1\n");
			const runDir = join(dir, "out", "shop", "20261121T000000Z-aaaaaa");
			mkdirSync(runDir, { recursive: true });
			// 200 records with 1 KB of random text each (in the URL, a column of every format): more than the 16 KB disk holds in any format.
			const ids = Array.from({ length: 200 }, (_, index) => (index + 1).toString(16).padStart(16, "0"));
			writeFileSync(
				join(runDir, "results.jsonl"),
				ids
					.map(
						(id) =>
							`${JSON.stringify(record(id, { content_hash: id, url: `https://shop.test/p/${randomBytes(512).toString("hex")}` }))}\n`,
					)
					.join(""),
			);
			const full = join(dir, "full");
			mkdirSync(full);
			for (const format of ["csv", "jsonl", "parquet", "sqlite"]) {
				const result = await inPrivateMount(
					'mount -t tmpfs -o size=16k tmpfs "$1" && "$2" "$3" export "$4" --latest --from "$5" --format "$6" --out "$1/latest.$6"; code=$?; ls -A "$1"; exit $code',
					[full, process.execPath, BIN, job, join(dir, "out"), format],
					{},
				);
				expect(result.stderr, format).toMatch(
					/cannot write .*latest\.(csv|jsonl|parquet|sqlite).*no space left on the device \((ENOSPC|SQLITE_FULL)\)/,
				);
				expect(result.code, `${format}: ${result.stderr}`).toBe(5);
				// No half file, no temporary one.
				expect(result.stdout, format).toBe("");
			}
		},
	);
});
