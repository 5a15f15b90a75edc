import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { RUN_FILES, type RunSummary } from "../output/index.js";

/** One run folder of a job, as `listRuns` finds it. */
export interface RunInfo {
	readonly runId: string;
	readonly dir: string;
	/** False when the summary says so, or when there is none (the process died before writing it). */
	readonly complete: boolean;
	readonly summary: RunSummary | null;
}

/** Runs of one job in `<outRoot>/<job>/`, newest first (run ids sort by time). */
export function listRuns(jobDir: string): RunInfo[] {
	if (!existsSync(jobDir)) return [];
	return readdirSync(jobDir, { withFileTypes: true })
		.filter((entry) => entry.isDirectory() && existsSync(join(jobDir, entry.name, RUN_FILES.meta)))
		.map((entry) => {
			const dir = join(jobDir, entry.name);
			let summary: RunSummary | null = null;
			try {
				summary = JSON.parse(readFileSync(join(dir, RUN_FILES.summary), "utf8")) as RunSummary;
			} catch {
				summary = null;
			}
			return { runId: entry.name, dir, complete: summary?.complete === true, summary };
		})
		.sort((a, b) => (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0));
}
