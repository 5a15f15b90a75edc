import { existsSync } from "node:fs";
import { join } from "node:path";
import { UsageError } from "../../common/index.js";
import { SHARD_SUFFIX_PATTERN } from "../../job/index.js";
import { RUN_FILES, runStartedMs } from "../../output/index.js";
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

interface ShardRun {
	readonly dir: string;
	readonly index: number;
	readonly count: number;
	/** When the run began (run.json) and ended (summary.json; still running or killed: not yet), ms. */
	readonly from: number;
	readonly to: number;
}

/** The newest run of each shard of the newest layout in job folder `jobDir`; null when it holds no shard's run. */
function newestShardRuns(jobDir: string): string[] | null {
	const shards = listRuns(jobDir)
		.flatMap((run): ShardRun[] => {
			const match = SHARD_SUFFIX_PATTERN.exec(run.runId);
			if (!match) return [];
			const from = runStartedMs(run.dir) ?? 0;
			const finished = run.summary ? Date.parse(run.summary.finished_at) : Number.NaN;
			const to = Number.isFinite(finished) ? finished : Number.POSITIVE_INFINITY;
			return [{ dir: run.dir, index: Number(match[1]), count: Number(match[2]), from, to }];
		})
		// Run ids sort by the second a run started; run.json's time tells two runs of one second apart.
		.sort((a, b) => b.from - a.from);
	const count = shards[0]?.count;
	if (count === undefined) return null;
	const layout = shards.filter((shard) => shard.count === count);
	const newest = new Map<number, ShardRun>();
	for (const shard of layout) if (!newest.has(shard.index)) newest.set(shard.index, shard);
	refuseMixedRounds(newest, layout);
	return [...newest.values()].map((shard) => shard.dir);
}

const overlap = (a: ShardRun, b: ShardRun) => a.from <= b.to && b.from <= a.to;

/**
 * A shard that missed the latest round (its pod never started) has as newest run one of an earlier
 * round: it ran beside an older run of another shard, not beside that shard's newest. Merged, one night's
 * records would pass for another's: refused, for the caller to name the folders.
 */
function refuseMixedRounds(newest: ReadonlyMap<number, ShardRun>, layout: readonly ShardRun[]): void {
	for (const chosen of newest.values()) {
		for (const other of newest.values()) {
			if (other.index === chosen.index || overlap(chosen, other)) continue;
			const older = layout.find((run) => run.index === other.index && run !== other && overlap(chosen, run));
			if (older === undefined) continue;
			throw new UsageError(
				`the newest run of shard ${chosen.index} of ${chosen.count}, ${chosen.dir}, ran beside ${older.dir}, an earlier run of shard ${other.index}, not beside its newest, ${other.dir}: shard ${chosen.index} has not run since. Run it (or give merge the run folders to merge by name)`,
			);
		}
	}
}
