import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { makeDirectory, writeFileAtomic } from "../common/index.js";
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

/** When a run folder's first session started (run.json's `created_at`), ms; null when unreadable. */
export function runStartedMs(dir: string): number | null {
	try {
		const meta = JSON.parse(readFileSync(join(dir, RUN_FILES.meta), "utf8")) as { created_at?: unknown };
		const at = typeof meta.created_at === "string" ? Date.parse(meta.created_at) : Number.NaN;
		return Number.isFinite(at) ? at : null;
	} catch {
		return null;
	}
}

export function jobOutputDir(outRoot: string, jobName: string): string {
	return join(outRoot, jobName);
}

/** Create `<out>/<job>/<run-id>/` and return its path. Fails if it exists: two runs never share a folder. */
export function createRunDir(outRoot: string, jobName: string, runId: string): string {
	const dir = join(outRoot, jobName, runId);
	try {
		makeDirectory(join(outRoot, jobName));
		mkdirSync(dir);
	} catch (error) {
		throw new OutputError(dir, error);
	}
	return dir;
}

/**
 * `sandbox.json` in a run folder: the run fetched through `--sandbox`, its demo site at `demo_site`. The
 * commands printed for the run's folder later (`merge`'s) need `--sandbox` to work as printed.
 */
export const SANDBOX_RUN_FILE = "sandbox.json";

export function writeSandboxRun(runDir: string, demoSite: string): void {
	const path = join(runDir, SANDBOX_RUN_FILE);
	try {
		writeFileAtomic(path, `${JSON.stringify({ demo_site: demoSite })}\n`);
	} catch (error) {
		throw new OutputError(path, error, "nothing was sent");
	}
}

/** The demo site address of a sandbox run's folder; null for a run against the service (or of an older version). */
export function readSandboxRun(runDir: string): string | null {
	try {
		const { demo_site } = JSON.parse(readFileSync(join(runDir, SANDBOX_RUN_FILE), "utf8")) as { demo_site?: unknown };
		return typeof demo_site === "string" ? demo_site : null;
	} catch {
		return null;
	}
}
