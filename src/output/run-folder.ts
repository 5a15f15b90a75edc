import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { OutputError } from "./output-error.js";

/** Files of one run folder (docs/reference/outputs.md). */
export const RUN_FILES = {
	jsonl: "results.jsonl",
	csv: "results.csv",
	summary: "summary.json",
	log: "run.log",
	journal: "journal.jsonl",
	meta: "run.json",
} as const;

/**
 * A sortable, unique run id: UTC time to the second, then the millisecond and a random part, so run
 * ids sort by start time and two runs started in the same millisecond (even on different hosts sharing
 * the folder) almost never collide — and when they do, the folder is created exclusively and the
 * second run fails before sending anything.
 */
export function newRunId(now: Date = new Date()): string {
	const stamp = now
		.toISOString()
		.replace(/[-:]/g, "")
		.replace(/\.\d{3}Z$/, "Z");
	// The suffix starts with the millisecond (3 hex digits), then 3 random ones: run ids of one job sort
	// by time even within a second — "the newest run" (`--resume`, `--retry-failed`, the history's
	// order) was a coin toss between two runs started in the same second.
	const millisecond = now.getUTCMilliseconds().toString(16).padStart(3, "0");
	return `${stamp}-${millisecond}${randomBytes(2).toString("hex").slice(0, 3)}`;
}

export function jobOutputDir(outRoot: string, jobName: string): string {
	return join(outRoot, jobName);
}

/** Create `<out>/<job>/<run-id>/` and return its path. Fails if it exists: two runs never share a folder. */
export function createRunDir(outRoot: string, jobName: string, runId: string): string {
	const dir = join(outRoot, jobName, runId);
	try {
		mkdirSync(join(outRoot, jobName), { recursive: true });
		mkdirSync(dir);
	} catch (error) {
		throw new OutputError(dir, error);
	}
	return dir;
}
