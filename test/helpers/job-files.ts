import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import type { ResultRecord, RunSummary } from "../../src/output/index.js";

export function tempDir(prefix = "scrapejob-test-"): string {
	return mkdtempSync(join(tmpdir(), prefix));
}

/** Write a job file into `dir` and return its path. */
export function writeJob(dir: string, name: string, yaml: string): string {
	const path = join(dir, `${name}.yaml`);
	writeFileSync(path, yaml);
	return path;
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
