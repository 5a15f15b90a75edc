import { existsSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import type { ResultRecord, RunSummary } from "../../src/output/index.js";

/**
 * Whether an entry of `output/<job>/` is a run folder's name: not the lock or other hidden files, not
 * the job store (`history.sqlite` and its WAL files) nor the shards' inboxes beside the runs.
 */
export function isRunFolderName(name: string): boolean {
	return !name.startsWith(".") && !name.startsWith("history.sqlite") && !name.endsWith(".jsonl");
}

export function tempDir(prefix = "scrapejob-test-"): string {
	return mkdtempSync(join(tmpdir(), prefix));
}

/** Write a job file into `dir` and return its path. */
export function writeJob(dir: string, name: string, yaml: string): string {
	const path = join(dir, `${name}.yaml`);
	writeFileSync(path, yaml);
	return path;
}

/** The one run folder of `job` under `out` (fails the test when there is not exactly one). */
export function onlyRunDir(out: string, job: string): string {
	const runs = readdirSync(join(out, job)).filter(isRunFolderName);
	if (runs.length !== 1) throw new Error(`expected one run folder of ${job}, found ${runs.length}: ${runs.join(", ")}`);
	return join(out, job, runs[0]!);
}

/** A run's journal.jsonl, its whole lines (a torn last line left out); none when it is not there yet. */
export function journalLines<Line extends { e: string } = { e: string }>(runDir: string): Line[] {
	const path = join(runDir, "journal.jsonl");
	if (!existsSync(path)) return [];
	return readFileSync(path, "utf8")
		.split("\n")
		.filter((line) => line.endsWith("}"))
		.map((line) => JSON.parse(line) as Line);
}

export function readRecords(runDir: string): ResultRecord[] {
	const text = readFileSync(join(runDir, "results.jsonl"), "utf8");
	return text
		.split("\n")
		.filter((line) => line !== "")
		.map((line) => JSON.parse(line) as ResultRecord);
}

export function readCsv(runDir: string): Record<string, string>[] {
	return parse(readFileSync(join(runDir, "results.csv"), "utf8"), { columns: true }) as Record<string, string>[];
}

export function readSummary(runDir: string): RunSummary {
	return JSON.parse(readFileSync(join(runDir, "summary.json"), "utf8")) as RunSummary;
}

/**
 * Resolves with the run folder once its results.jsonl holds `atLeast` lines: polled, since the writer
 * is another process (an event on the disk to wait on, not a fixed sleep).
 */
export async function waitForRecords(jobDir: string, atLeast: number, timeoutMs = 20_000): Promise<string> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		for (const name of existsSync(jobDir) ? readdirSync(jobDir).filter(isRunFolderName) : []) {
			const file = join(jobDir, name, "results.jsonl");
			if (existsSync(file) && readFileSync(file, "utf8").split("\n").length - 1 >= atLeast) return join(jobDir, name);
		}
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	throw new Error(`no ${atLeast} records within ${timeoutMs} ms`);
}

/**
 * Make every robots.txt the job's runs stored `ageMs` old: older than a day, the next run pays for each
 * again instead of reading it from there (src/crawl/robots.ts).
 */
export function ageStoredRobots(jobDir: string, ageMs: number): void {
	const at = new Date(Date.now() - ageMs);
	for (const run of readdirSync(jobDir).filter(isRunFolderName)) {
		const robots = join(jobDir, run, "robots");
		if (!existsSync(robots)) continue;
		for (const name of readdirSync(robots)) utimesSync(join(robots, name), at, at);
	}
}

/** A job of `count` product pages of the demo site at `site`, in request mode; `extra` lines go after its name. */
export function shopJobYaml(site: string, count: number, extra: readonly string[] = []): string {
	const lines = ["name: shop", ...extra, "defaults:", "  mode: request", "targets:"];
	for (let index = 1; index <= count; index += 1) lines.push(`  - ${site}/product/${index}`);
	return `${lines.join("\n")}\n`;
}

/** A job of two shop pages whose pages are kept and a field extracted (what a re-extraction reads), in a new folder. */
export function keptPagesShopJob(site: string): { dir: string; out: string; job: string } {
	const dir = tempDir();
	const job = writeJob(
		dir,
		"shop",
		shopJobYaml(site, 2, ["output: {content: files}", "extract:", "  name: {css: h1}"]),
	);
	return { dir, out: join(dir, "out"), job };
}
