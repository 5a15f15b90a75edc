import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SHARD_SUFFIX_PATTERN } from "../../job/index.js";
import { RUN_FILES } from "../../output/index.js";
import { listRuns } from "../records/find-runs.js";

/**
 * The run folders `merge` is given, with a job folder (`output/<job>`) taken as the newest run of each
 * shard of the job's newest layout: once a sharded job has run twice, `output/<job>/*-shard-*-of-N`
 * names every night's folders and is refused (the same shard twice), and the runs of one night have no
 * run id in common to pick them by.
 */
export function shardRunFolders(dirs: readonly string[]): string[] {
	return dirs.flatMap((dir) => (existsSync(join(dir, RUN_FILES.meta)) ? [dir] : (newestShardRuns(dir) ?? [dir])));
}

/** The newest run of each shard of the newest layout in job folder `jobDir`; null when it holds no shard's run. */
function newestShardRuns(jobDir: string): string[] | null {
	const shards = listRuns(jobDir)
		.flatMap((run) => {
			const match = SHARD_SUFFIX_PATTERN.exec(run.runId);
			return match ? [{ dir: run.dir, index: Number(match[1]), count: Number(match[2]), at: startedAt(run.dir) }] : [];
		})
		// Run ids sort by the second a run started; run.json's time tells two runs of one second apart.
		.sort((a, b) => b.at - a.at);
	const count = shards[0]?.count;
	if (count === undefined) return null;
	const newest = new Map<number, string>();
	for (const shard of shards) if (shard.count === count && !newest.has(shard.index)) newest.set(shard.index, shard.dir);
	return [...newest.values()];
}

function startedAt(dir: string): number {
	try {
		const meta = JSON.parse(readFileSync(join(dir, RUN_FILES.meta), "utf8")) as { created_at?: unknown };
		const at = typeof meta.created_at === "string" ? Date.parse(meta.created_at) : Number.NaN;
		return Number.isFinite(at) ? at : 0;
	} catch {
		return 0;
	}
}
