import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { OutputError } from "./output-error.js";

/** Files of one run folder (shared/design.md, "Output"). */
export const RUN_FILES = {
	jsonl: "results.jsonl",
	csv: "results.csv",
	summary: "summary.json",
	log: "run.log",
	journal: "journal.jsonl",
	meta: "run.json",
} as const;

/**
 * A sortable, unique run id: UTC time to the second plus a random suffix, so two runs started in the
 * same second (even on different hosts sharing the folder) never collide.
 */
export function newRunId(now: Date = new Date()): string {
	const stamp = now
		.toISOString()
		.replace(/[-:]/g, "")
		.replace(/\.\d{3}Z$/, "Z");
	return `${stamp}-${randomBytes(3).toString("hex")}`;
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
